"""What every training objective shares (SFT in :mod:`actune.train.sft`, DPO in :mod:`actune.train.dpo`, GRPO
in :mod:`actune.train.grpo`): the error a stage reports, the dtype, where a run starts (the start model, its
tokenizer, the output and checkpoint folders), the model loading, the trainer settings taken from the recipe keys,
the dev slice by task, the step count, the merge and the names of the files an adapter folder holds. How each
objective ends, the one save path, is :mod:`actune.train.saving`.

    start = open_start(cfg)                 # dtype, output and checkpoint folders, start model and tokenizer
    args = trl_args(DPOConfig, recipe_args(cfg, start.dtype, start.ckpt_dir), cfg.dpo.trl_settings(), "train.dpo")
    model = load_model(start.model_dir, start.dtype)

Light on purpose: importing it loads no torch or TRL (the functions that need them import them when called), so
the CLI, the cards and the quickstart name these without the training stack.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.records.atomic_write import check_not_an_input, recover_folder
from actune.runtime import cpu_features
from actune.runtime.model_files import prepare_model
from actune.train.config import TrainConfig

__all__ = ["MERGED_DIR", "TRAINING_META_FILE", "Start", "TrainError", "check_output_dir", "checkpoints_dir",
           "dev_task_ids", "hardware_line", "load_model", "logged_losses", "merge_adapter", "open_start", "recipe_args",
           "resolve_dtype", "split_by_task", "steps_per_epoch", "trl_args"]

MERGED_DIR = "merged"
"""The adapter folder's sub-folder holding base + adapter as one plain model (``train.merge``)."""
TRAINING_META_FILE = "training_meta.json"
"""The adapter folder's record of its training: config, sizes, token counts, losses."""


class TrainError(RuntimeError):
    """Training cannot start (missing or mismatched dataset, nothing to train on)."""


def dev_task_ids(task_ids: list[str], fraction: float, seed: int) -> list[str]:
    """The task ids held out as the dev slice, sorted: ``round(fraction x tasks)`` of the distinct ids
    (at least one, and never all), drawn by a ``seed``-ed shuffle of the sorted ids, so the same
    dataset and seed always give the same slice whatever the example order."""
    if fraction <= 0:
        return []
    tasks = sorted(set(task_ids))
    if len(tasks) < 2:
        raise TrainError(f"a dev slice needs at least 2 tasks, the dataset has {len(tasks)}; "
                         "set train.eval_fraction=0 to train without one")
    n_dev = min(max(1, math.floor(fraction * len(tasks) + 0.5)), len(tasks) - 1)
    random.Random(seed).shuffle(tasks)
    return sorted(tasks[:n_dev])


