"""A round's export: each method's training set from its own episodes and, with mix_methods, the others'."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.fine_tune import export_method_round
from actune.quickstart.layout import Layout
from actune.quickstart.round_inputs import (
    export_methods,
)


def _kept(task_id: str, method: str, steps: list) -> "object":
    """A kept record of ``method`` (its own step format), as the loop writes it."""
    from actune.agent.render import instruction_for
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    t = Trajectory(task=TaskRecord(task_id, f"Who makes {task_id}?", "Sony", meta={"supporting_titles": [task_id]}),
                   method=method, steps=steps, prediction="Sony", correct=True, finish_reason="answered", run_id="r",
                   episode_id=f"{task_id}-{method}",
                   info={"env_info": {"titles": [task_id]}, "prompt": {"method": method, "env": "wiki", "finish_action": "finish",
                                    "instruction": instruction_for(method, "wiki", "(1) search[entity]\n(2) finish[answer]"),
                                    "question": f"Question: Who makes {task_id}?"}})
    return record_verdict(t, judge(t))


def _write_round1_stores(layout: Layout) -> None:
    from actune.records.trajectory import Step

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
    run = RunContext(cfg, layout, show_progress=False, log=lambda m: None)
    _write_round1_stores(layout)
    assert export_methods(cfg, "react") == (["react", "reflact"] if mix else ["react"])
    assert export_methods(cfg, "reflact") == ["reflact"]  # ReAct steps cannot become reflections
    export_method_round(run, "react", 1)
    export_method_round(run, "reflact", 1)
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


def test_a_round_that_adds_no_data_is_not_trained_and_uses_the_earlier_model(tmp_path: Path, monkeypatch) -> None:
    """Round 2 kept nothing new: its export is round 1's, so it trains nothing and is round 1's model everywhere
    (adapter, eval label, report); a round that adds data trains."""
    import json

    import actune.quickstart.fine_tune as fine_tune
    from actune.quickstart.evaluation import eval_config, round_model_label
    from actune.quickstart.report import training_rows

    trained = []
    monkeypatch.setattr(fine_tune, "train_in_child_process", lambda cfg: trained.append(cfg.output_dir))
    cfg = load_quickstart("smoke", ["methods=[react]", "rounds=3", "oracle_baseline=false"])
    layout = Layout(tmp_path)
    logs: list[str] = []
    run = RunContext(cfg, layout, show_progress=False, log=logs.append)
    _write_round1_stores(layout)
    layout.store("react", 2).parent.mkdir(parents=True)
    layout.store("react", 2).write_text("")  # round 2 kept nothing
    for r in (1, 2):
        export_method_round(run, "react", r)
        fine_tune.train_method_round(run, "react", r)
    assert trained == [layout.round_dir("react", 1) / "adapter"]  # round 2 was not trained
    assert json.loads((layout.round_dir("react", 2) / "same_as_round.json").read_text())["round"] == 1
    assert logs[-1].startswith("train react round 2: skipped, the round added no training data") and \
        logs[-1].endswith("its model is round 1's (tuned-r1)")
    assert layout.trained_round("react", 2) == 1 and layout.adapter("react", 2) == layout.adapter("react", 1)
    assert round_model_label(run, "react", 2) == "tuned-r1"
    # a round whose training set differs trains, on its own adapter (what differs is the export's to test)
    monkeypatch.setattr(fine_tune, "adds_no_data", lambda *a: False)
    fine_tune.train_method_round(run, "react", 3)
    assert trained[-1] == layout.round_dir("react", 3) / "adapter" and layout.trained_round("react", 3) == 3
    # eval: round 1's model once, round 2 under no name of its own
    assert [m.label for m in eval_config(run, "react").models] == ["prompted", "tuned-r1", "tuned-r3"]
    assert {"method": "react", "round": 2, "same_as": 1} in training_rows(cfg, layout)
