"""The quickstart's bootstrap rounds: what a later round works on."""

from __future__ import annotations

from pathlib import Path

from actune.quickstart.bootstrap_rounds import solved_tasks
from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.layout import Layout


def test_tasks_left_for_round_two_are_the_unsolved_ones(tmp_path: Path) -> None:
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    def record(task_id: str, correct: bool, grounded: bool) -> Trajectory:
        t = Trajectory(task=TaskRecord(task_id, "q?", "a", meta={"supporting_titles": ["A"]}), method="react",
                       prediction="a", correct=correct, finish_reason="answered",
                       info={"env_info": {"titles": ["A"] if grounded else []}})
        return record_verdict(t, judge(t))

    cfg = load_quickstart("smoke")
    layout = Layout(tmp_path)
    run = RunContext(cfg, layout, show_progress=False, log=lambda m: None)
    store = layout.store("react", 1)
    store.parent.mkdir(parents=True)
    with store.open("w") as f:
        f.write(record("t1", correct=True, grounded=True).to_json() + "\n")
        f.write(record("t2", correct=True, grounded=False).to_json() + "\n")
    assert solved_tasks(run, "react", 2) == {"t1"}
