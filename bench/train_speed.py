"""Training speed: ``actune train``'s trainer beside a plain TRL ``SFTTrainer`` on the same examples and masks.

    .venv/bin/python bench/train_speed.py runs/full-seed2/react/round1/dataset --steps 8
    .venv/bin/python bench/train_speed.py DATASET --config configs/smollm2-cpu.yaml train.lora.dropout=0

    from train_speed import measure_train_speed        # with bench/ on sys.path (bench/pipeline.py)
    figures = measure_train_speed("runs/dataset", steps=8)
    figures["actune"]["tokens_s"], figures["trl"]["tokens_s"], figures["ratio"]

Both trainers train on the examples of an ``actune export`` folder tokenised and masked by actune
(``input_ids`` + ``labels``, every example with a trained token), from the same base model, in the same
dtype, with the same LoRA, batch size, learning rate and seed, so they see the same batches in the same
order (the train config's; default: ``TrainConfig()``, the recipe's defaults). No dev slice, no
checkpoints, no packing.

- **actune**: the trainer ``actune train`` builds (:func:`actune.train.sft.make_trainer` with
  :func:`actune.train.sft.sft_args`, torch threads as ``actune train`` sets them): padding-free batches,
  the loss on the trained positions only, LoRA dropout masks from geometric gaps on CPU (the same dropout
  in distribution, another random stream: the first-step losses differ in the last digits).
- **TRL**: ``SFTTrainer`` with TRL's defaults (padded batches, its fused LM head with its entropy and
  token-accuracy metrics) except the shared settings above and ``gradient_checkpointing=False``, the value
  actune uses (TRL's default recomputes the activations: about a third more compute a step, which would
  flatter the ratio).

Each trainer runs in a process of its own (its own peak memory, nothing cached from the other). The first
step is a warm-up and is not counted: tokens/s is the tokens (padding excluded) of steps 2..N divided by
their wall time, from the end of step 1 to the end of step N (data, forward, backward, optimizer, logs).
Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PATHS = ("actune", "trl")


def measure_train_speed(dataset_dir: str | Path, steps: int = 8, *, config: str | Path | None = None,
                        overrides: list[str] | None = None) -> dict[str, Any]:
    """Run ``steps`` optimizer steps of each trainer on ``dataset_dir`` (an ``actune export`` folder) and
    return the figures (JSON-ready).

    ``config``/``overrides``: a run config's ``train`` section and ``train.key=value`` overrides (default:
    the recipe's defaults). Returns ``{"machine", "dataset", "steps", "batch_size", "dtype",
    "actune": {...}, "trl": {...}, "ratio"}``; each path's dict holds ``tokens_s``, ``step_s`` (mean
    wall time of steps 2..N), ``tokens`` (counted), ``peak_rss_mb``, ``first_loss`` and ``torch_threads``
    (actune's also ``settings``: padding-free, attention, loss head); ``ratio`` is actune / TRL tokens/s."""
    cfg = _train_config(dataset_dir, steps, config, overrides)
    out: dict[str, Any] = {"dataset": str(dataset_dir), "steps": steps}
    for path in PATHS:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", path,
                               "--config-json", cfg.model_dump_json()],
                              stdout=subprocess.PIPE, text=True, check=True)
        out[path] = json.loads(proc.stdout.strip().splitlines()[-1])
    a = out["actune"]
    out.update(machine=a.pop("machine"), batch_size=a.pop("batch_size"), dtype=a.pop("dtype"))
    for key in ("machine", "batch_size", "dtype"):
        out["trl"].pop(key)
    out["ratio"] = round(a["tokens_s"] / out["trl"]["tokens_s"], 3) if out["trl"]["tokens_s"] else None
    return out


def _train_config(dataset_dir: str | Path, steps: int, config: str | Path | None, overrides: list[str] | None):
    from datasets import load_from_disk

    from actune.config import load_config
    from actune.train.config import TrainConfig

    cfg = load_config(TrainConfig, config, [o.removeprefix("train.") for o in overrides or []], section="train")
    ds = load_from_disk(str(dataset_dir))
    wire = ds[0].get("wire", cfg.wire_format) if len(ds) else cfg.wire_format
    return cfg.model_copy(update={"dataset": Path(dataset_dir), "wire_format": wire, "max_steps": steps,
                                  "eval_fraction": 0.0, "save_steps": 10**9, "logging_steps": 1})


class CountingCollator:
    """The trainer's collator, counting the tokens (padding excluded) of each batch it builds, in order."""

    def __init__(self, collator: Any) -> None:
        self.collator, self.tokens = collator, []

    def __call__(self, examples: list[dict[str, Any]]) -> Any:
        self.tokens.append(sum(len(e["input_ids"]) for e in examples))
        return self.collator(examples)


def step_clock(sync: Any = None) -> Any:
    """A ``TrainerCallback`` that records ``time.perf_counter()`` at the end of every optimizer step in its
    ``ends`` (after ``sync()``, e.g. ``torch.cuda.synchronize``)."""
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.ends: list[float] = []

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if sync is not None:
                sync()
            self.ends.append(time.perf_counter())

    return StepClock()


