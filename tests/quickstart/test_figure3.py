"""``formats``, the ReAct paper's Figure 3 at a run's scale: its config checks, its stages in the plan, the same
episodes exported in every format, each format's eval (prompted vs tuned in its own method), the report's table and
adding it to a finished run. No server: the real run is tests/quickstart/test_figure3_smoke.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.agent.render import instruction_for
from actune.bootstrap.export import ExportError
from actune.config import ConfigError
from actune.judge import judge, record_verdict
from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import estimate_seconds, estimate_stages
from actune.quickstart.formats import format_eval_config, format_train_config
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import plan_stages
from actune.quickstart.report import write_quickstart_report
from actune.quickstart.state import load_state, save_state
from actune.records.trajectory import Step, TaskRecord, Trajectory, write_trajectories

FIGURE3 = ["formats=[standard,cot,act,react]"]
ONE_ROUND = ["methods=[react]", "rounds=1", *FIGURE3]


def run_of(tmp_path: Path, overrides: list[str] = ONE_ROUND) -> RunContext:
    cfg = load_quickstart("smoke", [*overrides, f"bootstrap.env.index_dir={tmp_path / 'index'}"])
    return RunContext(cfg, Layout(tmp_path / "run"), show_progress=False, log=lambda m: None)


def test_formats_config_is_checked() -> None:
    assert load_quickstart("smoke").formats == []
    assert load_quickstart("smoke", FIGURE3).formats == ["standard", "cot", "act", "react"]
    with pytest.raises(ConfigError, match="name each format once"):
        load_quickstart("smoke", ["formats=[cot,cot]"])
    with pytest.raises(ConfigError, match=r"methods must include react \(not \['reflact'\]\)"):
        load_quickstart("smoke", ["methods=[reflact]", *FIGURE3])
    with pytest.raises(ConfigError, match="formats"):
        load_quickstart("smoke", ["formats=[reflact]"])  # ReAct's thoughts are no goal-state reflections
    with pytest.raises(ConfigError, match="standard, cot answer at once, with no action to call as a tool"):
        load_quickstart("smoke", ["train.wire_format=tools", *FIGURE3])
    with pytest.raises(ConfigError, match="methods"):
        load_quickstart("smoke", ["methods=[cot]"])  # the baselines are trained through formats only


def test_stage_plan_with_formats(tmp_path: Path) -> None:
    run = run_of(tmp_path)
    stages = plan_stages(run, "cpu-bf16")
    assert [s.name for s in stages] == [
        "world", "bootstrap round 1", "export react round 1", "train react round 1", "eval react",
        "export format standard", "export format cot", "export format act", "export format react",
        "eval formats prompted",
        "train format standard", "train format cot", "train format act", "train format react",
        "eval format standard", "eval format cot", "eval format act", "eval format react", "report"]
    est = {s.name: s.estimate_s for s in stages}
    formats = sum(v for k, v in est.items() if "format" in k and not k.startswith("export"))
    assert formats == pytest.approx(estimate_seconds(run.cfg, "cpu-bf16")["formats"])
    # the same examples, shorter in Standard than in ReAct; a format's tuned eval costs less than its prompted one
    assert est["train format standard"] < est["train format cot"] < est["train format act"] < est["train format react"]
    off = estimate_stages(load_quickstart("smoke", ["methods=[react]", "rounds=1"]), "cpu-bf16")
    assert (off.formats_train, off.formats_prompted, off.formats_eval) == ({}, 0.0, {})
    assert [s.name for s in plan_stages(run_of(tmp_path, ["methods=[react]", "rounds=1"]), "cpu-bf16")] == [
        "world", "bootstrap round 1", "export react round 1", "train react round 1", "eval react", "report"]


CORPUS = [{"title": "Walkman", "sentences": ["Walkman is a brand made by Sony."]},
          {"title": "Danube", "sentences": ["The Danube is 2,850 km long."]}]


def episode(task: str, attempt: int, thought: str, answer: str, method: str = "react",
            correct: bool = True) -> Trajectory:
    """A ReAct record of the wiki env as the loop writes it (a Standard one with ``method="standard"``)."""
    acting = [Step("thought", thought, 1, tokens=5), Step("action", "search[Walkman]", 1, action_name="search",
                                                         action_arg="Walkman"),
              Step("observation", "Walkman is a brand made by Sony.", 1), Step("thought", f"It is {answer}.", 2),
              Step("answer", f"finish[{answer}]", 2, action_name="finish", action_arg=answer)]
    steps = acting if method == "react" else [Step("answer", answer, 1, action_name="answer", action_arg=answer)]
    t = Trajectory(task=TaskRecord(task, f"What about {task}?", answer), method=method, steps=steps,
                   prediction=answer, correct=correct, attempt=attempt, run_id="r", episode_id=f"{method}-{task}-{attempt}",
                   info={"prompt": {"method": method, "env": "wiki", "instruction": instruction_for(method, "wiki", "x"),
                                    "question": f"Question: What about {task}?", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def write_round1(run: RunContext) -> None:
    """Round 1's ReAct store (t1 kept twice, t2 failed then kept, t3 failed) and the run's corpus."""
    run.layout.tasks_dir.mkdir(parents=True)
    (run.layout.tasks_dir / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in CORPUS))
    run.layout.store("react", 1).parent.mkdir(parents=True)
    write_trajectories(run.layout.store("react", 1), [
        episode("t1", 0, "Search the Walkman.", "Sony"), episode("t1", 1, "Other words entirely here.", "Sony"),
        episode("t2", 0, "Guess.", "Zeiss", correct=False), episode("t2", 1, "Look.", "Sony"),
        episode("t3", 0, "Guess.", "Nokia", correct=False)])


def exported(run: RunContext, fmt: str) -> list[dict]:
    from datasets import load_from_disk

    return load_from_disk(str(run.layout.format_dataset(fmt))).to_list()


def test_every_format_exports_the_same_episodes_one_a_task(tmp_path: Path) -> None:
    from actune.envs.config import EnvConfig
    from actune.envs.factory import make_env

    run = run_of(tmp_path)
    write_round1(run)
    for stage in plan_stages(run, "cpu-bf16"):
        if stage.name.startswith("export format"):
            stage.run()
    episodes = {f: [(r["task_id"], r["episode_id"], r["steps_method"]) for r in exported(run, f)]
                for f in run.cfg.formats}
    assert episodes == {f: [("t1", "react-t1-0", f), ("t2", "react-t2-1", f)] for f in run.cfg.formats}
    wiki = make_env(EnvConfig(name="wiki", corpus=str(run.layout.tasks_dir / "corpus.jsonl"),
                              index_dir=str(tmp_path / "index")))
    head = instruction_for("act", "wiki", wiki.describe_actions()) + "\nQuestion: What about t1?\n"
    assert exported(run, "act")[0]["text"] == head + (
        "Action 1: search[Walkman]\nObservation 1: Walkman is a brand made by Sony.\nAction 2: finish[Sony]\n")
    assert exported(run, "cot")[0]["text"].endswith(
        "Thought: Let's think step by step. Search the Walkman. It is Sony.\nAnswer: Sony\n")
    assert exported(run, "standard")[1]["text"].endswith("Question: What about t2?\nAnswer: Sony\n")
    summary = json.loads((run.layout.format_dataset("cot") / "export_summary.json").read_text())
    assert (summary["exported"], summary["tasks"], summary["steps_method"]) == (2, 2, "cot")


def test_an_export_that_would_learn_from_other_episodes_is_refused(tmp_path: Path) -> None:
    """An imported Standard answer of a task ReAct never solved becomes a ReAct and an Act example, never a chain of
    thought (nothing is invented): the formats would not share their data, and the CoT export says so."""
    imported = tmp_path / "imported.jsonl"
    write_trajectories(imported, [episode("t3", 0, "", "Nokia", method="standard")])
    run = run_of(tmp_path, [*ONE_ROUND, f"imports=[{{path: {imported}, format: store}}]"])
    write_round1(run)
    stages = {s.name: s for s in plan_stages(run, "cpu-bf16")}
    stages["export format act"].run()
    assert [r["task_id"] for r in exported(run, "act")] == ["t1", "t2", "t3"]
    with pytest.raises(ExportError, match=r"the cot export holds other episodes than the react one \(2 against 3; "
                                          r"e\.g\. \[\('.*imported\.jsonl', 'standard-t3-0'\)\]\)"):
        stages["export format cot"].run()
    assert not run.layout.format_dataset("cot").exists()


def test_each_format_is_evaluated_prompted_and_tuned_in_its_own_method(tmp_path: Path) -> None:
    from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
    from actune.eval.run import plan_models

    run = run_of(tmp_path, [*ONE_ROUND, "train.merge=false"])
    for fmt in run.cfg.formats:
        ecfg = format_eval_config(run, fmt)
        assert [m.label for m in ecfg.models] == ["prompted", "tuned"]
        assert (ecfg.agent.method, ecfg.out_dir, ecfg.tasks.path) == (
            fmt, run.layout.format_dir(fmt) / "eval", str(run.layout.tasks_dir / "test.jsonl"))
        adapter = run.layout.format_adapter(fmt)
        adapter.mkdir(parents=True)
        save_prompt_spec(PromptSpec(method=fmt, regime="zero_shot", wire="text"), adapter)
        (adapter / "adapter_model.safetensors").write_bytes(b"weights")
        prompted, tuned = plan_models(format_eval_config(run, fmt), run.cfg.serve)
        assert (prompted.agent.method, prompted.agent.regime) == (fmt, "few_shot")
        assert (tuned.agent.method, tuned.agent.regime, tuned.adapter) == (fmt, "zero_shot", adapter)
        tcfg = format_train_config(run, fmt)
        assert (tcfg.dataset, tcfg.output_dir) == (run.layout.format_dataset(fmt), adapter)
        assert tcfg.model_dump(exclude={"dataset", "output_dir"}) == \
            run.cfg.train.model_copy(update={"seed": run.cfg.seed}).model_dump(exclude={"dataset", "output_dir"})


def eval_report(prompted: float, tuned: float, b: int, c: int, p: float, grounded: float = 0.0) -> dict:
    def est(x: float) -> dict:
        return {"mean": x, "low": x - 0.05, "high": x + 0.05, "n": 20}

    cmp = {"metric": "correct", "tasks": 20, "pairs": 20, "mean_a": prompted, "mean_b": tuned,
           "diff": est(tuned - prompted), "b": b, "c": c, "p_value": p}
    metrics = {"correct_grounded": est(grounded), "correct": est(prompted)}
    return {"models": [{"label": "prompted", "model": "m", "metrics": metrics, "vs_first": None},
                       {"label": "tuned", "model": "m", "metrics": {**metrics, "correct": est(tuned)},
                        "vs_first": {"correct": cmp}}]}


def test_the_report_has_a_figure3_row_per_format(tmp_path: Path) -> None:
    run = run_of(tmp_path)
    layout = run.layout
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(json.dumps(eval_report(0.1, 0.3, 1, 5, 0.2)))
    for fmt, (a, b) in {"standard": (0.05, 0.15), "cot": (0.10, 0.20), "react": (0.10, 0.35)}.items():
        layout.format_eval_dir(fmt).mkdir(parents=True)
        (layout.format_eval_dir(fmt) / "report.json").write_text(json.dumps(eval_report(a, b, 1, 3, 0.625, 0.05)))
        layout.format_dataset(fmt).mkdir(parents=True)
        (layout.format_dataset(fmt) / "export_summary.json").write_text(json.dumps({"exported": 12, "tasks": 12}))
    layout.format_adapter("react").mkdir(parents=True)
    (layout.format_adapter("react") / "training_meta.json").write_text(json.dumps({"steps": 9}))
    paths = write_quickstart_report(run.cfg, layout)
    rows = json.loads(paths["json"].read_text())["formats"]
    assert [r["format"] for r in rows] == ["standard", "cot", "react"]  # act not evaluated yet: left out
    assert rows[0]["correct_grounded"] is None and rows[2]["correct_grounded"]["tuned"]["mean"] == 0.05
    md = paths["md"].read_text()
    assert "## Figure 3: step formats, prompted vs fine-tuned" in md
    assert ("| standard | 0.050 | 0.150 | +10.0 pts [+5.0, +15.0] | 1 / 3 | 0.62 | reads no pages | 12 (12) | None |"
            in md)
    assert "| react | 0.100 | 0.350 | +25.0 pts [+20.0, +30.0] | 1 / 3 | 0.62 | 0.050 → 0.050 | 12 (12) | 9 |" in md
    assert paths["figure3"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "Plot: `figure3.png`." in md


def test_formats_can_be_added_to_a_finished_run(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    state = load_state(layout, load_quickstart("smoke", ["rounds=1"]))
    state["done"] = {name: {"wall_s": 1.0} for name in ("world", "bootstrap round 1", "export react round 1",
                                                       "train react round 1", "eval react", "report")}
    save_state(layout, state)
    grown = load_state(layout, load_quickstart("smoke", ["rounds=1", *FIGURE3]))
    assert list(grown["done"]) == ["world", "bootstrap round 1", "export react round 1", "train react round 1",
                                   "eval react"]
    assert grown["config"]["formats"] == ["standard", "cot", "act", "react"]
    save_state(layout, grown)
    with pytest.raises(ConfigError, match=r"differs in: formats, seed\)"):
        load_state(layout, load_quickstart("smoke", ["rounds=1", "seed=3"]))
