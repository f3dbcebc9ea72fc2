"""The quickstart's presets, stage plan, resume state and headline verdicts (no server: the smoke run
on the real server is tests/cli/test_quickstart_smoke.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.cli.quickstart_config import PRESETS, load_quickstart
from actune.cli.quickstart_report import headline_rows
from actune.cli.quickstart_run import (
    Layout,
    Stage,
    _load_state,
    _Pipeline,
    _save_state,
    estimate_seconds,
    export_methods,
    export_stores,
    plan_stages,
    round_train_config,
    time_left,
    train_base,
)
from actune.config import ConfigError


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_load_and_estimate(preset: str) -> None:
    cfg = load_quickstart(preset)
    assert cfg.passes and cfg.methods
    est = estimate_seconds(cfg, "cpu-bf16")
    assert set(est) == {"bootstrap", "train", "eval"} and all(v > 0 for v in est.values())


def test_smoke_is_small_and_full_meets_the_issue() -> None:
    smoke, full = load_quickstart("smoke"), load_quickstart("full")
    assert smoke.world.n_test <= 30 and smoke.bootstrap.target_correct <= 20
    assert full.world.n_test >= 300  # the issue's floor of held-out questions
    assert set(full.methods) == {"react", "reflact"} and full.rounds >= 2
    assert full.train.merge and smoke.train.merge  # eval serves merged weights at base speed


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


def test_unknown_preset_key_names_it() -> None:
    with pytest.raises(ConfigError, match="no_such_key"):
        load_quickstart("smoke", ["no_such_key=1"])


def test_stage_plan_for_two_methods_and_two_rounds(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke", ["methods=[react,reflact]", "rounds=2"])
    pipe = _Pipeline(cfg, Layout(tmp_path), show_progress=False, log=lambda m: None)
    names = [s.name for s in plan_stages(cfg, pipe, "cpu-fp32")]
    assert names == [
        "world", "bootstrap round 1",
        "export react round 1", "train react round 1", "export reflact round 1", "train reflact round 1",
        "bootstrap round 2",
        "export react round 2", "train react round 2", "export reflact round 2", "train reflact round 2",
        "eval react", "eval reflact", "report",
    ]
    est = {s.name: s.estimate_s for s in plan_stages(cfg, pipe, "cpu-fp32")}
    whole = estimate_seconds(cfg, "cpu-fp32")
    assert est["bootstrap round 1"] + est["bootstrap round 2"] == pytest.approx(whole["bootstrap"])
    assert est["eval react"] + est["eval reflact"] == pytest.approx(whole["eval"])
    # 100 more test questions: round 1's server runs them for the prompted model (generic and type-matched prompts),
    # round 2's for round 1's model, the eval stage for round 2's (per method: prompted 1.0 / 1.77, tuned 0.63 / 0.75)
    from actune.cli.quickstart_run import _estimate

    def grown(n_test: int) -> tuple[float, float, float]:
        e = _estimate(load_quickstart("smoke", ["methods=[react,reflact]", "rounds=2", f"world.n_test={n_test}"]),
                      "cpu-fp32")
        return e["bootstrap_rounds"][0], e["bootstrap_rounds"][1], e["eval"]

    (r1, r2, ev), (r1b, r2b, evb) = grown(20), grown(120)
    assert (r1b - r1) / (r2b - r2) == pytest.approx(2 * (1.0 + 1.77) / (0.63 + 0.75))
    assert (evb - ev) == pytest.approx(r2b - r2)


def test_state_resumes_the_same_config_and_refuses_another(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    cfg = load_quickstart("smoke")
    state = _load_state(layout, cfg)
    state["done"]["world"] = {"wall_s": 1.0}
    _save_state(layout, state)
    assert _load_state(layout, load_quickstart("smoke"))["done"] == {"world": {"wall_s": 1.0}}
    with pytest.raises(ConfigError, match=r"other settings \(differs in: seed\)"):
        _load_state(layout, load_quickstart("smoke", ["seed=7"]))


def test_a_run_stored_by_an_older_actune_resumes(tmp_path: Path) -> None:
    """Its config had agent max_steps (now episode_steps), no top-level model, and lacked keys added since."""
    layout = Layout(tmp_path)
    cfg = load_quickstart("smoke")
    old = cfg.model_dump(mode="json")
    del old["model"]
    for section in ("bootstrap", "eval"):
        old[section]["agent"]["max_steps"] = old[section]["agent"].pop("episode_steps")
        del old[section]["allow_mixed_store"]
    _save_state(layout, {"config": old, "done": {"world": {"wall_s": 1.0}}})
    state = _load_state(layout, cfg)
    current = {k: v for k, v in cfg.model_dump(mode="json").items() if k != "hardware_overrides"}
    assert state["done"] == {"world": {"wall_s": 1.0}} and state["config"] == current
    old["seed"] = 7  # a real difference is still refused, by name
    _save_state(layout, {"config": old, "done": {}})
    with pytest.raises(ConfigError, match=r"differs in: seed\)"):
        _load_state(layout, cfg)


def test_more_rounds_extend_a_run_and_redo_only_eval_and_report(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = _load_state(layout, load_quickstart("smoke", ["rounds=1"]))
    state["done"] = {name: {"wall_s": 1.0} for name in ("world", "bootstrap round 1", "export react round 1",
                                                       "train react round 1", "eval react", "report")}
    _save_state(layout, state)
    grown = _load_state(layout, load_quickstart("smoke", ["rounds=2"]))
    assert list(grown["done"]) == ["world", "bootstrap round 1", "export react round 1", "train react round 1"]
    assert grown["config"]["rounds"] == 2
    _save_state(layout, grown)
    with pytest.raises(ConfigError, match="only --rounds may grow"):
        _load_state(layout, load_quickstart("smoke", ["rounds=1"]))


def test_tasks_left_for_round_two_are_the_unsolved_ones(tmp_path: Path) -> None:
    from actune.judge import judge, record_verdict
    from actune.trajectory import TaskRecord, Trajectory

    def record(task_id: str, correct: bool, grounded: bool) -> Trajectory:
        t = Trajectory(task=TaskRecord(task_id, "q?", "a", meta={"supporting_titles": ["A"]}), method="react",
                       prediction="a", correct=correct, finish_reason="answered",
                       info={"env_info": {"titles": ["A"] if grounded else []}})
        return record_verdict(t, judge(t))

    cfg = load_quickstart("smoke")
    layout = Layout(tmp_path)
    pipe = _Pipeline(cfg, layout, show_progress=False, log=lambda m: None)
    store = layout.store("react", 1)
    store.parent.mkdir(parents=True)
    with store.open("w") as f:
        f.write(record("t1", correct=True, grounded=True).to_json() + "\n")
        f.write(record("t2", correct=True, grounded=False).to_json() + "\n")
    assert pipe.solved_tasks("react", 2) == {"t1"}


@pytest.mark.parametrize("merged", [True, False], ids=["merged", "adapter"])
def test_a_later_round_serves_the_previous_model_as_the_eval_stage_names_it(tmp_path: Path, merged: bool) -> None:
    from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
    from actune.eval.run import adapter_name, plan_models

    cfg = load_quickstart("smoke", [f"train.merge={str(merged).lower()}"])
    layout = Layout(tmp_path)
    pipe = _Pipeline(cfg, layout, show_progress=False, log=lambda m: None)
    adapter = layout.adapter("react", 1)
    for folder in (adapter, adapter / "merged") if merged else (adapter,):
        folder.mkdir(parents=True)
        save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), folder)
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")

    serve, request = pipe.eval_serving("react", "tuned-r1")
    # what round 2's server is started as and asked for is what the eval stage plans for tuned-r1, with round 2's
    # adapter not trained yet and with it trained (names are chosen among every model's bases, all known up front)
    planned = plan_models(pipe.eval_config("react"), cfg.serve, ["tuned-r1"])[0]
    assert (serve.model, serve.served_name, request) == (planned.base, planned.record.name, planned.request_model)
    if merged:
        assert serve.model == serve.served_name == request == str(adapter / "merged") and serve.adapters == {}
    else:
        name = adapter_name("tuned-r1", adapter)
        assert (serve.model, serve.served_name) == (cfg.serve.model, cfg.serve.served_name)
        assert request == name and serve.adapters == {name: str(adapter)}
    prompted = plan_models(pipe.eval_config("react"), cfg.serve, ["prompted"])[0]
    assert prompted.record.name == cfg.serve.served_name  # round 1's server, as bootstrap starts it
    round2 = layout.adapter("react", 2)
    for folder in (round2, round2 / "merged") if merged else (round2,):
        folder.mkdir(parents=True)
        save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), folder)
    later = plan_models(pipe.eval_config("react"), cfg.serve, ["prompted", "tuned-r1"])  # the eval stage's plan
    assert [(p.base, p.record.name, p.request_model) for p in later] == [
        (prompted.base, prompted.record.name, prompted.request_model),
        (planned.base, planned.record.name, planned.request_model)]


def _report(prompted: tuple[float, float, float], tuned: tuple[float, float, float], b: int, c: int,
            p: float) -> dict:
    def est(x: tuple[float, float, float]) -> dict:
        return {"mean": x[0], "low": x[1], "high": x[2], "n": 300}

    cmp = {"metric": "correct_grounded", "tasks": 300, "pairs": 300, "mean_a": prompted[0], "mean_b": tuned[0],
           "diff": est((tuned[0] - prompted[0], 0.0, 0.0)), "b": b, "c": c, "p_value": p}
    return {"models": [
        {"label": "prompted", "model": "m", "metrics": {"correct_grounded": est(prompted), "correct": est(prompted)},
         "vs_first": None},
        {"label": "tuned-r1", "model": "m", "metrics": {"correct_grounded": est(tuned), "correct": est(tuned)},
         "vs_first": {"correct_grounded": cmp}},
    ]}


def test_headline_bar_met_and_missed() -> None:
    met = headline_rows(_report((0.10, 0.07, 0.13), (0.30, 0.25, 0.35), b=5, c=65, p=1e-12), "react")
    assert met[1]["bar"] == {"ratio": True, "points": True, "p": True, "met": True}
    assert met[1]["vs_prompted"]["ratio"] == pytest.approx(3.0)
    assert "bar" not in met[0]
    # +10 points but only 1.5x, and not significant: a miss on two counts
    missed = headline_rows(_report((0.20, 0.15, 0.25), (0.30, 0.25, 0.35), b=20, c=35, p=0.058), "react")
    assert missed[1]["bar"] == {"ratio": False, "points": True, "p": False, "met": False}


def test_report_json_is_written_with_rows(tmp_path: Path) -> None:
    from actune.cli.quickstart_report import write_quickstart_report

    cfg = load_quickstart("smoke")
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    paths = write_quickstart_report(cfg, layout)
    data = json.loads(paths["json"].read_text())
    assert [r["label"] for r in data["rows"]] == ["prompted", "tuned-r1"]
    assert "| tuned-r1 | 0.300 [0.200, 0.400] |" in paths["md"].read_text()
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_report_says_what_each_tuned_model_learnt_from(tmp_path: Path) -> None:
    from actune.cli.quickstart_report import write_quickstart_report

    cfg = load_quickstart("smoke", ["rounds=2"])
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    layout.dataset("react", 1).mkdir(parents=True)
    (layout.dataset("react", 1) / "export_summary.json").write_text(json.dumps({
        "exported": 161, "tasks": 131,
        "methods": {"react": {"exported": 109}, "reflact": {"exported": 52}, "cot": {"exported": 0}},
        "by_store": {str(layout.store("react", 1)): 70, str(layout.store("reflact", 1)): 52,
                     str(layout.imported(0)): 39, "/data/world/trajectories.jsonl": 0}}))
    layout.adapter("react", 1).mkdir(parents=True)
    (layout.adapter("react", 1) / "training_meta.json").write_text(json.dumps({
        "train_examples": 147, "dev_examples": 14, "steps": 111, "best_step": 95}))
    layout.dataset("react", 2).mkdir(parents=True)  # round 2 exported but not trained yet: left out
    (layout.dataset("react", 2) / "export_summary.json").write_text(json.dumps({"exported": 1, "tasks": 1, "methods": {}}))
    paths = write_quickstart_report(cfg, layout)
    assert json.loads(paths["json"].read_text())["training"] == [{
        "method": "react", "round": 1, "exported": 161, "tasks": 131, "by_source": {"react": 109, "reflact": 52},
        "by_store": {"react/round1": 70, "reflact/round1": 52, "imports/0": 39, "/data/world/trajectories.jsonl": 0},
        "train_examples": 147, "dev_examples": 14, "steps": 111, "best_step": 95, "trained_on": "base",
        "epochs": 1.0, "lora_r": 16}]
    assert ("| react tuned-r1 | base | 161 (react 109, reflact 52) | react/round1 70, reflact/round1 52, imports/0 39, "
            "/data/world/trajectories.jsonl 0 | 131 | 147 / 14 | 111 (95) | 1 | 16 |") in paths["md"].read_text()


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


def test_estimate_counts_reflact_slower_and_sparser_than_react() -> None:
    react = estimate_seconds(load_quickstart("full", ["methods=[react]", "rounds=1"]), "cpu-bf16")
    reflact = estimate_seconds(load_quickstart("full", ["methods=[reflact]", "rounds=1"]), "cpu-bf16")
    both = estimate_seconds(load_quickstart("full", ["methods=[react,reflact]", "rounds=1"]), "cpu-bf16")
    assert reflact["eval"] > react["eval"] and reflact["bootstrap"] > react["bootstrap"]
    server = 40.0  # one start per round, shared by every method's round-1 passes
    assert both["bootstrap"] == pytest.approx(react["bootstrap"] + reflact["bootstrap"] - server)
    assert both["train"] == pytest.approx(react["train"] + reflact["train"])


def test_concurrency_speedup_follows_the_measured_table() -> None:
    from actune.cli.quickstart_run import concurrency_speedup

    assert concurrency_speedup(16) == 1.0 and concurrency_speedup(32) == pytest.approx(1.21)
    assert concurrency_speedup(8) == pytest.approx(0.5)  # half the slots of the measured rate
    assert 1.21 < concurrency_speedup(48) < 1.34 and concurrency_speedup(256) == pytest.approx(1.34)
    fast = load_quickstart("full", ["bootstrap.concurrency=64", "eval.concurrency=64"])
    slow = load_quickstart("full", ["bootstrap.concurrency=16", "eval.concurrency=16"])
    assert estimate_seconds(fast, "cpu-bf16")["eval"] < estimate_seconds(slow, "cpu-bf16")["eval"]


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


def test_a_run_resumes_when_only_the_hardware_table_changed(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = _load_state(layout, load_quickstart("smoke"))
    state["done"]["world"] = {"wall_s": 1.0}
    _save_state(layout, state)
    grown = load_quickstart("smoke", ["hardware_overrides={cuda: [rounds=3]}"])
    assert _load_state(layout, grown)["done"] == {"world": {"wall_s": 1.0}}
    assert "hardware_overrides" not in json.loads(layout.state.read_text())["config"]


def test_full_estimate_matches_the_measured_whole_runs() -> None:
    # seed 1 (AMD EPYC, 1h57m: bootstrap 36, train 52.5, eval 28.6 min) and seed 4 (Intel Xeon with AMX,
    # 2h03m: bootstrap 32, train 60, eval 31 min), README. Both ran every eval model on a server of its own: the
    # bootstrap rounds' servers now run all but the last round's (2 starts fewer a method, 40 s each)
    est = {k: v / 60 for k, v in estimate_seconds(load_quickstart("full"), "cpu-bf16").items()}
    assert 55 <= est["bootstrap"] + est["eval"] <= 66 and 40 <= est["train"] <= 62 and est["eval"] <= 10
    assert 105 <= sum(est.values()) <= 125


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


def test_a_stage_stopped_part_way_keeps_its_time_and_the_rerun_adds_it(tmp_path: Path) -> None:
    from actune.cli.quickstart_run import Stage, run_stage

    layout = Layout(tmp_path)
    state = _load_state(layout, load_quickstart("smoke"))

    def stopped() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stage(Stage("bootstrap round 1", 1.0, stopped), state, layout)
    stored = json.loads(layout.state.read_text())
    assert stored["done"] == {} and stored["partial"]["bootstrap round 1"]["runs"] == 1
    stored["partial"]["bootstrap round 1"]["wall_s"] = 600.0  # as if the first run had lasted ten minutes
    _save_state(layout, stored)

    resumed = _load_state(layout, load_quickstart("smoke"))
    run_stage(Stage("bootstrap round 1", 1.0, lambda: None), resumed, layout)
    stored = json.loads(layout.state.read_text())
    assert stored["partial"] == {}
    assert stored["done"]["bootstrap round 1"]["runs"] == 2
    assert 600.0 <= stored["done"]["bootstrap round 1"]["wall_s"] < 601.0


def test_smoke_shrinks_on_a_cpu_without_bf16_and_still_runs_every_stage() -> None:
    bf16, fp32 = load_quickstart("smoke", hardware="cpu-bf16"), load_quickstart("smoke", hardware="cpu-fp32")
    assert bf16 == load_quickstart("smoke")  # nothing changes where bf16 is native
    assert (fp32.world.n_test, fp32.bootstrap.target_correct, fp32.round_attempts) == (16, 12, 1)
    assert fp32.eval.concurrency >= fp32.world.n_test  # one eval wave per model
    assert fp32.rounds == 2 and fp32.oracle_baseline and fp32.train.merge  # every stage and model kind stays
    as_is, shrunk = (sum(estimate_seconds(c, "cpu-fp32").values()) for c in (bf16, fp32))
    assert shrunk < 0.85 * as_is


def _kept(task_id: str, method: str, steps: list) -> "object":
    """A kept record of ``method`` (its own step format), as the loop writes it."""
    from actune.agent.render import instruction_for
    from actune.judge import judge, record_verdict
    from actune.trajectory import TaskRecord, Trajectory

    t = Trajectory(task=TaskRecord(task_id, f"Who makes {task_id}?", "Sony", meta={"supporting_titles": [task_id]}),
                   method=method, steps=steps, prediction="Sony", correct=True, finish_reason="answered", run_id="r",
                   episode_id=f"{task_id}-{method}",
                   info={"env_info": {"titles": [task_id]}, "prompt": {"method": method, "env": "wiki", "finish_action": "finish",
                                    "instruction": instruction_for(method, "wiki", "(1) search[entity]\n(2) finish[answer]"),
                                    "question": f"Question: Who makes {task_id}?"}})
    return record_verdict(t, judge(t))


def _write_round1_stores(layout: Layout) -> None:
    from actune.trajectory import Step

    def react(task_id: str) -> object:
        return _kept(task_id, "react", [Step("thought", f"Search {task_id}.", 1),
                                        Step("action", f"search[{task_id}]", 1, action_name="search", action_arg=task_id),
                                        Step("observation", f"{task_id} is made by Sony.", 1),
                                        Step("thought", "It is Sony.", 2),
                                        Step("answer", "finish[Sony]", 2, action_name="finish", action_arg="Sony")])

    def reflact(task_id: str) -> object:
        return _kept(task_id, "reflact", [Step("reflection", "The maker is not known yet.", 1),
                                          Step("action", f"search[{task_id}]", 1, action_name="search", action_arg=task_id),
                                          Step("observation", f"{task_id} is made by Sony.", 1),
                                          Step("reflection", "The maker is Sony: the goal is reached.", 2),
                                          Step("answer", "FINAL ANSWER: Sony", 2, action_name="finish",
                                               action_arg="Sony")])

    for method, records in (("react", [react("t1")]), ("reflact", [reflact("t1"), reflact("t2")])):
        store = layout.store(method, 1)
        store.parent.mkdir(parents=True, exist_ok=True)
        store.write_text("".join(r.to_json() + "\n" for r in records))


@pytest.mark.parametrize("mix", [False, True])
def test_mix_methods_feeds_reflact_episodes_to_the_react_adapter_only(tmp_path: Path, mix: bool) -> None:
    from datasets import load_from_disk

    cfg = load_quickstart("smoke", ["methods=[react,reflact]", f"mix_methods={str(mix).lower()}"])
    layout = Layout(tmp_path)
    pipe = _Pipeline(cfg, layout, show_progress=False, log=lambda m: None)
    _write_round1_stores(layout)
    assert export_methods(cfg, "react") == (["react", "reflact"] if mix else ["react"])
    assert export_methods(cfg, "reflact") == ["reflact"]  # ReAct steps cannot become reflections
    pipe.export("react", 1)
    pipe.export("reflact", 1)
    react_rows = load_from_disk(str(layout.dataset("react", 1)))
    got = sorted((r["task_id"], r["source_method"]) for r in react_rows)
    if mix:  # t1 has its own ReAct episode first, then ReflAct's (cap 2 a task); t2 only ReflAct's
        assert got == [("t1", "react"), ("t1", "reflact"), ("t2", "reflact")]
        borrowed = next(r for r in react_rows if r["task_id"] == "t2")
        assert "Thought 1: The maker is not known yet.\n" in borrowed["text"]
        assert borrowed["text"].endswith("Thought 2: The maker is Sony: the goal is reached.\nAction 2: finish[Sony]\n")
    else:
        assert got == [("t1", "react")]
    reflact_rows = load_from_disk(str(layout.dataset("reflact", 1)))
    assert sorted((r["task_id"], r["source_method"]) for r in reflact_rows) == [("t1", "reflact"), ("t2", "reflact")]


def test_estimate_adds_the_borrowed_examples_to_react_training_only() -> None:
    alone = estimate_seconds(load_quickstart("full", ["bootstrap.attempts_per_task=1"]), "cpu-bf16")
    mixed = estimate_seconds(load_quickstart("full", ["bootstrap.attempts_per_task=1", "mix_methods=true"]), "cpu-bf16")
    assert (mixed["bootstrap"], mixed["eval"]) == (alone["bootstrap"], alone["eval"])  # no episode more
    react_alone = estimate_seconds(load_quickstart("full", ["bootstrap.attempts_per_task=1", "methods=[react]"]),
                                   "cpu-bf16")
    reflact_alone = alone["train"] - react_alone["train"]
    # ReAct's training grows by ReflAct's examples at ReAct's tokens per example; ReflAct's stays as it was
    assert mixed["train"] - alone["train"] == pytest.approx(reflact_alone * 335 / 500)


def _touch_stores(layout: Layout, methods: tuple[str, ...], rounds: tuple[int, ...]) -> None:
    for method in methods:
        for r in rounds:
            layout.store(method, r).parent.mkdir(parents=True, exist_ok=True)
            layout.store(method, r).touch()


def test_round_start_previous_trains_round_r_on_its_new_stores_and_the_previous_merged_model(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    _touch_stores(layout, ("react", "reflact"), (1, 2))
    base = load_quickstart("full", ["mix_methods=true"])
    prev = load_quickstart("full", ["mix_methods=true", "round_start=previous"])
    assert export_stores(base, layout, "react", 2) == [layout.store("react", 1), layout.store("react", 2),
                                                       layout.store("reflact", 1), layout.store("reflact", 2)]
    assert export_stores(prev, layout, "react", 2) == [layout.store("react", 2), layout.store("reflact", 2)]
    assert export_stores(prev, layout, "react", 1) == [layout.store("react", 1), layout.store("reflact", 1)]
    assert train_base(base, layout, "react", 2) == "smollm2-135m"
    assert train_base(prev, layout, "react", 1) == "smollm2-135m"
    assert train_base(prev, layout, "reflact", 2) == str(layout.adapter("reflact", 1) / "merged")


def test_round_start_and_round_epochs_per_method(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    _touch_stores(layout, ("react", "reflact"), (1, 2))
    cfg = load_quickstart("full", ["mix_methods=true", "round_start={react: previous}", "round_epochs={react: 2}"])
    assert export_stores(cfg, layout, "react", 2) == [layout.store("react", 2), layout.store("reflact", 2)]
    assert export_stores(cfg, layout, "reflact", 2) == [layout.store("reflact", 1), layout.store("reflact", 2)]
    react, reflact = (round_train_config(cfg, layout, m, 2) for m in ("react", "reflact"))
    assert (react.base_model, react.num_train_epochs) == (str(layout.adapter("react", 1) / "merged"), 2.0)
    assert (reflact.base_model, reflact.num_train_epochs) == ("smollm2-135m", 3.0)
    assert round_train_config(cfg, layout, "react", 1).num_train_epochs == 3.0


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


def test_estimate_with_round_start_previous_trains_each_round_on_its_new_examples_only() -> None:
    over = ["bootstrap.attempts_per_task=1", "methods=[react]"]
    one = estimate_seconds(load_quickstart("full", [*over, "rounds=1"]), "cpu-fp32")["train"]
    two = estimate_seconds(load_quickstart("full", over), "cpu-fp32")["train"]
    prev = estimate_seconds(load_quickstart("full", [*over, "round_start=previous"]), "cpu-fp32")["train"]
    # from the base model round 2 trains round 1's examples again; from the previous model only its new ones
    assert prev == pytest.approx(two - one)


def test_round_train_config_sets_each_rounds_data_base_and_epochs(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    cfg = load_quickstart("full", ["seed=8", "round_start=previous", "round_epochs=2"])
    one, two = (round_train_config(cfg, layout, "react", r) for r in (1, 2))
    assert (one.dataset, one.output_dir, one.base_model, one.num_train_epochs, one.seed) == (
        layout.dataset("react", 1), layout.adapter("react", 1), "smollm2-135m", 3.0, 8)
    assert (two.dataset, two.output_dir, two.base_model, two.num_train_epochs, two.seed) == (
        layout.dataset("react", 2), layout.adapter("react", 2), str(layout.adapter("react", 1) / "merged"), 2.0, 8)
    assert round_train_config(load_quickstart("full"), layout, "react", 2).num_train_epochs == 3.0


def test_estimate_counts_round_epochs_for_later_rounds_only() -> None:
    over = ["bootstrap.attempts_per_task=1", "methods=[react]", "round_start=previous"]
    one = estimate_seconds(load_quickstart("full", [*over, "rounds=1"]), "cpu-fp32")["train"]
    three = estimate_seconds(load_quickstart("full", over), "cpu-fp32")["train"]
    two = estimate_seconds(load_quickstart("full", [*over, "round_epochs=2"]), "cpu-fp32")["train"]
    assert two - one == pytest.approx((three - one) * 2 / 3)  # round 2 at 2 epochs of 3; round 1 unchanged


def test_estimate_applies_each_methods_round_start_and_epochs() -> None:
    over = ["bootstrap.attempts_per_task=1", "mix_methods=true"]
    def train(*more: str) -> float:
        return estimate_seconds(load_quickstart("full", [*over, *more]), "cpu-fp32")["train"]
    base, prev = train(), train("round_start=previous")
    react_prev = train("round_start={react: previous}")
    reflact_prev = train("round_start={reflact: previous}")
    assert base > react_prev > prev and base > reflact_prev > prev
    assert (base - react_prev) + (base - reflact_prev) == pytest.approx(base - prev)  # the methods add up
    assert train("round_start={react: previous}", "round_epochs={react: 2}") < react_prev


def test_report_says_a_later_round_trained_on_the_previous_model_for_its_epochs(tmp_path: Path) -> None:
    from actune.cli.quickstart_report import training_rows

    cfg = load_quickstart("smoke", ["rounds=2", "round_start=previous", "round_epochs=2"])
    layout = Layout(tmp_path)
    for r in (1, 2):
        layout.dataset("react", r).mkdir(parents=True)
        (layout.dataset("react", r) / "export_summary.json").write_text(json.dumps(
            {"exported": 10 * r, "tasks": 5 * r, "methods": {"react": {"exported": 10 * r}}}))
        layout.adapter("react", r).mkdir(parents=True)
        (layout.adapter("react", r) / "training_meta.json").write_text(json.dumps(
            {"train_examples": 9 * r, "dev_examples": r, "steps": 7 * r, "best_step": 7 * r}))
    assert [(t["round"], t["trained_on"], t["exported"], t["epochs"]) for t in training_rows(cfg, layout)] == [
        (1, "base", 10, cfg.train.num_train_epochs), (2, "tuned-r1", 20, 2.0)]


def test_report_rows_per_phrasing_pair_the_tuned_model_with_the_prompted_one(tmp_path: Path) -> None:
    from actune.cli.quickstart_report import write_quickstart_report

    report = _report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)
    est = {"mean": 0.25, "low": 0.2, "high": 0.3, "n": 120}
    cmp = {"metric": "correct_grounded", "tasks": 120, "pairs": 120, "mean_a": 0.1, "mean_b": 0.25,
           "diff": {"mean": 0.15, "low": 0.05, "high": 0.25, "n": 120}, "b": 4, "c": 22, "p_value": 0.00018}
    report["models"][0]["by_phrasing"] = {"new_phrasing": {"metrics": {"correct_grounded": {**est, "mean": 0.1, "low": 0.05,
                                                                                     "high": 0.16}},
                                                           "tasks": 120, "vs_first": None}}
    report["models"][1]["by_phrasing"] = {"new_phrasing": {"metrics": {"correct_grounded": est}, "tasks": 120,
                                                           "vs_first": {"correct_grounded": cmp}}}
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(json.dumps(report))
    paths = write_quickstart_report(load_quickstart("smoke"), layout)
    md = paths["md"].read_text()
    assert "| model | new_phrasing |" in md
    assert "| tuned-r1 | 0.250 [0.200, 0.300] (n=120); +15.0 pts, 4 / 22, p 0.00018 |" in md
    rows = json.loads(paths["json"].read_text())["rows"]
    assert rows[1]["by_phrasing"]["new_phrasing"]["vs_prompted"]["c"] == 22
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


HOTPOT_SMALL = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"
FIREACT_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_hotpotqa.jsonl"


def test_hotpotqa_source_plans_tasks_and_imports_and_exports_the_imported_store(tmp_path: Path) -> None:
    from actune.cli.quickstart_run import imported_stores

    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       f"imports=[{{path: {FIREACT_SAMPLE}, format: openai}}, "
                                       f"{{path: {tmp_path / 'world.jsonl'}, format: store}}]", "gold_paths=false"])
    layout = Layout(tmp_path / "run", cfg.source)
    assert layout.tasks_dir == tmp_path / "run" / "tasks"
    pipe = _Pipeline(cfg, layout, show_progress=False, log=lambda m: None)
    names = [s.name for s in plan_stages(cfg, pipe, "cpu-bf16")]
    assert names == ["tasks", "imports", "bootstrap round 1", "export react round 1", "train react round 1",
                     "eval react", "report"]
    # a store used as it is must exist; an imported set lands under the run, once
    pipe.world()
    with pytest.raises(ConfigError, match=r"imports\[1\].path: .*world.jsonl not found"):
        pipe.imports()
    (tmp_path / "world.jsonl").write_text("")
    pipe.imports()
    pipe.imports()
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match=r"imports\[0\]: .*empty.jsonl holds no records"):
        _Pipeline(cfg.model_copy(update={"imports": [cfg.imports[0].model_copy(update={"path": str(empty)})]}),
                  Layout(tmp_path / "run2", cfg.source), show_progress=False, log=lambda m: None).imports()
    from actune.trajectory import read_trajectories

    assert len(list(read_trajectories(layout.imported(0)))) == 3
    assert imported_stores(cfg, layout) == [layout.imported(0), tmp_path / "world.jsonl"]
    layout.store("react", 1).parent.mkdir(parents=True)
    layout.store("react", 1).write_text("")
    assert export_stores(cfg, layout, "react", 1) == [layout.store("react", 1), *imported_stores(cfg, layout)]
    # split seed 0 leaves the dev question on "Maria Callas" to train, beside the train file's one on that page
    assert json.loads((layout.tasks_dir / "tasks.json").read_text())["counts"] == {"train": 6, "dev": 1, "test": 5}
    # the bootstrap and eval stages read the task source's files
    assert pipe._tasks("test").path == str(layout.tasks_dir / "test.jsonl")
    assert pipe.eval_config("react").env.corpus == str(layout.tasks_dir / "corpus.jsonl")


def test_gold_paths_stage_writes_the_training_questions_paths_and_exports_them_last(tmp_path: Path) -> None:
    from actune.cli.quickstart_run import imported_stores
    from actune.trajectory import read_trajectories

    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       "imports=[]", "gold_paths=true"])
    layout = Layout(tmp_path / "run", cfg.source)
    pipe = _Pipeline(cfg, layout, show_progress=False, log=lambda m: None)
    assert [s.name for s in plan_stages(cfg, pipe, "cpu-bf16")][:3] == ["tasks", "gold paths", "bootstrap round 1"]
    pipe.world()
    pipe.gold_paths()
    written = list(read_trajectories(layout.gold_paths))
    train_ids = {json.loads(line)["id"] for line in (layout.tasks_dir / "train.jsonl").read_text().splitlines()}
    assert written and {t.task.id for t in written} <= train_ids
    assert all(t.info["verdict"]["kept"] and t.info["verdict"]["grounded"] for t in written)
    pipe.gold_paths()  # resumed: nothing written twice
    assert len(list(read_trajectories(layout.gold_paths))) == len(written)
    assert imported_stores(cfg, layout) == [layout.gold_paths]
    # each training question is one more example of 1.5 world ReAct examples' length
    plain = estimate_seconds(load_quickstart("hotpotqa", ["imports=[]", "gold_paths=false"]), "cpu-bf16")["train"]
    epochs = load_quickstart("hotpotqa").train.num_train_epochs
    assert estimate_seconds(load_quickstart("hotpotqa", ["imports=[]", "gold_paths=true"]), "cpu-bf16")["train"] \
        - plain == pytest.approx(int(1.5 * 661) * 335 * epochs / 240)
    assert load_quickstart("fever", ["gold_paths=true"]).gold_paths  # FEVER claims have paths of their own


def test_imported_records_add_training_time_to_the_estimate(tmp_path: Path) -> None:
    plain = estimate_seconds(load_quickstart("hotpotqa", ["imports=[]"]), "cpu-bf16")["train"]
    cfg = load_quickstart("hotpotqa", [f"imports=[{{path: {FIREACT_SAMPLE}, format: openai}}]"])
    # 3 records, each one more example of about a world ReAct example's 335 tokens, the preset's 1 epoch, 240 tokens/s
    assert estimate_seconds(cfg, "cpu-bf16")["train"] - plain == pytest.approx(3 * 335 * 1 / 240)


def test_a_pilot_evaluates_on_the_dev_questions_and_never_reads_the_test_file(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke", ["eval_split=dev"])
    pipe = _Pipeline(cfg, Layout(tmp_path), show_progress=False, log=lambda m: None)
    assert pipe.eval_config("react").tasks.path == str(tmp_path / "world" / "dev.jsonl")
    # the ETA counts the dev questions: 10 instead of 20
    from actune.cli.quickstart_run import _estimate

    assert cfg.split_sizes() == (40, 10) and load_quickstart("smoke").split_sizes() == (40, 20)
    assert _estimate(cfg, "cpu-bf16")["eval"] < _estimate(load_quickstart("smoke"), "cpu-bf16")["eval"]


def test_round_one_estimate_asks_no_more_tasks_than_the_passes_limits() -> None:
    from actune.cli.quickstart_run import _estimate

    # smoke: 40 training tasks x 2 attempts, a keep target above what they can give; limits of 5 + 5 tasks
    unlimited = load_quickstart("smoke", ["bootstrap.target_correct=400", "oracle_baseline=false", "rounds=1"])
    limited = load_quickstart("smoke", ["bootstrap.target_correct=400", "oracle_baseline=false", "rounds=1",
                                        "passes=[{kind: single, limit: 5}, {kind: bridge, limit: 5}]"])
    e0, e1 = _estimate(unlimited, "cpu-bf16"), _estimate(limited, "cpu-bf16")
    # 80 episodes against 20, 16 at once (the measured rate: 3,000 an hour); server start and eval alike
    assert e0["bootstrap_rounds"][0] - e1["bootstrap_rounds"][0] == pytest.approx((80 - 20) / 3000.0 * 3600)


def test_fever_source_writes_claims_and_runs_the_fever_environment(tmp_path: Path) -> None:
    fever_small = Path(__file__).resolve().parents[1] / "data" / "fever_small"
    cfg = load_quickstart("fever", [f"fever.data_dir={fever_small}", "fever.n_test=3", "fever.n_dev=3"])
    layout = Layout(tmp_path, cfg.source)
    pipe = _Pipeline(cfg, layout, show_progress=False, log=lambda m: None)
    assert [s.name for s in plan_stages(cfg, pipe, "cpu-bf16")][:2] == ["tasks", "bootstrap round 1"]
    pipe.world()
    assert json.loads((layout.tasks_dir / "tasks.json").read_text())["source"] == "fever"
    ecfg = pipe.eval_config("react")
    assert ecfg.env.name == "fever" and ecfg.env.corpus == str(layout.tasks_dir / "corpus.jsonl")
    from actune.tasks.loading import load_tasks

    assert {t.env for t in load_tasks(ecfg.tasks)} == {"fever"}  # label accuracy, FEVER's finish


def test_a_replayed_import_trains_on_the_corpus_and_says_when_no_record_fits(tmp_path: Path) -> None:
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       f"imports=[{{path: {FIREACT_SAMPLE}, format: openai, replay: true}}]"])
    layout = Layout(tmp_path, cfg.source)
    logs: list[str] = []
    pipe = _Pipeline(cfg, layout, show_progress=False, log=logs.append)
    pipe.world()
    # FireAct's searches are free-text queries for Google: none opens a page of this corpus
    with pytest.raises(ConfigError, match=r"imports\[0\].replay: none of the 3 records' searches all open a page"):
        pipe.imports()
    assert "imports[0]: replayed 0 of 3 records in this run's corpus (3 left out" in logs[-1]
    assert layout.imported_as_released(0).is_file()


def test_the_report_gives_the_command_that_reruns_the_run_with_secrets_masked(tmp_path: Path) -> None:
    from actune.cli.quickstart import reproduce_command
    from actune.cli.quickstart_report import write_quickstart_report

    command = reproduce_command("full", tmp_path / "run", ["world.phrasings=families", "serve.api_key=sk-123"], 21,
                                None)
    assert command == (f"actune quickstart --preset full --seed 21 --out {tmp_path / 'run'} world.phrasings=families "
                       "'serve.api_key=***'")
    layout = Layout(tmp_path / "run")
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    layout.state.write_text(json.dumps({"done": {}, "command": command}))
    md = write_quickstart_report(load_quickstart("smoke"), layout)["md"].read_text()
    assert f"Reproduce: `{command}` (the same folder resumes)." in md and "sk-123" not in md
    # a secret inside a mapping given as a value is masked too; a special token's name is not a secret
    assert reproduce_command("full", "o", ["serve={api_key: sk-9, port: 1}", "train.sft.eos_token=<e>"], None,
                             None) == "actune quickstart --preset full --out o 'serve=***' 'train.sft.eos_token=<e>'"


MULTIMETHOD = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_multimethod.jsonl"


def test_imports_rerun_after_rejections_and_refuse_a_set_that_asks_a_test_question(tmp_path: Path) -> None:
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       f"imports=[{{path: {MULTIMETHOD}, format: openai}}]"])
    layout = Layout(tmp_path / "run", cfg.source)
    logs: list[str] = []
    pipe = _Pipeline(cfg, layout, show_progress=False, log=logs.append)
    pipe.world()
    pipe.imports()
    pipe.imports()  # all imported before, one record rejected (a failed episode): a rerun goes on
    assert logs[-1] == f"imports[0]: 0 of 4 records imported from {MULTIMETHOD} (4 rejected)"
    # a teacher's record on one of this run's test questions is refused, naming it
    question = json.loads((layout.tasks_dir / "test.jsonl").read_text().splitlines()[0])["question"]
    leaky = tmp_path / "leaky.jsonl"
    leaky.write_text(json.dumps({"messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "Thought: I know it.\nAction: finish[x]"},
        {"role": "user", "content": "Observation: Episode finished, reward = True"}]}) + "\n")
    cfg = cfg.model_copy(update={"imports": [type(cfg.imports[0])(path=str(leaky))]})
    pipe = _Pipeline(cfg, layout, show_progress=False, log=logs.append)
    with pytest.raises(ConfigError, match=r"imports\[0\]: 1 records of .* ask a dev or test question"):
        pipe.imports()


def test_a_missing_import_is_refused_before_any_stage_runs(tmp_path: Path) -> None:
    from actune.cli.quickstart_run import run_quickstart

    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}",
                                       f"imports=[{{path: {tmp_path / 'nowhere.jsonl'}, format: openai}}]"])
    with pytest.raises(ConfigError, match=r"imports\[0\].path: .*nowhere.jsonl not found"):
        run_quickstart(cfg, tmp_path / "run", show_progress=False, log=lambda m: None)
    assert not (tmp_path / "run" / "tasks").exists()


def test_fever_refuses_the_oracle_prompt_and_a_pilot_report_says_dev(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="oracle_baseline: FEVER claims have no kind"):
        load_quickstart("fever", ["oracle_baseline=true"])
    from actune.cli.quickstart_report import write_quickstart_report

    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    md = write_quickstart_report(load_quickstart("smoke", ["eval_split=dev"]), layout)["md"].read_text()
    assert "Means over held-out dev questions (a pilot: not a result)" in md
