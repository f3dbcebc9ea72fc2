"""Resume picks the last checkpoint that was saved whole: its state parses and its weights open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from actune.train.checkpoints import (
    RUN_FILE,
    complete_checkpoint,
    fsync_checkpoint,
    last_checkpoint,
    run_identity,
    train_resuming,
)
from actune.train.common import TrainError
from actune.train.config import TrainConfig


def _checkpoint(root: Path, step: int, files: dict[str, str | None]) -> Path:
    """A checkpoint folder; a ``None`` content is a real safetensors file with one tensor."""
    path = root / f"checkpoint-{step}"
    path.mkdir()
    for name, text in files.items():
        if text is None:
            save_file({"lora_A": torch.zeros(2, 2)}, str(path / name))
        else:
            (path / name).write_text(text)
    return path


def test_only_complete_checkpoints_are_resumed_from(tmp_path: Path) -> None:
    assert last_checkpoint(tmp_path / "none") is None
    _checkpoint(tmp_path, 2, {"trainer_state.json": "{}", "adapter_model.safetensors": None, "optimizer.pt": "x"})
    _checkpoint(tmp_path, 10, {"trainer_state.json": "{}", "adapter_model.bin": "x"})
    _checkpoint(tmp_path, 11, {"adapter_model.safetensors": None})  # cut off before trainer_state.json
    _checkpoint(tmp_path, 12, {"trainer_state.json": "{}"})
    # what a power loss can leave: the names in place, the contents not written back
    _checkpoint(tmp_path, 13, {"trainer_state.json": "{}", "adapter_model.safetensors": ""})
    _checkpoint(tmp_path, 14, {"trainer_state.json": "", "adapter_model.safetensors": None})
    _checkpoint(tmp_path, 15, {"trainer_state.json": "{}", "adapter_model.safetensors": "\x08\x00\x00\x00\x00"})
    _checkpoint(tmp_path, 16, {"trainer_state.json": "{}", "adapter_model.bin": ""})
    (tmp_path / "checkpoint-x").mkdir()
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")
    assert [s for s in (2, 10, 13, 14, 15, 16) if complete_checkpoint(tmp_path / f"checkpoint-{s}")] == [2, 10]
    assert last_checkpoint(tmp_path / "checkpoint-x") is None


def test_fsync_checkpoint_flushes_every_file_and_changes_none(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path, 3, {"trainer_state.json": "{}", "adapter_model.safetensors": None})
    (path / "rng").mkdir()
    (path / "rng" / "state.pth").write_bytes(b"\x01\x02")
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    fsync_checkpoint(path)
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before
    assert complete_checkpoint(path)


def test_the_durable_callback_fsyncs_the_checkpoint_the_trainer_just_saved(tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    import actune.train.checkpoints as checkpoints

    synced: list[Path] = []
    monkeypatch.setattr(checkpoints, "fsync_checkpoint", synced.append)
    checkpoints.durable_checkpoints().on_save(SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(global_step=7),
                                              None)
    assert synced == [tmp_path / "checkpoint-7"]


class _FakeTrainer:  # a FAKE trainer: records where train() was told to resume from
    def train(self, resume_from_checkpoint=None):
        self.resumed = resume_from_checkpoint
        return "trained"


def test_checkpoints_of_another_training_are_refused_by_name_not_resumed(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ds.mkdir()
    (ds / "state.json").write_text(json.dumps({"_fingerprint": "aaa"}))
    ckpt = tmp_path / "adapter.checkpoints"
    first = run_identity(TrainConfig(dataset=ds, learning_rate=1e-4))
    trainer = _FakeTrainer()
    assert train_resuming(trainer, ckpt, print, identity=first) == "trained" and trainer.resumed is None
    assert json.loads((ckpt / RUN_FILE).read_text()) == json.loads(json.dumps(first))
    _checkpoint(ckpt, 4, {"trainer_state.json": "{}", "adapter_model.safetensors": None})
    # the same run, told to go further and to run on more threads, resumes
    again = run_identity(TrainConfig(dataset=ds, learning_rate=1e-4, max_steps=50, torch_threads=2))
    train_resuming(trainer, ckpt, print, identity=again)
    assert trainer.resumed == str(ckpt / "checkpoint-4")
    # the start model's folder written another way is the same folder
    (tmp_path / "sft" / "merged").mkdir(parents=True)
    relative = run_identity(TrainConfig(dataset=ds, base_model=str(tmp_path / "sft" / "merged")))
    dotted = run_identity(TrainConfig(dataset=ds, base_model=str(tmp_path / "sft" / "." / "merged")))
    assert relative == dotted
    # another learning rate and another dataset's content: named, nothing resumed
    (ds / "state.json").write_text(json.dumps({"_fingerprint": "bbb"}))
    other = run_identity(TrainConfig(dataset=ds, learning_rate=2e-4))
    trainer.resumed = "untouched"
    with pytest.raises(TrainError, match=r"adapter.checkpoints: its checkpoints are of another training \(differs in: "
                                         r"learning_rate, the dataset's content\)"):
        train_resuming(trainer, ckpt, print, identity=other)
    assert trainer.resumed == "untouched"
