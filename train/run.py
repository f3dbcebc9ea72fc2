"""The train stage: LoRA-fine-tune a base model on an exported dataset with TRL's SFTTrainer.

    result = train(TrainConfig(dataset=Path("runs/dataset"), output_dir=Path("runs/adapter")))

The recipe, in order:

1. ``prepare_model(cfg.base_model)``: a local Hugging Face folder (the embedded model is built once).
2. Load the exported dataset (``actune export``) and check its wire format is ``cfg.wire_format``.
3. Tokenise and mask every example (:mod:`actune.train.masking`): ``input_ids`` + ``labels`` with -100
   on the prompt head and observations (text) or on everything but assistant turns (chat).
4. TRL ``SFTTrainer`` with a PEFT ``LoraConfig`` from ``cfg.lora``. SFTTrainer takes pre-tokenised
   examples with a ``labels`` column as they are (TRL 1.16: it only truncates to ``max_length`` and
   drops examples left without a trained token), so the masks are exactly ours.
5. Save the adapter, ``actune_prompt.json`` (method, zero-shot regime, wire format: how eval must
   prompt the tuned model) and ``training_meta.json`` (config, sizes, token counts, losses) into a temp
   folder, then rename it to ``cfg.output_dir``: the folder is complete or absent.

Checkpoints go to ``<output_dir>.checkpoints`` every ``cfg.save_steps`` steps; a rerun resumes from
the last one and removes the folder once the adapter is saved.

Several GPUs: ``accelerate launch --config_file ACCEL.yaml -m actune train CONFIG`` (the Trainer picks
up the distributed setup from the launcher; the effective batch is batch x accumulation x devices).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.atomic_write import atomic_write_text
from actune.train.config import TrainConfig

__all__ = ["TrainError", "TrainResult", "train", "tokenize_dataset", "TRAINING_META_FILE"]

TRAINING_META_FILE = "training_meta.json"


class TrainError(RuntimeError):
    """Training cannot start (missing or mismatched dataset, nothing to train on)."""


@dataclass
class TrainResult:
    output_dir: Path
    examples: int
    steps: int
    final_loss: float
    tokens: int
    trained_tokens: int
    truncated: int
    losses: list[float] = field(default_factory=list)

    @property
    def masked_fraction(self) -> float:
        return 1.0 - self.trained_tokens / self.tokens if self.tokens else 0.0


def _load_dataset(cfg: TrainConfig) -> Any:
    from datasets import load_from_disk

    if not Path(cfg.dataset).is_dir():
        raise TrainError(f"{cfg.dataset}: dataset not found (run `actune export` first)")
    ds = load_from_disk(str(cfg.dataset), keep_in_memory=True)  # no cache files in the dataset folder
    if len(ds) == 0:
        raise TrainError(f"{cfg.dataset}: the dataset is empty")
    wires = set(ds["wire"]) if "wire" in ds.column_names else set()
    if wires != {cfg.wire_format}:
        raise TrainError(f"{cfg.dataset}: dataset wire format is {sorted(wires) or 'unknown'}, but "
                         f"train.wire_format is {cfg.wire_format!r}; re-export with the same wire format")
    return ds


def _steps_method(ds: Any, cfg: TrainConfig) -> str:
    methods = sorted(set(ds["steps_method"]))
    if len(methods) != 1:
        raise TrainError(f"{cfg.dataset}: examples are in several step formats {methods}; a model is trained "
                         "on one method's format (export one method's store)")
    return methods[0]


def tokenize_dataset(ds: Any, tokenizer: Any, cfg: TrainConfig) -> Any:
    """``ds`` with ``input_ids``, ``labels`` and per-example counts (tokens, trained, truncated, straddling)."""
    from actune.train.masking import tokenize_messages, tokenize_segments

    def encode(ex: dict[str, Any]) -> dict[str, Any]:
        if cfg.wire_format == "text":
            enc = tokenize_segments(tokenizer, ex["segments"], cfg.max_length, mask=cfg.mask_observations)
        else:
            enc = tokenize_messages(tokenizer, ex["messages"], cfg.max_length, mask=cfg.mask_observations)
        return {"input_ids": enc.input_ids, "labels": enc.labels, "n_tokens": len(enc.input_ids),
                "n_trained": enc.trained_tokens, "truncated": enc.truncated, "straddling": enc.straddling}

    return ds.map(encode, remove_columns=ds.column_names, desc="Tokenising and masking")


def _replace_dir(tmp: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _last_checkpoint(folder: Path) -> str | None:
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return str(max(found, key=lambda p: int(p.name.split("-")[-1]))) if found else None


def train(cfg: TrainConfig, *, log: Callable[[str], None] = print) -> TrainResult:
    """Run the recipe (module docstring) and return what it did; the adapter lands in ``cfg.output_dir``."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from actune.models import prepare_model

    t0 = time.perf_counter()
    ds = _load_dataset(cfg)
    method = _steps_method(ds, cfg)
    model_dir = prepare_model(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenized = tokenize_dataset(ds, tokenizer, cfg)
    tokens = sum(tokenized["n_tokens"])
    trained = sum(tokenized["n_trained"])
    truncated = sum(bool(x) for x in tokenized["truncated"])
    if trained == 0:
        raise TrainError(f"{cfg.dataset}: no trained tokens left after masking and truncation to "
                         f"{cfg.max_length} tokens")
    log(f"train: {len(ds)} examples, {tokens} tokens, {trained} trained "
        f"({1 - trained / tokens:.1%} masked), {truncated} truncated to {cfg.max_length} tokens")
    train_ds = tokenized.select_columns(["input_ids", "labels"])

    dtype = torch.bfloat16 if cfg.bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype)
    lora = LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=cfg.lora.target_modules, task_type="CAUSAL_LM")
    out = Path(cfg.output_dir)
    ckpt_dir = out.parent / f"{out.name}.checkpoints"
    args = SFTConfig(
        output_dir=str(ckpt_dir), learning_rate=cfg.learning_rate, lr_scheduler_type="cosine",
        warmup_steps=float(cfg.warmup_ratio), num_train_epochs=cfg.num_train_epochs, max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps, max_length=cfg.max_length,
        packing=cfg.packing, bf16=cfg.bf16, seed=cfg.seed, data_seed=cfg.seed, logging_steps=cfg.logging_steps,
        save_steps=cfg.save_steps, save_total_limit=2, report_to="none", dataset_num_proc=None,
        use_cpu=not torch.cuda.is_available(),
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=train_ds, processing_class=tokenizer,
                         peft_config=lora)
    resume = _last_checkpoint(ckpt_dir)
    if resume:
        log(f"train: resuming from {resume}")
    result = trainer.train(resume_from_checkpoint=resume)
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    final_loss = losses[-1] if losses else float(result.training_loss)
    if not math.isfinite(final_loss):
        raise TrainError(f"training diverged: final loss {final_loss}")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        trainer.model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        save_prompt_spec(PromptSpec(method=method, regime="zero_shot", wire=cfg.wire_format), tmp)
        res = TrainResult(out, len(ds), int(trainer.state.global_step), final_loss, tokens, trained, truncated,
                          losses)
        meta = {
            "config": cfg.model_dump(mode="json"),
            "base_model_path": str(model_dir),
            "method": method,
            "examples": res.examples,
            "steps": res.steps,
            "final_loss": res.final_loss,
            "training_loss": float(result.training_loss),
            "losses": losses,
            "tokens": tokens,
            "trained_tokens": trained,
            "masked_fraction": res.masked_fraction,
            "truncated_examples": truncated,
            "straddling_tokens": sum(tokenized["straddling"]),
            "wall_s": time.perf_counter() - t0,
        }
        atomic_write_text(tmp / TRAINING_META_FILE, json.dumps(meta, indent=2) + "\n")
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    log(f"train: adapter saved to {out} ({res.steps} steps, final loss {final_loss:.4f}, "
        f"{time.perf_counter() - t0:.0f} s)")
    return res


def result_dict(res: TrainResult) -> dict[str, Any]:
    d = asdict(res)
    d["output_dir"] = str(res.output_dir)
    d["masked_fraction"] = res.masked_fraction
    return d