def timed_train(trainer: Any, clock: Any) -> tuple[int, float, int]:
    """Train with the clock among the callbacks and the collator counting; return ``(tokens, seconds,
    steps)`` of steps 2..N (step 1 is a warm-up)."""
    counter = CountingCollator(trainer.data_collator)
    trainer.data_collator = counter  # the dataloader is built when training starts
    trainer.train()
    n = len(clock.ends)
    if n < 2:
        raise RuntimeError("run at least 2 steps: the first one is a warm-up and is not counted")
    return sum(counter.tokens[1:n]), clock.ends[-1] - clock.ends[0], n - 1


def _one(path: str, config_json: str) -> dict[str, Any]:
    """One trainer, ``cfg.max_steps`` steps; the figures of :func:`measure_train_speed` for it."""
    import torch
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from actune.runtime import cpu_features
    from actune.runtime.model_files import prepare_model
    from actune.train.common import resolve_dtype
    from actune.train.config import TrainConfig
    from actune.train.sft import make_trainer, sft_args, tokenize_dataset
    from actune.train.speed import set_torch_threads

    cfg = TrainConfig.model_validate_json(config_json)
    dtype = resolve_dtype(cfg.dtype)
    model_dir = prepare_model(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenized = tokenize_dataset(load_from_disk(str(cfg.dataset), keep_in_memory=True), tokenizer, cfg)
    keep = [i for i, n in enumerate(tokenized["n_trained"]) if n > 0]
    train_ds = tokenized.select(keep).select_columns(["input_ids", "labels"])

    clock = step_clock()
    settings: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if path == "actune":
            args = sft_args(cfg, dtype, Path(tmp))
            threads = set_torch_threads(cfg.torch_threads) if args.device.type == "cpu" else None
            trainer, settings = make_trainer(cfg, args, dtype, model_dir, tokenizer, train_ds, callbacks=[clock])
        else:
            from transformers import AutoModelForCausalLM
            from trl import SFTConfig, SFTTrainer

            args = SFTConfig(output_dir=tmp, per_device_train_batch_size=cfg.per_device_train_batch_size,
                             max_length=cfg.max_length, learning_rate=cfg.learning_rate, bf16=dtype == "bfloat16",
                             gradient_checkpointing=False, seed=cfg.seed, data_seed=cfg.seed,
                             max_steps=cfg.max_steps, logging_steps=1, save_strategy="no", report_to="none",
                             use_cpu=not torch.cuda.is_available())
            threads = torch.get_num_threads() if args.device.type == "cpu" else None
            model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype))
            lora = cfg.lora.peft_config()
            trainer = SFTTrainer(model=model, args=args, train_dataset=train_ds, processing_class=tokenizer,
                                 peft_config=lora, callbacks=[clock])
        tokens, wall, steps = timed_train(trainer, clock)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    figures = {"tokens_s": round(tokens / wall, 1), "step_s": round(wall / steps, 2), "tokens": tokens,
               "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               "first_loss": round(losses[0], 4) if losses else None, "torch_threads": threads,
               "machine": cpu_features.describe_cpu(), "batch_size": cfg.per_device_train_batch_size, "dtype": dtype}
    if settings:
        figures["settings"] = settings
    return figures


def table(f: dict[str, Any]) -> str:
    rows = [("", "actune train", "plain TRL", "actune / TRL")]
    a, t = f["actune"], f["trl"]
    rows.append(("tokens/s", str(a["tokens_s"]), str(t["tokens_s"]), f"{f['ratio']}x"))
    rows.append(("step (s)", str(a["step_s"]), str(t["step_s"]), ""))
    rows.append(("tokens counted", str(a["tokens"]), str(t["tokens"]), ""))
    rows.append(("first-step loss", str(a["first_loss"]), str(t["first_loss"]), ""))
    rows.append(("peak RSS (MB)", str(a["peak_rss_mb"]), str(t["peak_rss_mb"]), ""))
    rows.append(("torch threads", str(a["torch_threads"]), str(t["torch_threads"]), ""))
    lines = [f"Machine: {f['machine']}",
             f"Data: {f['dataset']}; {f['steps']} steps of batch {f['batch_size']} ({f['dtype']}), step 1 not counted",
             f"actune: {json.dumps(a.get('settings', {}))}", "",
             "| " + " | ".join(rows[0]) + " |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", nargs="?", help="an `actune export` folder")
    ap.add_argument("overrides", nargs="*", help="train.key=value overrides of the train config")
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps of each trainer (the first is not counted)")
    ap.add_argument("--config", help="a run config whose train section to use (default: the recipe's defaults)")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--one", choices=PATHS, help=argparse.SUPPRESS)
    ap.add_argument("--config-json", help=argparse.SUPPRESS)
    args = ap.parse_intermixed_args(argv)
    if args.one:
        print(json.dumps(_one(args.one, args.config_json)), flush=True)
        return 0
    if not args.dataset:
        ap.error("the dataset folder is required")
    figures = measure_train_speed(args.dataset, args.steps, config=args.config, overrides=args.overrides)
    print(table(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    # here, not at the top: bench/train_gpu.py imports this module on a GPU machine without actune installed
    from actune.runtime.stop_signals import run_script

    run_script(main)
