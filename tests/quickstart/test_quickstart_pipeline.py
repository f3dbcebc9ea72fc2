"""The quickstart's stage plan, its pace and what a stopped stage keeps (no server: the smoke runs on the real
server are tests/quickstart/test_quickstart_smoke.py and its HotpotQA and FEVER forms)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.config import ConfigError
from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import estimate_seconds, estimate_stages
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import plan_stages, run_quickstart, run_stage, time_left
from actune.quickstart.stage import Stage
from actune.quickstart.state import load_state, save_state

HOTPOT_SMALL = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"


def test_time_left_is_scaled_by_the_pace_of_the_timed_stages_so_far() -> None:
    stages = [Stage(name, est, lambda: None) for name, est in
              [("world", 5), ("bootstrap", 1000), ("export", 10), ("train", 600), ("eval", 1400), ("report", 5)]]
    assert time_left(stages, {}, 0) == (3020, None)
    # world alone is too short to set a pace
    assert time_left(stages, {"world": {"wall_s": 50.0}}, 1) == (3015, None)
    done = {"world": {"wall_s": 50.0}, "bootstrap": {"wall_s": 600.0}, "export": {"wall_s": 1.0}}
    assert time_left(stages, done, 3) == (2005, 0.6)
    done["train"] = {"wall_s": 360.0}  # 960 s measured against 1600 estimated
    assert time_left(stages, done, 4) == (1405, 0.6)
    done["train"] = {"wall_s": 1240.0}
    assert time_left(stages, done, 4) == (1405, 1.15)


def test_stage_plan_for_two_methods_and_two_rounds(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke", ["methods=[react,reflact]", "rounds=2"])
    run = RunContext(cfg, Layout(tmp_path), show_progress=False, log=lambda m: None)
    names = [s.name for s in plan_stages(run, "cpu-fp32")]
    assert names == [
        "world", "bootstrap round 1",
        "export react round 1", "train react round 1", "export reflact round 1", "train reflact round 1",
        "bootstrap round 2",
        "export react round 2", "train react round 2", "export reflact round 2", "train reflact round 2",
        "eval react", "eval reflact", "report",
    ]
    est = {s.name: s.estimate_s for s in plan_stages(run, "cpu-fp32")}
    whole = estimate_seconds(cfg, "cpu-fp32")
    assert est["bootstrap round 1"] + est["bootstrap round 2"] == pytest.approx(whole["bootstrap"])
    assert est["eval react"] + est["eval reflact"] == pytest.approx(whole["eval"])
    # 100 more test questions: round 1's server runs them for the prompted model (generic and type-matched prompts),
    # round 2's for round 1's model, the eval stage for round 2's (per method: prompted 1.0 / 1.77, tuned 0.63 / 0.75)
    def grown(n_test: int) -> tuple[float, float, float]:
        e = estimate_stages(load_quickstart("smoke", ["methods=[react,reflact]", "rounds=2", f"world.n_test={n_test}"]),
                            "cpu-fp32")
        return e.bootstrap_rounds[0], e.bootstrap_rounds[1], e.eval

    (r1, r2, ev), (r1b, r2b, evb) = grown(20), grown(120)
    assert (r1b - r1) / (r2b - r2) == pytest.approx(2 * (1.0 + 1.77) / (0.63 + 0.75))
    assert (evb - ev) == pytest.approx(r2b - r2)


def test_a_stage_stopped_part_way_keeps_its_time_and_the_rerun_adds_it(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = load_state(layout, load_quickstart("smoke"))

    def stopped() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stage(Stage("bootstrap round 1", 1.0, stopped), state, layout)
    stored = json.loads(layout.state.read_text())
    assert stored["done"] == {} and stored["partial"]["bootstrap round 1"]["runs"] == 1
    stored["partial"]["bootstrap round 1"]["wall_s"] = 600.0  # as if the first run had lasted ten minutes
    save_state(layout, stored)

    resumed = load_state(layout, load_quickstart("smoke"))
    run_stage(Stage("bootstrap round 1", 1.0, lambda: None), resumed, layout)
    stored = json.loads(layout.state.read_text())
    assert stored["partial"] == {}
    assert stored["done"]["bootstrap round 1"]["runs"] == 2
    assert 600.0 <= stored["done"]["bootstrap round 1"]["wall_s"] < 601.0


def test_a_missing_import_is_refused_before_any_stage_runs(tmp_path: Path) -> None:
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}",
                                       f"imports=[{{path: {tmp_path / 'nowhere.jsonl'}, format: openai}}]"])
    with pytest.raises(ConfigError, match=r"imports\[0\].path: .*nowhere.jsonl not found"):
        run_quickstart(cfg, tmp_path / "run", show_progress=False, log=lambda m: None)
    assert not (tmp_path / "run" / "tasks").exists()


def test_dpo_and_grpo_train_after_the_last_sft_round_and_are_evaluated_against_it(tmp_path: Path) -> None:
    from actune.quickstart.evaluation import eval_config

    cfg = load_quickstart("smoke", ["after_sft=[dpo,grpo]", "objective_train={grpo: {max_steps: 3}}"])
    run = RunContext(cfg, Layout(tmp_path), show_progress=False, log=lambda m: None)
    stages = plan_stages(run, "cpu-bf16")
    assert [s.name for s in stages] == [
        "world", "bootstrap round 1", "export react round 1", "train react round 1",
        "bootstrap round 2", "export react round 2", "train react round 2",
        "explore react", "pairs react", "train dpo react", "train grpo react", "eval react", "report",
    ]
    whole = estimate_seconds(cfg, "cpu-bf16")
    est = {s.name: s.estimate_s for s in stages}
    assert est["explore react"] + est["train dpo react"] + est["train grpo react"] == pytest.approx(whole["after_sft"])
    models = eval_config(run, "react").models
    assert [(m.label, m.compare_to) for m in models] == [
        ("prompted", None), ("prompted-oracle", None), ("tuned-r1", None), ("tuned-r2", None),
        ("tuned-dpo", "tuned-r2"), ("tuned-grpo", "tuned-r2")]
    # both start from round 2's merged model; DPO on the exploration's pairs, GRPO for the steps asked
    from actune.quickstart.objectives import objective_train_config

    dpo, grpo = (objective_train_config(run, "react", o) for o in ("dpo", "grpo"))
    merged = str(tmp_path / "react" / "round2" / "adapter" / "merged")
    assert (dpo.objective, dpo.base_model, dpo.dataset) == ("dpo", merged, tmp_path / "react" / "dpo" / "pairs")
    assert (grpo.objective, grpo.base_model, grpo.max_steps) == ("grpo", merged, 3)
    assert grpo.output_dir == tmp_path / "react" / "grpo" / "adapter"
    # pairs: the exploration first, then each SFT round's store that exists
    from actune.quickstart.objectives import pair_stores

    (tmp_path / "react" / "round1").mkdir(parents=True)
    (tmp_path / "react" / "round1" / "trajectories.jsonl").write_text("")
    assert pair_stores(run, "react") == [tmp_path / "react" / "dpo" / "explore.jsonl",
                                         tmp_path / "react" / "round1" / "trajectories.jsonl"]


def test_after_sft_needs_a_merged_sft_model_and_names_a_bad_objective_key() -> None:
    with pytest.raises(ConfigError, match="needs train.merge=true"):
        load_quickstart("smoke", ["after_sft=[dpo]", "train.merge=false"])
    with pytest.raises(ConfigError, match="objective_train.grpo"):
        load_quickstart("smoke", ["after_sft=[grpo]", "objective_train={grpo: {no_such_key: 1}}"])
