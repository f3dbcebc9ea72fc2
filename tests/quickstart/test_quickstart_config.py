"""The quickstart's presets and their validation: what each preset is, hardware overrides, per-method round settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import ConfigError
from actune.quickstart.config import load_quickstart
from actune.quickstart.estimate import estimate_seconds


def test_smoke_is_small_and_full_meets_the_issue() -> None:
    smoke, full = load_quickstart("smoke"), load_quickstart("full")
    assert smoke.world.n_test <= 30 and smoke.bootstrap.target_correct <= 20
    assert full.world.n_test >= 300  # the issue's floor of held-out questions
    assert set(full.methods) == {"react", "reflact"} and full.rounds >= 2
    assert full.train.merge and smoke.train.merge  # eval serves merged weights at base speed


def test_unknown_preset_key_names_it() -> None:
    with pytest.raises(ConfigError, match="no_such_key"):
        load_quickstart("smoke", ["no_such_key=1"])


def test_gpu_preset_is_the_papers_scale_on_one_gpu() -> None:
    gpu = load_quickstart("gpu")
    assert gpu.serve.device == "cuda" and gpu.serve.model == gpu.train.base_model == "Qwen/Qwen2.5-0.5B-Instruct"
    assert gpu.bootstrap.target_correct == 3000  # the ReAct paper's ~3,000 kept trajectories
    assert gpu.world.n_train * gpu.bootstrap.attempts_per_task >= gpu.bootstrap.target_correct / 0.2 * 0.5
    assert gpu.world.n_test >= 300 and set(gpu.methods) == {"react", "reflact"}


def test_hotpotqa_gpu_preset_is_the_react_papers_experiment() -> None:
    cfg = load_quickstart("hotpotqa-gpu")
    assert cfg.source == "hotpotqa" and cfg.serve.device == "cuda" and cfg.methods == ["react"]
    assert cfg.hotpotqa.test_set == "react500" and cfg.hotpotqa.n_test == 500  # the paper's 500 dev questions
    assert cfg.bootstrap.target_correct == 3000 and cfg.bootstrap.agent.exemplar_set == "wiki"
    # enough round-1 episodes for 3,000 kept at a tenth kept
    assert cfg.hotpotqa.n_train * cfg.bootstrap.attempts_per_task >= cfg.bootstrap.target_correct * 10
    # its CPU smoke form is the hotpotqa preset's: the same stages
    smoke = load_quickstart("hotpotqa")
    assert (smoke.source, smoke.methods, smoke.eval.agent.exemplar_set) == (cfg.source, cfg.methods, "wiki")


def test_hardware_overrides_apply_on_their_kind_only_and_the_command_line_wins(tmp_path: Path) -> None:
    preset = tmp_path / "p.yaml"
    preset.write_text("world: {n_train: 40}\nhardware_overrides:\n  cpu-fp32: [world.n_train=20, rounds=2]\n")
    assert load_quickstart(str(preset)).world.n_train == 40  # no hardware named: the preset as written
    assert load_quickstart(str(preset), hardware="cpu-bf16").world.n_train == 40
    fp32 = load_quickstart(str(preset), hardware="cpu-fp32")
    assert (fp32.world.n_train, fp32.rounds) == (20, 2)
    assert load_quickstart(str(preset), ["world.n_train=30"], hardware="cpu-fp32").world.n_train == 30


def test_a_bad_hardware_override_fails_on_any_hardware(tmp_path: Path) -> None:
    preset = tmp_path / "p.yaml"
    preset.write_text("hardware_overrides:\n  cpu-fp32: [bootstrap.no_such_key=1]\n")
    with pytest.raises(ConfigError, match=r"(?s)hardware_overrides\.cpu-fp32: .*bootstrap.no_such_key: unknown key"):
        load_quickstart(str(preset), hardware="cpu-bf16")
    preset.write_text("hardware_overrides:\n  tpu: [rounds=2]\n")
    with pytest.raises(ConfigError, match="hardware_overrides"):
        load_quickstart(str(preset))


def test_full_preset_shrinks_on_a_cpu_without_bf16() -> None:
    bf16, fp32 = load_quickstart("full", hardware="cpu-bf16"), load_quickstart("full", hardware="cpu-fp32")
    assert (bf16.bootstrap.attempts_per_task, fp32.bootstrap.attempts_per_task) == (2, 1)
    assert fp32.world.n_test >= 300 and fp32.rounds == 2  # the bar's floor and round 2 are kept
    # ReAct learns from ReflAct's episodes too, and its round 2 retrains from the base for 2 epochs; ReflAct as before
    assert (bf16.mix_methods, fp32.mix_methods) == (False, True)
    assert [(c.round_start_of(m), c.round_epochs_of(m)) for c in (bf16, fp32) for m in ("react", "reflact")] == [
        ("base", None), ("base", None), ("base", 2.0), ("base", None)]
    as_is, shrunk = (sum(estimate_seconds(c, "cpu-fp32").values()) for c in (bf16, fp32))
    assert shrunk < 0.8 * as_is and shrunk < 4.25 * 3600
    assert load_quickstart("full", ["bootstrap.attempts_per_task=2"], hardware="cpu-fp32").bootstrap.attempts_per_task == 2


def test_smoke_shrinks_on_a_cpu_without_bf16_and_still_runs_every_stage() -> None:
    bf16, fp32 = load_quickstart("smoke", hardware="cpu-bf16"), load_quickstart("smoke", hardware="cpu-fp32")
    assert bf16 == load_quickstart("smoke")  # nothing changes where bf16 is native
    assert (fp32.world.n_test, fp32.bootstrap.target_correct, fp32.round_attempts) == (16, 12, 1)
    assert fp32.eval.concurrency >= fp32.world.n_test  # one eval wave per model
    assert fp32.rounds == 2 and fp32.oracle_baseline and fp32.train.merge  # every stage and model kind stays
    as_is, shrunk = (sum(estimate_seconds(c, "cpu-fp32").values()) for c in (bf16, fp32))
    assert shrunk < 0.85 * as_is


def test_round_start_previous_needs_merged_models() -> None:
    with pytest.raises(ConfigError, match=r"round_start=previous \(react, reflact\) .* train.merge=true"):
        load_quickstart("full", ["round_start=previous", "train.merge=false"])
    with pytest.raises(ConfigError, match=r"round_start=previous \(react\) .* train.merge=true"):
        load_quickstart("full", ["round_start={react: previous}", "train.merge=false"])
    load_quickstart("full", ["round_start=previous", "train.merge=false", "rounds=1"])  # no later round: fine
    load_quickstart("full", ["round_start={react: base}", "train.merge=false"])


def test_per_method_round_settings_name_adapter_methods() -> None:
    with pytest.raises(ConfigError, match=r"round_start\.dict.*cot"):  # no adapter steps method at all
        load_quickstart("full", ["round_start={cot: previous}"])
    with pytest.raises(ConfigError, match="round_epochs"):
        load_quickstart("full", ["round_epochs={react: 0}"])
    # a setting for a method this run leaves out is not used (the AVX2-only shape names ReAct's)
    alone = load_quickstart("full", ["methods=[reflact]", "round_start={react: previous}", "train.merge=false"])
    assert alone.round_start_of("reflact") == "base"
