"""A lone surrogate in a task reaches the store (issue #12).

``json.loads`` turns a ``"\\ud800"`` escape in a task file into a lone surrogate, which has no UTF-8
encoding: ``append`` crashed on it, and every rerun met the same task again. The record is written with
the surrogate escaped (a valid UTF-8 line that reads back to the same string); a record that cannot be
written at all is refused before a byte reaches the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.judge import judge, record_verdict
from actune.records.store import StoreError, TrajectoryStore
from actune.records.trajectory import Step, TaskRecord, Trajectory, read_trajectories
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks


def _judged(task: TaskRecord, **kw) -> Trajectory:
    t = Trajectory(task=task, method="react", prediction=task.answer, correct=True, **kw)
    return record_verdict(t, judge(t))


def test_a_lone_surrogate_from_a_task_file_is_stored_and_reads_back(tmp_path: Path) -> None:
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text('{"id": "s1", "question": "Who wrote caf\\u00e9 \\ud800?", "answer": "Zo\\udfffe"}\n',
                          encoding="utf-8")
    (task,) = load_tasks(TaskConfig(path=str(tasks_file), format="custom"))
    assert task.question == "Who wrote café \ud800?"
    record = TaskRecord(task.id, task.question, task.answer)
    traj = _judged(record, steps=[Step("thought", "half a pair \ud83d then \\\udc00", 1)])
    store_path = tmp_path / "store.jsonl"
    with TrajectoryStore.open(store_path) as store:
        store.append(traj)
    raw = store_path.read_bytes()
    line = raw.decode("utf-8")  # strict: the file is valid UTF-8
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    assert "café" in line and "\\ud800" in line  # only the surrogate is escaped
    assert json.loads(line)["task"]["question"] == "Who wrote café \ud800?"
    assert list(read_trajectories(store_path)) == [traj]
    with TrajectoryStore.open(store_path) as store:  # a rerun resumes instead of crashing
        assert store.records == 1 and store.has("s1", "react", 0)


def test_records_without_surrogates_keep_their_bytes() -> None:
    traj = _judged(TaskRecord("a", "Zürich – 東京?", "x"))
    assert traj.to_json() == json.dumps(traj.to_dict(), ensure_ascii=False)


def test_a_record_that_cannot_be_written_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store_path = tmp_path / "store.jsonl"
    with TrajectoryStore.open(store_path) as store:
        store.append(_judged(TaskRecord("a", "q?", "x")))
        before = store_path.read_bytes()
        bad = _judged(TaskRecord("b", "q?", "x"))
        bad.info["pages"] = {"a set", "is not JSON"}
        with pytest.raises(StoreError, match=r"store\.jsonl: episode \(task 'b', method 'react', attempt 0\) "
                                             r"cannot be written as JSON"):
            store.append(bad)
        assert store_path.read_bytes() == before and store.records == 1 and not store.has("b", "react", 0)
        store.append(_judged(TaskRecord("c", "q?", "x")))
    with TrajectoryStore.open(store_path) as store:
        assert store.records == 2
