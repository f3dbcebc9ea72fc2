"""A store whose writer was killed mid-line, read before anyone reopens it (issue #12).

The store cuts a torn last line when it opens; eval read its stores before opening them (so an eval
killed in its first write could not resume) and the bootstrap summary reads them without opening.
Every trajectory reader skips a torn last line that does not parse, and still names ``file:line`` for a
bad line anywhere else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.eval.run import _records_for
from actune.judge import judge, record_verdict
from actune.records import trajectory
from actune.records.store import StoreError, TrajectoryStore, read_state
from actune.records.task_record import Task
from actune.records.trajectory import TaskRecord, Trajectory, TrajectoryFormatError, read_trajectories


def _judged(task_id: str, question: str = "q?") -> Trajectory:
    t = Trajectory(task=TaskRecord(task_id, question, "x"), method="react", prediction="x", correct=True)
    return record_verdict(t, judge(t))


def _store(path: Path, ids: list[str]) -> bytes:
    with TrajectoryStore.open(path) as store:
        for i in ids:
            store.append(_judged(i))
    return path.read_bytes()


@pytest.mark.parametrize("cut", [1, 57, -1], ids=["first-byte", "mid-record", "all-but-the-closing-brace"])
def test_a_torn_last_line_is_skipped_by_every_reader(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "store.jsonl"
    good = _store(path, ["a", "b"])
    torn = _judged("c").to_json().encode()[:cut]
    path.write_bytes(good + torn)
    assert [t.task.id for t in read_trajectories(path)] == ["a", "b"]
    assert [n for n, _ in trajectory.read_trajectory_lines(path)] == [1, 2]
    assert read_state(path).done == {("a", "react", 0), ("b", "react", 0)}
    tasks = [Task(id=i, question="q?") for i in "abc"]
    assert [t.task.id for t in _records_for(path, tasks, 1, "react")] == ["a", "b"]  # eval's report
    assert path.read_bytes() == good + torn  # readers never write
    with TrajectoryStore.open(path) as store:  # the writer cuts it when it resumes
        assert store.cut_bytes == len(torn) and store.records == 2


def test_a_write_cut_inside_a_character_is_torn_too(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    good = _store(path, ["a"])
    line = _judged("b", question="Wer baute das Schloß?").to_json().encode()
    cut = line.index("ß".encode()) + 1  # the first of the two bytes of "ß"
    path.write_bytes(good + line[:cut])
    assert [t.task.id for t in read_trajectories(path)] == ["a"]
    assert read_state(path).records == 1


def test_a_whole_last_record_without_its_newline_is_read(tmp_path: Path) -> None:
    # It parses, so it is a record (a file written by hand or another tool); the store still cuts it
    # before appending, since an append must start on a fresh line.
    path = tmp_path / "store.jsonl"
    good = _store(path, ["a"])
    path.write_bytes(good + _judged("b").to_json().encode())
    assert [t.task.id for t in read_trajectories(path)] == ["a", "b"]


def test_a_bad_line_before_the_last_is_corruption_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    lines = _store(path, ["a", "b", "c"]).splitlines(keepends=True)
    lines[1] = lines[1][:40] + b"\n"  # a torn line that is not the last: something else went wrong
    path.write_bytes(b"".join(lines))
    with pytest.raises(TrajectoryFormatError, match=r"store\.jsonl:2: invalid JSON"):
        list(read_trajectories(path))
    with pytest.raises(StoreError, match=r"store\.jsonl:2: corrupt store record: invalid JSON"):
        read_state(path)


def test_a_bad_last_line_with_its_newline_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    good = _store(path, ["a"])
    path.write_bytes(good + b'{"task": oops}\n')
    with pytest.raises(TrajectoryFormatError, match=r"store\.jsonl:2: invalid JSON"):
        list(read_trajectories(path))
    bad_bytes = good + b'{"task": "\xff"}\n'
    path.write_bytes(bad_bytes)
    with pytest.raises(TrajectoryFormatError, match=r"store\.jsonl:2: not UTF-8 text"):
        list(read_trajectories(path))


def test_blank_lines_before_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    good = _store(path, ["a"])
    path.write_bytes(good + b"\n\n" + b'{"task"')  # blank lines, then the torn tail
    assert [t.task.id for t in read_trajectories(path)] == ["a"]


def test_export_skips_a_torn_last_line_of_a_store(tmp_path):
    """Export reads a store whose writer was killed mid-line (before a resumed run cuts the line)."""
    from actune.bootstrap.export import kept_records
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    def kept(task_id: str) -> str:
        t = Trajectory(task=TaskRecord(id=task_id, question="q?", answer="a"), method="cot", prediction="a",
                       correct=True)
        return record_verdict(t, judge(t, require_grounded=False)).to_json()

    store = tmp_path / "trajectories.jsonl"
    store.write_text(kept("t1") + "\n" + kept("t2")[:40], encoding="utf-8")  # the second line torn
    assert [t.task.id for t in kept_records(store)] == ["t1"]
