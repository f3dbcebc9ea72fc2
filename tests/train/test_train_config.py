"""TrainConfig: the dev-slice and dtype fields, and the error that names ``dtype`` for the old ``bf16`` key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from actune.cli.run_config import RunConfig
from actune.config import ConfigError, load_config
from actune.train.config import TrainConfig


def test_defaults():
    cfg = TrainConfig()
    assert (cfg.dtype, cfg.eval_fraction, cfg.evals_per_epoch, cfg.merge) == ("auto", 0.1, 2, False)
    assert "bf16" not in TrainConfig.model_fields


@pytest.mark.parametrize("old, new", [("true", "dtype: bfloat16"), ("false", "dtype: float32"),
                                      ("maybe", "dtype: bfloat16 or dtype: float32")])
def test_the_old_bf16_key_names_dtype(tmp_path, old, new):
    path = tmp_path / "run.yaml"
    path.write_text(f"train:\n  max_steps: 3\n  bf16: {old}\n")
    with pytest.raises(ConfigError) as e:
        load_config(RunConfig, path)
    msg = str(e.value)
    assert f"{path}: invalid config\n  train: " in msg
    assert f"bf16 was replaced by dtype (auto, bfloat16 or float32): write {new} instead" in msg
    assert "unknown key" not in msg
    with pytest.raises(ConfigError, match="bf16 was replaced by dtype"):
        load_config(RunConfig, None, ["train.bf16=false"])


def test_dtype_and_eval_fraction_are_checked():
    with pytest.raises(ValidationError, match="dtype"):
        TrainConfig(dtype="float16")
    with pytest.raises(ValidationError, match="eval_fraction"):
        TrainConfig(eval_fraction=1.0)
    with pytest.raises(ValidationError, match="evals_per_epoch"):
        TrainConfig(evals_per_epoch=0)
    assert TrainConfig(eval_fraction=0).eval_fraction == 0
