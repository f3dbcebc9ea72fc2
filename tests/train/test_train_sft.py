"""``train.sft`` reaches TRL on top of actune's settings, trackers (TensorBoard writes event files into the
adapter folder), and the clear errors of a missing tracker, a value TRL refuses and QLoRA without
bitsandbytes; every error comes before the dataset is read."""

from __future__ import annotations

import importlib.util
import logging

import pytest
from training_records import ADAPTER_FILES, tiny_config, write_store

from actune.bootstrap.export import export_dataset
from actune.train import sft as train_run
from actune.train.common import TrainError
from actune.train.sft import train


def test_sft_settings_go_on_top_of_actunes(tmp_path, embedded_model):
    cfg = tiny_config(tmp_path, embedded_model, sft={"lr_scheduler_type": "constant", "weight_decay": 0.1,
                                                     "per_device_eval_batch_size": 8, "report_to": "none"})
    args = train_run.sft_args(cfg, "float32", tmp_path / "ckpt")
    assert (args.lr_scheduler_type, args.weight_decay, args.per_device_eval_batch_size) == ("constant", 0.1, 8)
    assert (args.learning_rate, args.max_steps, args.output_dir) == (5e-3, 3, str(tmp_path / "ckpt"))
    assert (args.padding_free, args.max_length) == (True, None)  # tokenize_dataset cut the examples to 128
    assert args.report_to == [] and args.save_total_limit == 2  # actune's own where sft says nothing
    assert train_run.sft_args(tiny_config(tmp_path, embedded_model), "float32", tmp_path).lr_scheduler_type == "cosine"


def test_a_value_trl_refuses_fails_before_the_dataset_is_read(tmp_path, embedded_model):
    cfg = tiny_config(tmp_path, embedded_model, sft={"optim": "adamw_tourch"})
    with pytest.raises(TrainError, match=r"trl.SFTConfig refused the trainer settings .*adamw_tourch"):
        train(cfg, log=lambda line: None)  # no dataset was exported: it was not read
    assert list(tmp_path.iterdir()) == []


def test_a_tracker_that_is_not_installed_fails_before_the_dataset_is_read(tmp_path, embedded_model, monkeypatch):
    from transformers.integrations import integration_utils

    monkeypatch.setattr(integration_utils, "get_available_reporting_integrations", lambda: [])
    cfg = tiny_config(tmp_path, embedded_model, sft={"report_to": ["tensorboard", "wandb"]})
    with pytest.raises(TrainError, match=r"^train.sft.report_to: not installed: tensorboard, wandb "
                                         r"\(pip install tensorboard wandb\)$"):
        train(cfg, log=lambda line: None)


def test_qlora_without_bitsandbytes_fails_clearly(tmp_path, embedded_model, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real(name, *a))
    with pytest.raises(TrainError, match=r"^train.load_in_4bit needs bitsandbytes, which is not installed: "
                                         r"pip install bitsandbytes"):
        train(tiny_config(tmp_path, embedded_model, load_in_4bit=True), log=lambda line: None)
    both = {"model_init_kwargs": {"quantization_config": {"load_in_8bit": True}}}
    monkeypatch.setattr(importlib.util, "find_spec", real)
    if real("bitsandbytes") is not None:
        with pytest.raises(TrainError, match="both quantise the base model"):
            train(tiny_config(tmp_path, embedded_model, load_in_4bit=True, sft=both), log=lambda line: None)


def test_tensorboard_writes_event_files_into_the_adapter_folder(tmp_path, embedded_model, caplog):
    if importlib.util.find_spec("tensorboard") is None:
        pytest.skip("tensorboard is not installed (pip install tensorboard): train.sft.report_to=tensorboard "
                    "fails at once with that message, see the test above")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "text")
    cfg = tiny_config(tmp_path, embedded_model, eval_fraction=0, max_steps=2, sft={"report_to": "tensorboard"})
    caplog.set_level(logging.INFO, logger="actune.train.sft")
    res = train(cfg)  # the default log: the actune.train.sft logger
    out = tmp_path / "adapter"
    assert sorted(p.name for p in out.iterdir()) == sorted(ADAPTER_FILES + ["runs"])
    events = list((out / "runs").rglob("events.out.tfevents.*"))
    assert len(events) == 1
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == [1, 2]
    assert [e.value for e in acc.Scalars("train/loss")] == pytest.approx(res.losses, rel=1e-4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "ds", "store.jsonl"]  # checkpoints gone
    assert any(m.startswith("train: adapter saved to ") for m in caplog.messages)
