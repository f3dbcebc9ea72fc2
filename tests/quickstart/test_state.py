"""The quickstart's resume state: the same run resumes, another is refused, rounds may grow, no secret is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.config import ConfigError
from actune.quickstart.config import load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.state import load_state, save_state


def test_state_resumes_the_same_config_and_refuses_another(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    cfg = load_quickstart("smoke")
    state = load_state(layout, cfg)
    state["done"]["world"] = {"wall_s": 1.0}
    save_state(layout, state)
    assert load_state(layout, load_quickstart("smoke"))["done"] == {"world": {"wall_s": 1.0}}
    with pytest.raises(ConfigError, match=r"other settings \(differs in: seed\)"):
        load_state(layout, load_quickstart("smoke", ["seed=7"]))


def test_a_run_stored_by_an_older_actune_resumes(tmp_path: Path) -> None:
    """Its config had agent max_steps (now episode_steps), no top-level model, and lacked keys added since."""
    layout = Layout(tmp_path)
    cfg = load_quickstart("smoke")
    old = cfg.model_dump(mode="json")
    del old["model"]
    del old["bar"]  # a run stored before the report's bar became a setting resumes
    for section in ("bootstrap", "eval"):
        old[section]["agent"]["max_steps"] = old[section]["agent"].pop("episode_steps")
        del old[section]["allow_mixed_store"]
    save_state(layout, {"config": old, "done": {"world": {"wall_s": 1.0}}})
    state = load_state(layout, cfg)
    current = {k: v for k, v in cfg.model_dump(mode="json").items()
               if k not in ("hardware_overrides", "scale_note", "bar", "hotpotqa", "fever")}  # a world run's unused sources
    assert state["done"] == {"world": {"wall_s": 1.0}} and state["config"] == current
    old["seed"] = 7  # a real difference is still refused, by name
    save_state(layout, {"config": old, "done": {}})
    with pytest.raises(ConfigError, match=r"differs in: seed\)"):
        load_state(layout, cfg)


def test_more_rounds_extend_a_run_and_redo_only_eval_and_report(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = load_state(layout, load_quickstart("smoke", ["rounds=1"]))
    state["done"] = {name: {"wall_s": 1.0} for name in ("world", "bootstrap round 1", "export react round 1",
                                                       "train react round 1", "eval react", "report")}
    save_state(layout, state)
    grown = load_state(layout, load_quickstart("smoke", ["rounds=2"]))
    assert list(grown["done"]) == ["world", "bootstrap round 1", "export react round 1", "train react round 1"]
    assert grown["config"]["rounds"] == 2
    save_state(layout, grown)
    with pytest.raises(ConfigError, match="only --rounds may grow"):
        load_state(layout, load_quickstart("smoke", ["rounds=1"]))



def test_more_rounds_of_a_run_with_dpo_or_grpo_after_sft_are_refused(tmp_path: Path) -> None:
    # its DPO model started from round 1's SFT model: with a round 2 it would be reported against tuned-r2, which it
    # never started from
    layout = Layout(tmp_path)
    state = load_state(layout, load_quickstart("smoke", ["rounds=1", "after_sft=[dpo]"]))
    state["done"] = {"world": {"wall_s": 1.0}, "train react round 1": {"wall_s": 1.0}}
    save_state(layout, state)
    # before DPO began, more rounds extend the run as for any other
    assert load_state(layout, load_quickstart("smoke", ["rounds=2", "after_sft=[dpo]"]))["config"]["rounds"] == 2
    state["done"]["explore react"] = {"wall_s": 1.0}
    save_state(layout, state)
    with pytest.raises(ConfigError, match=r"differs in: rounds\).*only --rounds may grow, not once after_sft has"):
        load_state(layout, load_quickstart("smoke", ["rounds=2", "after_sft=[dpo]"]))


def test_a_run_resumes_when_only_the_hardware_table_changed(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = load_state(layout, load_quickstart("smoke"))
    state["done"]["world"] = {"wall_s": 1.0}
    save_state(layout, state)
    grown = load_quickstart("smoke", ["hardware_overrides={cuda: [rounds=3]}"])
    assert load_state(layout, grown)["done"] == {"world": {"wall_s": 1.0}}
    assert "hardware_overrides" not in json.loads(layout.state.read_text())["config"]


def test_a_hotpotqa_run_resumes_after_the_worlds_defaults_changed(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = load_state(layout, load_quickstart("hotpotqa"))
    state["done"]["tasks"] = {"wall_s": 1.0}
    # as an older actune stored it: the world section (unused by a HotpotQA run) with other defaults
    state["config"]["world"] = {"n_people": 120}
    save_state(layout, state)
    assert load_state(layout, load_quickstart("hotpotqa"))["done"] == {"tasks": {"wall_s": 1.0}}
    with pytest.raises(ConfigError, match=r"differs in: hotpotqa"):
        load_state(layout, load_quickstart("hotpotqa", ["hotpotqa.split_seed=5"]))


def test_a_quickstart_writes_no_secret_into_its_state_or_report(tmp_path) -> None:
    cfg = load_quickstart("smoke", ['serve.api_key="sk-live-123"'])
    layout = Layout(tmp_path)
    save_state(layout, load_state(layout, cfg))
    text = layout.state.read_text()
    assert "sk-live-123" not in text and json.loads(text)["config"]["serve"]["api_key"] == "***"
    load_state(layout, cfg)  # the same run resumes


def test_a_folder_holding_files_but_no_run_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    # a run writes report.md, tasks/ and the rest by fixed names: --out pointed at the user's own folder would
    # replace their files
    (tmp_path / "report.md").write_text("my report")
    with pytest.raises(ConfigError, match=r"not empty and holds no quickstart run \(quickstart-state.json\)"):
        load_state(Layout(tmp_path), load_quickstart("smoke"))
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]
    (tmp_path / "empty").mkdir()
    assert load_state(Layout(tmp_path / "empty"), load_quickstart("smoke"))["done"] == {}
    # a run SIGKILLed inside its first state save left only its temp file: the rerun goes on
    (tmp_path / "empty" / ".quickstart-state.json.actune-0a1b2c3d.tmp").write_text("{")
    assert load_state(Layout(tmp_path / "empty"), load_quickstart("smoke"))["done"] == {}
    assert load_state(Layout(tmp_path / "new"), load_quickstart("smoke"))["done"] == {}
