"""Training speed on a GPU: ``actune train``'s trainer path beside a plain TRL ``SFTTrainer``, tokens/s and MFU.

    python bench/train_gpu.py                                   # SmolLM2-135M's shape, random init, bf16
    python bench/train_gpu.py --shape qwen0.5b --batch-size 16 --steps 30
    python bench/train_gpu.py --model /path/to/Qwen2.5-0.5B-Instruct   # real weights and tokenizer
    python bench/train_gpu.py --device cpu --steps 2 --shape tiny      # a smoke test in seconds

Needs PyTorch, transformers, PEFT, accelerate and TRL (which brings ``datasets``) and this repository's
``train/speed.py`` (loaded by its path when actune is not installed): no vLLM, no network. Without
``--model`` the model is a random-init one of the chosen shape with a word-level tokenizer of its vocabulary
size (speed does not depend on the weights).

Data: synthetic agent trajectories of random tokens: an untrained prompt, then trained steps (thought +
action) between untrained observations, lengths drawn from ``--min-length..--max-length``; the same examples,
masks, batches and order for both paths.

- **actune**: what ``actune train`` runs: padding-free batches (TRL's collator) attended example by example
  (``speed.VARLEN_SDPA``, or ``--attn flash_attention_2``), the exactness check, ``ActuneSFTTrainer`` with the
  loss head of ``--loss-head`` (auto: TRL's on GPU, the trained positions only on CPU) and LoRA dropout masks
  as ``actune train`` draws them (torch's on GPU, geometric gaps on CPU).
- **trl**: ``SFTTrainer`` with TRL's defaults: padded batches, SDPA, its fused LM head and metrics.

Both: LoRA r=16 on all linear layers, the same learning rate, seed and dtype, ``gradient_checkpointing``
off (actune's setting; ``--gradient-checkpointing`` turns it on for both), no evaluation or checkpoints.
Step 1 is a warm-up and is not counted. MFU = 6 x parameters x tokens / time / peak FLOPS (the usual
convention; a LoRA step does about 4 x parameters x tokens, as the frozen weights get no gradient), peak
from ``--peak-tflops`` or the table below for the GPU's dense bf16 peak.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from train_speed import step_clock, timed_train

REPO = Path(__file__).resolve().parents[1]
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100 PCIe": 756.0, "H100 NVL": 835.0, "H100": 989.0, "GH200": 989.0,
                    "A100": 312.0, "L40S": 362.0}
"""Dense bf16 tensor-core peaks (vendor data sheets, without sparsity); the first name found in the device
name wins (so ``H100 PCIe`` before ``H100``)."""
SHAPES = {
    # SmolLM2-135M: LlamaForCausalLM
    "smollm2": ("llama", dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                              num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                              rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)),
    # Qwen2.5-0.5B: Qwen2ForCausalLM
    "qwen0.5b": ("qwen2", dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                               num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                               rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)),
    "tiny": ("llama", dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)),
}


def load_speed() -> Any:
    """actune's ``train/speed.py``: the installed one, else this checkout's file."""
    try:
        from actune.train import speed
        return speed
    except ImportError:
        spec = importlib.util.spec_from_file_location("actune_train_speed", REPO / "train" / "speed.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


def word_tokenizer(vocab_size: int) -> Any:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab_size)}, unk_token="t0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0", eos_token="t1")


def trajectories(n: int, vocab: int, min_length: int, max_length: int, seed: int) -> list[dict[str, list[int]]]:
    """Agent-shaped examples of random tokens: an untrained prompt (a quarter to a third of the length), then
    trained steps of 20-60 tokens between untrained observations of 40-150 (the trajectory data's shape)."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.randint(min_length, max_length)
        ids = [rng.randrange(2, vocab) for _ in range(length)]
        labels = [-100] * length
        pos = rng.randint(length // 4, length // 3)
        while pos < length:
            step = rng.randint(20, 60)
            labels[pos:pos + step] = ids[pos:pos + step]
            pos += step + rng.randint(40, 150)
        out.append({"input_ids": ids, "labels": labels[:length]})
    return out


def build_model(args: argparse.Namespace, dtype: Any, attn: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    if args.model:
        return AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation=attn)
    kind, shape = SHAPES[args.shape]
    cls, config = {"llama": (LlamaForCausalLM, LlamaConfig), "qwen2": (Qwen2ForCausalLM, Qwen2Config)}[kind]
    torch.manual_seed(args.seed)
    return cls(config(**shape, attn_implementation=attn)).to(dtype)


def run_path(path: str, args: argparse.Namespace, speed: Any, examples: list[dict], tokenizer: Any) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    cuda = args.device == "cuda"
    dtype = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    free = path == "actune"
    attn = (args.attn or speed.register_varlen_sdpa()) if free else "sdpa"
    model = build_model(args, dtype, attn)
    params = sum(p.numel() for p in model.parameters())
    check = ("passed" if speed.padding_free_matches_padded(model) else "FAILED") if free else None
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    sft = SFTConfig(output_dir=str(Path(args.out) / path), per_device_train_batch_size=args.batch_size,
                    max_length=None if free else args.max_length, padding_free=free, learning_rate=2e-4,
                    bf16=dtype == torch.bfloat16, gradient_checkpointing=args.gradient_checkpointing,
                    seed=args.seed, data_seed=args.seed, max_steps=args.steps, logging_steps=1,
                    save_strategy="no", report_to="none", use_cpu=not cuda, dataloader_num_workers=0)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM")
    clock = step_clock(torch.cuda.synchronize if cuda else None)
    common = dict(model=model, args=sft, train_dataset=Dataset.from_list(examples), processing_class=tokenizer,
                  peft_config=lora, callbacks=[clock])
    if free:
        device_type = "cuda" if cuda else "cpu"
        head = speed.resolve_loss_head(args.loss_head, device_type)
        masks = speed.resolve_dropout_masks("auto", device_type)
        trainer = speed.ActuneSFTTrainer(**common, loss_head=head, dropout_masks=masks)
    else:
        head, masks, trainer = "trl", "torch", SFTTrainer(**common)
    tokens, wall, steps = timed_train(trainer, clock)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    peak = peak_tflops(args) if cuda or args.peak_tflops else None
    out = {"tokens_s": tokens / wall, "step_s": wall / steps, "tokens": tokens, "params": params,
           "mfu": 6 * params * tokens / wall / (peak * 1e12) if peak else None,
           "peak_mem_gb": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
           "first_loss": losses[0] if losses else None, "attention": attn, "loss_head": head,
           "dropout_masks": masks, "padding_free": free, "padding_free_check": check}
    del trainer, model
    if cuda:
        torch.cuda.empty_cache()
    return out


def peak_tflops(args: argparse.Namespace) -> float | None:
    if args.peak_tflops:
        return args.peak_tflops
    import torch

    if args.dtype != "bfloat16" or not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name(0)
    return next((v for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def device_line(args: argparse.Namespace) -> str:
    import platform

    import torch

    if args.device == "cuda":
        return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}"
    try:
        from actune.runtime.cpu_features import describe_cpu
        cpu = describe_cpu()
    except ImportError:
        cpu = platform.processor() or platform.machine()
    return f"CPU {cpu} ({torch.get_num_threads()} torch threads), torch {torch.__version__}"


def table(args: argparse.Namespace, results: dict[str, dict]) -> str:
    a, t = results["actune"], results["trl"]

    def fmt(x: Any, spec: str, scale: float = 1.0, unit: str = "") -> str:
        return "n/a" if x is None else format(x * scale, spec) + unit

    what = args.model or f"random-init {args.shape} shape"
    lines = [f"Device: {device_line(args)}",
             f"Model: {what} ({a['params'] / 1e6:.1f}M parameters), {args.dtype}, LoRA r=16 all-linear; "
             f"{args.steps} steps of batch {args.batch_size}, lengths {args.min_length}-{args.max_length}, "
             "step 1 not counted",
             f"actune: padding-free ({a['attention']} attention, check {a['padding_free_check']}), "
             f"loss head {a['loss_head']}, LoRA dropout masks {a['dropout_masks']}; TRL: padded, sdpa, its loss "
             "head, torch's dropout", "",
             "| | actune train | plain TRL | actune / TRL |", "|---|---|---|---|",
             f"| tokens/s | {a['tokens_s']:,.0f} | {t['tokens_s']:,.0f} | {a['tokens_s'] / t['tokens_s']:.2f}x |",
             f"| step (s) | {a['step_s']:.3f} | {t['step_s']:.3f} | |",
             f"| MFU (6 N T / t / peak) | {fmt(a['mfu'], '.1f', 100, '%')} | {fmt(t['mfu'], '.1f', 100, '%')} | |",
             f"| peak GPU memory (GiB) | {fmt(a['peak_mem_gb'], '.1f')} | {fmt(t['peak_mem_gb'], '.1f')} | |",
             f"| first-step loss | {fmt(a['first_loss'], '.4f')} | {fmt(t['first_loss'], '.4f')} | |",
             f"| tokens counted | {a['tokens']} | {t['tokens']} | |"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shape", choices=list(SHAPES), default="smollm2", help="random-init model shape")
    ap.add_argument("--model", help="a model folder or id with weights and tokenizer (instead of --shape)")
    ap.add_argument("--dtype", choices=["bfloat16", "float32"], help="default: bfloat16 on GPU, float32 on CPU")
    ap.add_argument("--steps", type=int, default=20, help="optimizer steps per path (step 1 not counted)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--min-length", type=int, help="shortest trajectory (default: 400; tiny: 24)")
    ap.add_argument("--max-length", type=int, help="longest trajectory (default: 1500; tiny: 64)")
    ap.add_argument("--loss-head", choices=["auto", "trained", "trl"], default="auto")
    ap.add_argument("--attn", help="actune path's attention (e.g. flash_attention_2; default: actune's varlen SDPA)")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--peak-tflops", type=float, help="the device's peak for MFU (default: table, bf16 GPUs)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/actune-train-gpu", help="trainer output folder (nothing is saved)")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    tiny = args.shape == "tiny" and not args.model
    args.min_length = args.min_length or (24 if tiny else 400)
    args.max_length = args.max_length or (64 if tiny else 1500)
    args.dtype = args.dtype or ("bfloat16" if args.device == "cuda" else "float32")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("no CUDA device: use --device cpu")

    speed = load_speed()
    if args.device == "cpu":
        speed.set_torch_threads(0)
    if args.model:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.model)
        vocab = len(tokenizer)
    else:
        vocab = SHAPES[args.shape][1]["vocab_size"]
        tokenizer = word_tokenizer(vocab)
    n = max(args.batch_size * args.steps, 1)
    examples = trajectories(n, vocab, args.min_length, args.max_length, args.seed)
    results = {path: run_path(path, args, speed, examples, tokenizer) for path in ("trl", "actune")}
    print(table(args, results))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), **results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
