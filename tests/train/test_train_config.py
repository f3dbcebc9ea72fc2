"""TrainConfig: the dev-slice and dtype fields, the error that names ``dtype`` for the old ``bf16`` key, and
``train.sft`` (any other ``trl.SFTConfig`` field, checked against the installed TRL)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from actune.cli.run_config import RunConfig
from actune.config import ConfigError, load_config
from actune.train.config import TrainConfig, owned_sft_fields, sft_config_fields


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


# -- train.sft: the rest of trl.SFTConfig -----------------------------------------------------------------

def test_sft_defaults_to_no_tracker_and_keeps_that_under_other_keys():
    assert TrainConfig().sft.model_dump() == {"report_to": "none"}
    assert TrainConfig().load_in_4bit is False
    run = load_config(RunConfig, None, ["train.sft.optim=adamw_torch", "train.sft.weight_decay=0.1"])
    assert run.train.sft.model_dump() == {"report_to": "none", "optim": "adamw_torch", "weight_decay": 0.1}
    assert load_config(RunConfig, None, ["train.sft.report_to=tensorboard"]).train.sft.model_dump() == {"report_to": "tensorboard"}


def test_an_unknown_sft_key_fails_naming_it(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("train:\n  sft:\n    report_tox: tensorboard\n    optim: adamw_torch\n")
    with pytest.raises(ConfigError) as e:
        load_config(RunConfig, path)
    assert str(e.value) == (f"{path}: invalid config\n"
                            "  train.sft.report_tox: not a field of trl.SFTConfig (got 'tensorboard') [line 3]")


def test_an_sft_value_of_the_wrong_type_and_a_negative_max_steps_fail_before_training():
    with pytest.raises(ConfigError) as e:
        load_config(RunConfig, None, ["train.sft.weight_decay=notanumber", "train.sft.lr_scheduler_type=linear"])
    assert str(e.value) == ("command-line overrides: invalid config\n  train.sft.weight_decay: not a valid value for "
                            "trl.SFTConfig.weight_decay: Input should be a valid number, unable to parse string as a "
                            "number (got 'notanumber')")
    with pytest.raises(ConfigError, match=r"train.max_steps: Input should be greater than or equal to -1 \(got -5\)"):
        load_config(RunConfig, None, ["train.max_steps=-5"])


@pytest.mark.parametrize("key, value, actune_key", [
    ("learning_rate", "0.001", "train.learning_rate"), ("max_steps", "5", "train.max_steps"),
    ("gradient_checkpointing", "true", "train.gradient_checkpointing"), ("output_dir", "x", "train.output_dir"),
    ("bf16", "true", "train.dtype"), ("warmup_steps", "10", "train.warmup_ratio"), ("data_seed", "3", "train.seed"),
    ("load_best_model_at_end", "false", "train.eval_fraction and train.evals_per_epoch"),
])
def test_a_setting_actune_has_a_key_for_names_that_key(key, value, actune_key):
    with pytest.raises(ConfigError) as e:
        load_config(RunConfig, None, [f"train.sft.{key}={value}"])
    assert f"  train.sft.{key}: actune sets it from its own key: write {actune_key} instead" in str(e.value)


def test_what_trl_users_write_elsewhere_points_to_actunes_key():
    with pytest.raises(ConfigError) as e:
        load_config(RunConfig, None, ["train.sft.load_in_4bit=true", "train.sft.model_init_kwargs={dtype: float16}"])
    msg = str(e.value)
    assert "  train.sft.load_in_4bit: not a field of trl.SFTConfig (actune's key for it is train.load_in_4bit)" in msg
    assert "  train.sft.model_init_kwargs.dtype: actune sets it from its own key: write train.dtype instead" in msg
    run = load_config(RunConfig, None, ["train.sft.model_init_kwargs={attn_implementation: sdpa}"])
    assert run.train.sft.init_kwargs() == {"attn_implementation": "sdpa"}
    with pytest.raises(ValidationError, match="sft.model_init_kwargs"):
        TrainConfig(sft={"model_init_kwargs": "sdpa"})


def test_the_keys_actune_owns_follow_the_installed_trl():
    # A field TRL renames or drops must not linger here, where it would be "owned" instead of unknown.
    owned = owned_sft_fields()
    assert set(owned) <= sft_config_fields()
    assert {"learning_rate", "num_train_epochs", "max_length", "packing", "seed", "bf16"} <= set(owned)
    assert "report_to" not in owned and "optim" not in owned


# -- the objectives' sections on one base: typed fields, and any other field of the objective's TRL config ----------

def test_each_objectives_section_passes_its_other_keys_to_trl_and_names_an_unknown_one():
    cfg = TrainConfig(sft={"optim": "sgd", "model_init_kwargs": {"attn_implementation": "sdpa"}},
                      dpo={"loss_type": "ipo"}, grpo={"trl": {"epsilon": 0.3}, "tasks_per_step": 3})
    assert cfg.sft.trl_settings() == {"report_to": "none", "optim": "sgd"}  # actune loads the model itself
    assert (cfg.dpo.beta, cfg.dpo.trl_settings()) == (0.1, {"beta": 0.1, "loss_type": "ipo"})
    assert cfg.grpo.trl_settings() == {"num_generations": 4, "temperature": 1.0, "epsilon": 0.3}
    with pytest.raises(ConfigError) as e:
        load_config(RunConfig, None, ["train.dpo.betta=0.2", "train.grpo.trl.no_such_key=1"])
    assert "  train.dpo.betta: not a field of trl.DPOConfig (got 0.2)" in str(e.value)
    assert "  train.grpo.trl.no_such_key: not a field of trl.GRPOConfig" in str(e.value)
    with pytest.raises(ConfigError, match="train.grpo.beta: unknown key"):  # grpo's own keys are the rollouts'
        load_config(RunConfig, None, ["train.grpo.beta=0"])
