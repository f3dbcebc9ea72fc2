"""The store: append-only, fsynced lines; resume counts; a torn last line cut away; no duplicates;
episodes keyed by (task, method, attempt)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from actune.judge import judge, record_verdict
from actune.records.store import NotAStoreError, StoreError, StoreMixError, TrajectoryStore, read_state, remove_if_empty
from actune.records.trajectory import TaskRecord, Trajectory


def judged(task_id: str, attempt: int, correct: bool, run_id: str = "run-a", method: str = "react") -> Trajectory:
    """A minimal finished episode (no steps: a well-ordered answer), judged. No supporting titles,
    so kept == correct."""
    t = Trajectory(task=TaskRecord(task_id, f"question {task_id}?", "X", meta={"kind": "single"}), method=method,
                   prediction="X" if correct else "Y", correct=correct, attempt=attempt, run_id=run_id)
    return record_verdict(t, judge(t))


def _fill(path: Path) -> bytes:
    """5 records, 3 of them kept; returns the file's bytes."""
    with TrajectoryStore.open(path) as store:
        for tid, att, ok in [("a", 0, True), ("b", 0, False), ("a", 1, True), ("c", 0, True), ("b", 1, False)]:
            store.append(judged(tid, att, ok))
        assert (store.records, store.kept, store.appended) == (5, 3, 5)
    return path.read_bytes()


def test_resume_counts_and_a_torn_last_line_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "store" / "trajectories.jsonl"
    good = _fill(path)
    assert good.count(b"\n") == 5
    torn = judged("d", 0, True).to_json().encode()[:57]  # a crash in the middle of the sixth write
    with path.open("ab") as f:
        f.write(torn)
    with TrajectoryStore.open(path) as store:
        assert store.cut_bytes == 57
        assert path.read_bytes() == good  # only the torn tail went; good lines untouched
        assert (store.records, store.kept) == (5, 3)
        assert store.state.done == {("a", "react", 0), ("b", "react", 0), ("a", "react", 1), ("c", "react", 0),
                                    ("b", "react", 1)}
        assert store.has("a", "react", 1) and not store.has("d", "react", 0) and not store.has("a", "cot", 1)
        store.append(judged("d", 0, True, run_id="run-b"))
        assert (store.records, store.kept) == (6, 4)
        assert store.state.run_ids == ["run-a", "run-b"]
    lines = path.read_text().splitlines()
    assert len(lines) == 6
    assert [Trajectory.from_json(x).task.id for x in lines] == ["a", "b", "a", "c", "b", "d"]
    # reopening a whole file cuts nothing
    with TrajectoryStore.open(path) as store:
        assert (store.cut_bytes, store.records, store.kept) == (0, 6, 4)


