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

__all__ = ["complete_checkpoint", "durable_checkpoints", "fsync_checkpoint", "last_checkpoint", "train_resuming"]

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


def train_resuming(trainer: Any, ckpt_dir: Path, say: Callable[[str], None], what: str = "train") -> Any:
    """``trainer.train()`` from the last complete checkpoint in ``ckpt_dir`` when there is one (said)."""
    resume = last_checkpoint(ckpt_dir)
    if resume:
        say(f"{what}: resuming from {resume}")
    return trainer.train(resume_from_checkpoint=resume)
