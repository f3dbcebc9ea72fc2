"""What every training objective shares (actune.train.common): the check of the folder training replaces, and the
trainer settings that keep a Hub token out of the checkpoints."""

from __future__ import annotations

import os
import pickle

import pytest
from trl import SFTConfig

from actune.train.common import TRAINING_META_FILE, TrainError, check_output_dir, trl_args
from actune.train.config import TrainConfig


def _cfg(tmp_path, out, **kw):
    return TrainConfig(dataset=tmp_path / "ds", output_dir=out, **kw)


def test_an_absent_empty_or_earlier_adapter_folder_may_be_replaced(tmp_path):
    check_output_dir(_cfg(tmp_path, tmp_path / "absent"))
    (tmp_path / "empty").mkdir()
    check_output_dir(_cfg(tmp_path, tmp_path / "empty"))
    earlier = tmp_path / "adapter"
    earlier.mkdir()
    (earlier / TRAINING_META_FILE).write_text("{}")
    (earlier / "adapter_model.safetensors").write_bytes(b"w")
    check_output_dir(_cfg(tmp_path, earlier))


@pytest.mark.parametrize("kind", ["folder", "file", "link"])
def test_anything_else_at_output_dir_is_refused_and_left_as_it_was(tmp_path, kind):
    out = tmp_path / "out"
    if kind == "folder":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    elif kind == "file":
        out.write_text("mine")
    else:
        (tmp_path / "target").mkdir()
        out.symlink_to(tmp_path / "target")
    with pytest.raises(TrainError, match="exists and is not an adapter folder actune trained"):
        check_output_dir(_cfg(tmp_path, out))
    assert out.is_symlink() if kind == "link" else (out / "notes.txt" if kind == "folder" else out).read_text() == "mine"


def test_an_output_dir_that_is_holds_or_lies_in_an_input_is_refused(tmp_path):
    (tmp_path / "ds").mkdir()
    with pytest.raises(TrainError, match="the train.output_dir is inside the input"):
        check_output_dir(_cfg(tmp_path, tmp_path / "ds" / "adapter"))
    # DPO after SFT started from the SFT adapter's merged model, writing to the SFT adapter's folder
    sft = tmp_path / "adapter"
    (sft / "merged").mkdir(parents=True)
    (sft / TRAINING_META_FILE).write_text("{}")
    with pytest.raises(TrainError, match="the train.output_dir contains the input"):
        check_output_dir(_cfg(tmp_path, sft, base_model=str(sft / "merged")))
    assert (sft / "merged").is_dir()


def test_a_hub_token_in_the_trainer_settings_reaches_the_environment_never_the_pickled_args(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    args = trl_args(SFTConfig, {"output_dir": str(tmp_path), "report_to": "none", "use_cpu": True},
                    {"hub_token": "hf_SecretFromAConfig", "optim": "adamw_torch"}, "train.sft")
    assert args.optim == "adamw_torch" and args.hub_token is None
    assert os.environ["HF_TOKEN"] == "hf_SecretFromAConfig"
    assert b"hf_SecretFromAConfig" not in pickle.dumps(args)  # what the Trainer saves as training_args.bin