def test_a_file_holding_only_a_torn_line_becomes_empty(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"task": {"id": "a"')
    with TrajectoryStore.open(path) as store:
        assert (store.cut_bytes, store.records, store.kept) == (19, 0, 0)
    assert path.read_bytes() == b""


def test_a_complete_last_line_without_newline_is_cut_too(tmp_path: Path) -> None:
    """A record counts once its newline is written (the write is one line: JSON then newline)."""
    path = tmp_path / "t.jsonl"
    good = _fill(path)
    last = judged("z", 0, True).to_json().encode()
    path.write_bytes(good + last)
    with TrajectoryStore.open(path) as store:
        assert (store.cut_bytes, store.records) == (len(last), 5)


def test_a_bad_line_before_the_end_is_an_error_and_nothing_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = _fill(path).decode().splitlines(keepends=True)
    lines[2] = '{"task": oops}\n'
    corrupt = "".join(lines).encode()
    path.write_bytes(corrupt)
    with pytest.raises(StoreError, match=r"t\.jsonl:3: corrupt store record"):
        TrajectoryStore.open(path)
    assert path.read_bytes() == corrupt


# --- only a store is opened (issue #47) -------------------------------------------------------------

@pytest.mark.parametrize(("content", "line"), [
    (b"a\nb", 1),  # the notes.txt: it lost its last line
    (b"b", 1),  # one torn-looking line that is no record
    (b"\n  \nhello", 3),
    (b'[\n  {"messages": []}\n]', 1),  # an import source (a JSON array): it lost its closing bracket
    (b'{"messages": [{"role": "user", "content": "q"}]}\n{"messages": [', 1),  # a JSONL source
    (b"\xff\xfe not text", 1),
], ids=["notes", "one-word", "after-blank-lines", "json-array", "openai-jsonl", "binary"])
def test_a_file_that_is_no_store_is_refused_and_left_byte_identical(tmp_path: Path, content: bytes, line: int) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(NotAStoreError, match=rf"notes\.txt:{line}: .*not a trajectory store.*nothing was changed"):
        TrajectoryStore.open(path)
    assert path.read_bytes() == content


def test_a_folder_a_device_or_a_fifo_is_no_store(tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match="is a folder, not a trajectory store"):
        TrajectoryStore.open(tmp_path)
    os.mkfifo(tmp_path / "pipe.jsonl")
    for path in (Path("/dev/full"), tmp_path / "pipe.jsonl"):  # reading either never ends
        with pytest.raises(NotAStoreError, match="is not a regular file, so not a trajectory store"):
            TrajectoryStore.open(path)
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    with pytest.raises(NotAStoreError, match="a.jsonl: a symbolic link to no file"):
        TrajectoryStore.open(tmp_path / "a.jsonl")


def test_an_empty_store_is_removed_only_when_no_one_holds_it(tmp_path: Path) -> None:
    """What an import that kept nothing calls, so that it leaves no empty store (tests/faults/test_foreign_files.py)."""
    path = tmp_path / "new.jsonl"
    with TrajectoryStore.open(path):
        assert not remove_if_empty(path)  # another writer holds it
    assert path.read_bytes() == b"" and remove_if_empty(path) and not path.exists()
    assert not remove_if_empty(path)  # gone already
    with TrajectoryStore.open(path) as store:
        store.append(judged("a", 0, True))
    assert not remove_if_empty(path) and read_state(path).records == 1


def test_no_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = _fill(path)
    with TrajectoryStore.open(path) as store:
        with pytest.raises(StoreError, match=r"t\.jsonl: episode \(task 'a', method 'react', attempt 1\) is already "
                                             r"stored"):
            store.append(judged("a", 1, False))
        assert (store.records, store.kept) == (5, 3)
    assert path.read_bytes() == good
    # a duplicate written by someone else is reported with both lines
    path.write_bytes(good + judged("c", 0, True).to_json().encode() + b"\n")
    with pytest.raises(StoreError, match=r"t\.jsonl:6: duplicate episode \(task 'c', method 'react', attempt 0\); "
                                         r"first written at line 4"):
        TrajectoryStore.open(path)


def test_one_task_and_attempt_under_two_methods_are_two_episodes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TrajectoryStore.open(path) as store:
        for method in ("react", "reflact", "cot", "cot_sc"):
            store.append(judged("a", 0, True, method=method))
        assert (store.records, store.kept) == (4, 4)
        assert store.has("a", "cot", 0) and not store.has("a", "standard", 0)
        with pytest.raises(StoreError, match=r"t\.jsonl: episode \(task 'a', method 'cot', attempt 0\) is already "
                                             r"stored"):
            store.append(judged("a", 0, False, method="cot"))
    good = path.read_bytes()
    with TrajectoryStore.open(path) as store:  # reopened: the same four keys
        assert store.state.done == {("a", m, 0) for m in ("react", "reflact", "cot", "cot_sc")}
    # a duplicate of (task, method, attempt) in the file is refused naming both lines and the method
    path.write_bytes(good + judged("a", 0, True, method="reflact").to_json().encode() + b"\n")
    with pytest.raises(StoreError, match=r"t\.jsonl:5: duplicate episode \(task 'a', method 'reflact', attempt 0\); "
                                         r"first written at line 2"):
        TrajectoryStore.open(path)


def test_a_store_written_before_method_keys_reads_unchanged(tmp_path: Path) -> None:
    """Records always carried ``method``; a verdict without ``grounding_applies`` loads with the default."""
    path = tmp_path / "t.jsonl"
    lines = []
    for tid, ok in [("a", True), ("b", False)]:
        d = judged(tid, 0, ok).to_dict()
        del d["info"]["verdict"]["grounding_applies"]  # as an older actune wrote it
        lines.append(json.dumps(d) + "\n")
    path.write_text("".join(lines))
    with TrajectoryStore.open(path) as store:
        assert (store.records, store.kept, store.state.done) == (2, 1, {("a", "react", 0), ("b", "react", 0)})


def test_unjudged_records_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    raw = Trajectory(task=TaskRecord("a", "q?"), method="react")
    with TrajectoryStore.open(path) as store:
        with pytest.raises(StoreError, match="no verdict"):
            store.append(raw)
    path.write_text(raw.to_json() + "\n")
    with pytest.raises(StoreError, match=r"t\.jsonl:1: record has no judge verdict"):
        TrajectoryStore.open(path)


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TrajectoryStore.open(path):
        with pytest.raises(StoreError, match="another process is writing this store"):
            TrajectoryStore.open(path)
    with TrajectoryStore.open(path) as store:  # released on close
        assert store.records == 0


_write, _fsync = os.write, os.fsync  # the real ones: the cases below patch os's


def _half_a_line_then_stop(fd, data):
    if len(data) > 10:
        return _write(fd, data[:10])
    raise KeyboardInterrupt


def _whole_line_then_stop(fd, data):
    _write(fd, data)  # the signal lands as the last write returns, before the loop sees it: the file decides
    raise KeyboardInterrupt


def _stop_then(then):
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 1:
            raise KeyboardInterrupt
        then(fd)

    return fsync


def _io_error(fd):
    raise OSError(5, "I/O error")


def test_a_failed_write_is_undone(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t.jsonl"
    good = _fill(path)
    with TrajectoryStore.open(path) as store:
        monkeypatch.setattr(os, "fsync", _io_error)
        with pytest.raises(OSError, match="I/O error"):
            store.append(judged("e", 0, True))
        monkeypatch.undo()
        assert path.read_bytes() == good and (store.records, store.kept) == (5, 3)
        store.append(judged("e", 0, True))  # not counted as done by the failed attempt
    assert len(path.read_text().splitlines()) == 6


@pytest.mark.parametrize("name, fake, kept", [
    ("write", lambda: _half_a_line_then_stop, False),
    ("write", lambda: _whole_line_then_stop, True),
    ("fsync", lambda: _stop_then(_fsync), True),
    ("fsync", lambda: _stop_then(_io_error), False),  # the line is synced again after the signal, or cut
], ids=["mid-write", "as-the-write-returns", "in-fsync", "in-fsync-then-the-sync-fails"])
def test_a_stop_signal_in_an_append_keeps_a_whole_synced_line_and_cuts_anything_less(tmp_path: Path, monkeypatch,
                                                                                      name, fake, kept) -> None:
    """SIGTERM (as KeyboardInterrupt, actune.runtime.stop_signals) during an append: a whole line may already have been
    read, so it stays, counted; anything less is cut back. Either way the interrupt goes on."""
    path = tmp_path / "t.jsonl"
    good = _fill(path)
    with TrajectoryStore.open(path) as store:
        monkeypatch.setattr(os, name, fake())
        with pytest.raises(KeyboardInterrupt):
            store.append(judged("e", 0, True))
        monkeypatch.undo()
        assert (store.records, store.kept, store.appended) == ((6, 4, 1) if kept else (5, 3, 0))
        if kept:
            with pytest.raises(StoreError, match="already stored"):
                store.append(judged("e", 0, True))
    assert path.read_bytes().startswith(good) and read_state(path).records == (6 if kept else 5)


FP = {"version": 1, "model": "m-a", "adapter": None, "regime": "few_shot", "prompt": "p1", "task_file": "x.jsonl",
      "tasks": "h1"}


def stamped(task_id: str, fingerprint: dict | None, method: str = "react", name: str = "") -> Trajectory:
    t = judged(task_id, 0, True, method=method)
    t.model.name = name
    if fingerprint is not None:
        t.info["fingerprint"] = fingerprint
    return t


def test_the_producer_of_a_method_is_checked_and_other_methods_are_not(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TrajectoryStore.open(path) as store:
        store.append(stamped("a", FP))
        store.append(stamped("a", {**FP, "model": "m-b", "prompt": "p2"}, method="cot"))  # on purpose: methods mix
        assert store.state.check_producer(path, "react", FP) == []
        assert store.state.check_producer(path, "reflact", {**FP, "model": "m-c"}) == []  # nothing of it stored
    with TrajectoryStore.open(path) as store:  # reopened: the same producers
        state = store.state
    assert state.check_producer(path, "react", {**FP, "task_file": "moved/x.jsonl"}) == []  # the same tasks
    assert state.check_producer(path, "react", {**FP, "seed": 3}) == []  # a field the records do not have
    with pytest.raises(StoreMixError) as e:
        state.check_producer(path, "cot", {**FP, "tasks": "h2"}, option="bootstrap.allow_mixed_store")
    assert str(e.value) == (
        f"{path}: its 'cot' episodes were produced differently from this run's (the first at line 2): "
        "model: stored 'm-b', this run 'm-a'; prompt: stored 'p2', this run 'p1'; tasks: stored 'h1' (x.jsonl), "
        "this run 'h2' (x.jsonl): the task file's ids or questions differ (editing a file without ids renumbers "
        "its tasks). Mixed in one store they would count as one run's; use another store, or set "
        "bootstrap.allow_mixed_store=true to add to it anyway (each record keeps its own info.fingerprint)")
    assert state.check_producer(path, "react", {**FP, "adapter": "ad-1"}, allow_mixed=True, option="x.allow") == [
        f"{path}: adding 'react' episodes produced differently from those it holds (the first at line 1), as "
        "x.allow allows: adapter: stored None, this run 'ad-1'"]


def test_records_without_a_fingerprint_are_checked_by_their_model_and_adapter(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TrajectoryStore.open(path) as store:
        store.append(stamped("a", None, name="m-a"))
        store.append(stamped("b", None))  # no model name: unknown
        store.append(stamped("c", FP))
    state = read_state(path)
    assert state.check_producer(path, "react", FP) == [
        f"{path}: 2 'react' record(s) carry no fingerprint (written before stores kept one), so only their model "
        "and adapter are checked against this run's"]
    with pytest.raises(StoreMixError, match=r"\(the first at line 1\): model: stored 'm-a', this run 'm-b'\. "):
        state.check_producer(path, "react", {**FP, "model": "m-b"})
    with pytest.raises(StoreMixError, match=r"\(the first at line 1\): adapter: stored None, this run 'x'\. "):
        state.check_producer(path, "react", {**FP, "adapter": "x"})