def split_by_task(task_ids: list[str], fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Example indices ``(train, dev)`` for examples of the given task ids: the dev part holds every
    example of :func:`dev_task_ids`, so no task is on both sides."""
    dev = set(dev_task_ids(task_ids, fraction, seed))
    return [i for i, t in enumerate(task_ids) if t not in dev], [i for i, t in enumerate(task_ids) if t in dev]


def resolve_dtype(setting: str) -> str:
    """``bfloat16`` or ``float32`` for a ``TrainConfig.dtype`` setting; ``auto``: bfloat16 where the
    hardware computes it natively (a GPU that supports it, a CPU with AVX512-BF16 or AMX), else float32
    (emulated bf16 on an AVX2-only CPU trained about 10x slower than float32)."""
    if setting != "auto":
        return setting
    import torch

    if torch.cuda.is_available():
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if cpu_features.native_bf16() else "float32"


def hardware_line(dtype: str, setting: str) -> str:
    """The progress line saying the dtype and the hardware it trains on."""
    import torch

    where = f"CPU: {cpu_features.describe_cpu()}"
    if torch.cuda.is_available():
        where = f"GPU: {torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}; {where}"
    return f"train: dtype {dtype} ({setting}); {where}"


def steps_per_epoch(n_examples: int, args: Any) -> int:
    # As the Trainer counts them (set_initial_training_values): batches per process, then updates.
    batches = math.ceil(n_examples / (args.per_device_train_batch_size * max(1, args.world_size)))
    return max(1, math.ceil(batches / args.gradient_accumulation_steps))


def checkpoints_dir(out: Path) -> Path:
    """``<output_dir>.checkpoints``: where TRL writes checkpoints while training runs (and the adapter folder is
    assembled before it becomes ``output_dir``)."""
    return out.parent / f"{out.name}.checkpoints"


def check_output_dir(cfg: TrainConfig) -> None:
    """Refuse (:class:`TrainError`) an ``output_dir`` that is, holds or lies inside an input (the dataset, a local
    start model), or that holds anything but an adapter folder actune trained: training ends by replacing it whole,
    which would delete what the user kept there. An empty folder is fine; run before anything slow."""
    out = Path(cfg.output_dir)
    inputs = [cfg.dataset] + ([Path(cfg.base_model)] if os.path.lexists(cfg.base_model) else [])
    check_not_an_input(out, inputs, TrainError, what="train.output_dir")
    check_not_an_input(checkpoints_dir(out), inputs, TrainError, what="checkpoint folder of train.output_dir")
    if not os.path.lexists(out) or (out.is_dir() and not out.is_symlink()
                                    and ((out / TRAINING_META_FILE).is_file() or not any(out.iterdir()))):
        return
    raise TrainError(f"{out}: train.output_dir exists and is not an adapter folder actune trained (no "
                     f"{TRAINING_META_FILE}); training replaces it whole, so choose another output_dir or remove it")


@dataclass
class Start:
    """Where a run starts and writes: the dtype, the folders, the start model and its tokenizer."""

    dtype: str
    out: Path
    ckpt_dir: Path
    """:func:`checkpoints_dir` of ``out``."""
    model_dir: Path
    """The start model's local folder."""
    tokenizer: Any


def open_start(cfg: TrainConfig) -> Start:
    """Resolve the dtype and folders, finish an interrupted swap of the output folder, fetch the start model (DPO
    and GRPO: a model that may itself be tuned, the SFT model's merged folder)."""
    from transformers import AutoTokenizer

    out = Path(cfg.output_dir)
    recover_folder(out)
    check_output_dir(cfg)
    model_dir = prepare_model(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return Start(resolve_dtype(cfg.dtype), out, checkpoints_dir(out), Path(model_dir), tokenizer)


def load_model(model_dir: Path, dtype: str, **kwargs: Any) -> Any:
    """The causal LM of ``model_dir`` in ``dtype`` (``from_pretrained`` with ``kwargs``): the model an objective
    puts its LoRA on."""
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype), **kwargs)


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
    """``config_class(**ours)`` with the user's ``key`` settings on top, checked by TRL itself. A ``hub_token``
    among them goes to this process's ``HF_TOKEN`` instead (which the Hub client reads the same): the Trainer
    pickles its settings into every checkpoint (``training_args.bin``), and a stopped run keeps its checkpoints."""
    theirs = dict(theirs)
    if token := theirs.pop("hub_token", None):
        os.environ["HF_TOKEN"] = token
    try:
        return config_class(**{**ours, **theirs})
    except (TypeError, ValueError) as e:
        raise TrainError(f"trl.{config_class.__name__} refused the trainer settings ({key} on top of actune's): "
                         f"{e}") from e


def logged_losses(trainer: Any) -> list[float]:
    """The training loss of each logged step (the meta file's ``losses``; bench/faults.py counts steps by them)."""
    return [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]


def merge_adapter(model_dir: Path, adapter_dir: Path, out_dir: Path, dtype: str) -> str:
    """Write the base model with the adapter merged into its weights (a plain model folder) to ``out_dir``
    and return the dtype it was saved in.

    The merge is done in float32 (one rounding, at the end). Saved in float32 when training ran in
    float32: the merged weights are then exactly what was trained and evaluated, and that is what a CPU
    without bf16 instructions serves (``serve.dtype: auto`` resolves to float32 there). Otherwise saved in
    the base model's own dtype (bfloat16 for the known models): what vLLM's ``auto`` serves on GPU, half
    the size, and the precision the adapter was trained against.
    """
    import torch
    from peft import PeftModel
    from transformers import AutoConfig, AutoModelForCausalLM

    if dtype == "float32":
        save_dtype = torch.float32
    else:
        base_dtype = getattr(AutoConfig.from_pretrained(model_dir), "dtype", None)
        if isinstance(base_dtype, str):
            base_dtype = getattr(torch, base_dtype, None)
        save_dtype = base_dtype if isinstance(base_dtype, torch.dtype) else torch.bfloat16
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    merged = merged.to(save_dtype)
    merged.config.dtype = save_dtype
    merged.save_pretrained(str(out_dir))
    return str(save_dtype).removeprefix("torch.")
