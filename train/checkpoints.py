"""Which checkpoint a rerun resumes from, and making a saved one durable before it counts.

The Trainer writes ``trainer_state.json`` after the weights, optimizer and RNG state, so a folder without it
(or without weights) was cut while saving. That is not enough after a power loss: files the kernel had not yet
written back can come back empty with their names in place. So every file of a checkpoint is fsynced as soon
as the Trainer has saved it (:func:`fsync_checkpoint`, from a callback), and a checkpoint is resumed from only
when its state parses and its weights open (:func:`complete_checkpoint`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from actune.config import public_dump
from actune.records.atomic_write import atomic_write_text
from actune.records.jsonl import json_object
from actune.train.common import TrainError
from actune.train.config import TrainConfig

__all__ = ["RUN_FILE", "complete_checkpoint", "durable_checkpoints", "fsync_checkpoint", "last_checkpoint",
           "run_identity", "train_resuming", "trained_already"]

_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")


def fsync_checkpoint(path: Path) -> None:
    """Flush every file of a saved checkpoint folder, then the folder and its parent, to disk."""
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for folder in (path, path.parent):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _weights_open(path: Path) -> bool:
    if path.stat().st_size == 0:
        return False
    if path.suffix != ".safetensors":
        return True
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            return bool(list(f.keys()))
    except Exception:  # safetensors raises its own error types for a torn or empty header
        return False


def complete_checkpoint(path: Path) -> bool:
    """A checkpoint folder whose trainer state parses and whose adapter weights open."""
    try:
        json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any((path / name).is_file() and _weights_open(path / name) for name in _WEIGHTS)


def last_checkpoint(folder: Path) -> str | None:
    """The highest-numbered complete checkpoint in ``folder`` (None when there is none)."""
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit() and complete_checkpoint(p)]
    return str(max(found, key=lambda p: int(p.name.split("-")[-1]))) if found else None


def durable_checkpoints() -> object:
    """A ``TrainerCallback`` that fsyncs each checkpoint the Trainer has just saved (:func:`fsync_checkpoint`)."""
    from transformers import TrainerCallback

    class DurableCheckpoints(TrainerCallback):
        def on_save(self, args: object, state: object, control: object, **kw: object) -> None:
            fsync_checkpoint(Path(args.output_dir) / f"checkpoint-{state.global_step}")

    return DurableCheckpoints()


RUN_FILE = "actune_run.json"
"""What the checkpoints of ``<output_dir>.checkpoints`` were trained from (:func:`train_resuming`)."""
_NOT_LEARNT = ("dataset", "output_dir", "merge", "max_steps", "torch_threads", "logging_steps", "save_steps",
               "evals_per_epoch", "gradient_checkpointing", "padding_free", "loss_head")
"""TrainConfig keys a resume may change: where the data (fingerprinted by content) and the adapter are, how far it
trains, how it is watched and how fast it runs (the same gradients), not what it learns."""


def run_identity(cfg: TrainConfig) -> dict[str, Any]:
    """What makes two trainings the same run: the settings that shape what is learnt (the public dump of ``cfg``) and
    the dataset's content as ``datasets`` fingerprints it (``state.json``; GRPO trains on no dataset)."""
    content = None if cfg.objective == "grpo" else json_object(Path(cfg.dataset) / "state.json")
    config = {k: v for k, v in public_dump(cfg).items() if k not in _NOT_LEARNT}
    if os.path.lexists(cfg.base_model):  # a local folder, however its path is written (runs/x, ./runs/x, /abs)
        config["base_model"] = os.path.realpath(cfg.base_model)
    return {"config": config, "dataset": content.get("_fingerprint") if content is not None else None}


def trained_already(identity: dict[str, Any], out: Path) -> bool:
    """Whether ``out`` holds the adapter of the training ``identity`` names (its ``training_meta.json`` records the
    same): a run stopped after the adapter was swapped in, before its caller noted the stage done, needs no training
    again (its checkpoints are gone with the swap)."""
    meta = json_object(out / "training_meta.json")
    return meta is not None and meta.get("run") == json.loads(json.dumps(identity))


def train_resuming(trainer: Any, ckpt_dir: Path, say: Callable[[str], None], what: str = "train",
                   identity: dict[str, Any] | None = None) -> Any:
    """``trainer.train()`` from the last complete checkpoint in ``ckpt_dir`` when there is one (said). ``identity``
    (:func:`run_identity`) is recorded beside the checkpoints; checkpoints recorded with another are an error
    naming what differs (resuming them would skip that many batches of a different training), never resumed."""
    resume = last_checkpoint(ckpt_dir)
    record = ckpt_dir / RUN_FILE
    if identity is not None:
        if resume and record.is_file():
            stored = json.loads(record.read_text(encoding="utf-8"))
            keys = sorted(k for k in set(stored["config"]) | set(identity["config"])
                          if stored["config"].get(k) != identity["config"].get(k))
            keys += ["the dataset's content"] if stored.get("dataset") != identity["dataset"] else []
            if keys:
                raise TrainError(f"{ckpt_dir}: its checkpoints are of another training (differs in: "
                                 f"{', '.join(keys)}); rerun with the settings it was started with, or remove the "
                                 "folder to start over")
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(record, json.dumps(identity, indent=2, sort_keys=True) + "\n")
    if resume:
        say(f"{what}: resuming from {resume}")
    return trainer.train(resume_from_checkpoint=resume)
