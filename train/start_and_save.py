"""Where the preference and reward objectives (DPO, GRPO) start and how they end.

    start = open_start(cfg)                 # dtype, output and checkpoint folders, start model and tokenizer
    ... train ...
    save_adapter_folder(trainer, start, start_prompt_spec(start.model_dir, "text"), meta, merge=True)

Both start from a model that may itself be tuned (the SFT model's merged folder) and end the same way: the
adapter's folder (weights, the prompt it answers to, the merged model, the metadata) is built beside the output
folder and swapped in only once complete, so a crash leaves the old one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.agent.prompt_spec import PromptSpec, find_prompt_spec, load_prompt_spec, save_prompt_spec
from actune.records.atomic_write import recover_folder, replace_folder
from actune.runtime.model_files import prepare_model
from actune.runtime.provenance import provenance
from actune.train.common import MERGED_DIR, TrainError, merge_adapter, resolve_dtype
from actune.train.config import TrainConfig

__all__ = ["Start", "open_start", "recipe_args", "save_adapter_folder", "start_prompt_spec", "trl_args"]


@dataclass
class Start:
    dtype: str
    out: Path
    ckpt_dir: Path
    """``<output_dir>.checkpoints``: where TRL writes checkpoints while training runs."""
    model_dir: Path
    """The start model's local folder."""
    tokenizer: Any


def open_start(cfg: TrainConfig) -> Start:
    """Resolve the dtype and folders, finish an interrupted swap of the output folder, fetch the start model."""
    from transformers import AutoTokenizer

    out = Path(cfg.output_dir)
    recover_folder(out)
    model_dir = prepare_model(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return Start(resolve_dtype(cfg.dtype), out, out.parent / f"{out.name}.checkpoints", model_dir, tokenizer)


def recipe_args(cfg: TrainConfig, dtype: str, ckpt_dir: Path) -> dict[str, Any]:
    """The TRL trainer settings every objective takes from actune's recipe keys."""
    import torch

    return dict(
        output_dir=str(ckpt_dir), learning_rate=cfg.learning_rate, lr_scheduler_type="cosine",
        warmup_steps=float(cfg.warmup_ratio), num_train_epochs=cfg.num_train_epochs, max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        gradient_checkpointing=cfg.gradient_checkpointing, bf16=dtype == "bfloat16", seed=cfg.seed,
        data_seed=cfg.seed, logging_steps=cfg.logging_steps, save_total_limit=2, report_to="none",
        use_cpu=not torch.cuda.is_available(),
    )


def trl_args(config_class: type, ours: dict[str, Any], theirs: dict[str, Any], key: str) -> Any:
    """``config_class(**ours)`` with the user's ``key`` settings on top, checked by TRL itself."""
    try:
        return config_class(**{**ours, **theirs})
    except (TypeError, ValueError) as e:

        raise TrainError(f"trl.{config_class.__name__} refused the trainer settings ({key} on top of actune's): "
                         f"{e}") from e


def start_prompt_spec(model_dir: Path, wire: str, method: str = "react") -> PromptSpec:
    """The prompt the start model answers to: a tuned model's own spec; a base model: ``method``, zero-shot, as
    trained."""
    found = find_prompt_spec(model_dir)
    return load_prompt_spec(found) if found else PromptSpec(method=method, regime="zero_shot", wire=wire)


def save_adapter_folder(trainer: Any, start: Start, spec: PromptSpec, meta: dict[str, Any], *, merge: bool) -> None:

    out, model_dir, tokenizer, dtype = start.out, start.model_dir, start.tokenizer, start.dtype
    # one training loss a logged step, as SFT's meta has them (bench/faults.py counts the steps by them)
    meta.setdefault("losses", [float(h["loss"]) for h in trainer.state.log_history if "loss" in h])
    meta.setdefault("provenance", provenance(dtype))
    tmp = out.parent / f".{out.name}.new"
    trainer.save_model(str(tmp))
    (tmp / "training_args.bin").unlink(missing_ok=True)
    save_prompt_spec(spec, tmp)
    if merge:
        merge_adapter(model_dir, tmp, tmp / MERGED_DIR, dtype)
        tokenizer.save_pretrained(str(tmp / MERGED_DIR))
        save_prompt_spec(spec, tmp / MERGED_DIR)
    (tmp / "training_meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    replace_folder(tmp, out)
