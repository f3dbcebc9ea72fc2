"""The quickstart's bootstrap rounds: what a later round works on."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import ConfigError
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


def _stored(task_id: str, attempt: int):
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    t = Trajectory(task=TaskRecord(task_id, "q?", "a"), method="react", attempt=attempt, prediction="b",
                   correct=False, finish_reason="answered")
    return record_verdict(t, judge(t))


def test_a_resumed_round_or_exploration_with_every_episode_stored_starts_no_server(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    import json

    from actune.quickstart import bootstrap_rounds, objectives

    def no_server(*args, **kwargs):
        raise AssertionError("a server was started for a stage with nothing left to run")

    monkeypatch.setattr(bootstrap_rounds, "serving", no_server)
    monkeypatch.setattr(objectives, "serving", no_server)
    cfg = load_quickstart("smoke", ["round_attempts=2", "explore.attempts=2"])
    layout = Layout(tmp_path)
    logs: list[str] = []
    run = RunContext(cfg, layout, show_progress=False, log=logs.append)
    layout.tasks_dir.mkdir(parents=True)
    (layout.tasks_dir / "train.jsonl").write_text("".join(
        json.dumps({"id": i, "question": "q?", "answer": "a"}) + "\n" for i in ("t1", "t2")))
    for store, records in ((layout.store("react", 2), [_stored(i, a) for i in ("t1", "t2") for a in (0, 1)]),
                           (layout.explore_store("react"), [_stored(i, a) for i in ("t1", "t2") for a in (1, 0)])):
        store.parent.mkdir(parents=True, exist_ok=True)
        store.write_text("".join(t.to_json() + "\n" for t in records))
    bootstrap_rounds.bootstrap_later_round(run, 2)
    objectives.explore(run, "react")
    assert logs == ["bootstrap react round 2: every episode is stored; the eval stage runs what is left of "
                    "tuned-r1's", "explore react: every episode is stored; the eval stage runs what is left of "
                    "tuned-r2's"]  # the SFT model of the preset's last round
    # one attempt short: the stage goes on to serve the round-1 model (this fixture has none to load)
    layout.store("react", 2).write_text("".join(_stored(i, a).to_json() + "\n" for i, a in (("t1", 0), ("t1", 1),
                                                                                              ("t2", 0))))
    with pytest.raises(ConfigError, match="round1/adapter: prompt spec not found"):
        bootstrap_rounds.bootstrap_later_round(run, 2)
