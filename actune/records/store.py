"""The trajectory store, bootstrap's and eval's: an append-only JSONL file of every finished episode,
judged, one per line.

    with TrajectoryStore.open("runs/x/trajectories.jsonl") as store:
        if not store.has("task-7", "react", 2):
            store.append(traj)            # one line, flushed and fsynced before it returns

Every finished episode is written, kept or not, keyed by ``(task id, method, attempt)``, so a resumed run knows
what was tried and several methods can share one store. A record counts once its closing newline is on disk: a
torn last line is cut off on open, nothing else is ever rewritten, no key is written twice, and an exclusive
``flock`` keeps a second process out. Only a store is opened (:class:`NotAStoreError`), and a stage about to
append checks that the store's records of its method came from the same producer
(:meth:`StoreState.check_producer`, :class:`StoreMixError`).

The rules in full: docs/modules.md, actune.records.store.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from actune.judge import Verdict, verdict_of
from actune.records.atomic_write import fsync_dir, open_locked
from actune.records.jsonl import is_torn, iter_appended
from actune.records.trajectory import Trajectory

__all__ = ["FINGERPRINT_KEY", "NotAStoreError", "StoreError", "StoreMixError", "StoreState", "TrajectoryStore",
           "fingerprint_of", "read_state", "remove_if_empty"]

FINGERPRINT_KEY = "fingerprint"
"""The key of ``Trajectory.info`` holding what produced the record."""

# Shown in refusals, never compared: the same tasks read from a moved or copied file are the same tasks
# (the content hash, "tasks", decides), and a later actune may add fields (compared only when both have them).
_SHOWN_ONLY = ("version", "task_file")


class StoreError(RuntimeError):
    """The store cannot be used (locked by another process, corrupt line, duplicate episode)."""


class NotAStoreError(StoreError):
    """The path holds something other than a store (a file of the user's, a folder): nothing was changed."""


class StoreMixError(StoreError):
    """This run would add episodes to a store whose records of the same method another producer wrote."""


@dataclass
class StoreState:
    """What a store holds: counts, the episode keys and what produced them, as read from the file."""

    records: int = 0
    kept: int = 0
    done: set[tuple[str, str, int]] = field(default_factory=set)
    """(task id, method, attempt) of every record."""
    run_ids: list[str] = field(default_factory=list)
    """Run ids in the order they first appear."""
    producers: dict[str, dict[str, tuple[dict[str, Any], int]]] = field(default_factory=dict)
    """Per method, its records' distinct fingerprints (:func:`fingerprint_of`; canonical JSON -> (fingerprint,
    line of the first record with it))."""
    unstamped: dict[str, int] = field(default_factory=dict)
    """Per method, how many of its records were written before records carried a fingerprint."""

    def has(self, task_id: str, method: str, attempt: int) -> bool:
        """Whether attempt ``attempt`` of task ``task_id`` with ``method`` is stored."""
        return (task_id, method, attempt) in self.done

    def add(self, traj: Trajectory, verdict: Verdict, line: int) -> None:
        """Count one record (read at ``line``, or just appended as that line)."""
        self.done.add(_key(traj))
        self.records += 1
        self.kept += int(verdict.kept)
        if traj.run_id not in self.run_ids:
            self.run_ids.append(traj.run_id)
        fingerprint, stamped = fingerprint_of(traj)
        if not stamped:
            self.unstamped[traj.method] = self.unstamped.get(traj.method, 0) + 1
        seen = self.producers.setdefault(traj.method, {})
        seen.setdefault(json.dumps(fingerprint, sort_keys=True), (fingerprint, line))

    def check_producer(self, path: str | Path, method: str, fingerprint: dict[str, Any], *,
                       allow_mixed: bool = False, option: str = "allow_mixed_store") -> list[str]:
        """Refuse to add ``method`` episodes produced as ``fingerprint`` says when the store's records of
        ``method`` say otherwise (:class:`StoreMixError` naming the store, the differing fields with both
        values, and ``option``, the setting that allows it). Return the warnings to show once: records without
        a fingerprint (only their model and adapter could be checked), and, with ``allow_mixed``, the mix."""
        notes = []
        if unstamped := self.unstamped.get(method, 0):
            notes.append(f"{path}: {unstamped} {method!r} record(s) carry no fingerprint (written before stores "
                         "kept one), so only their model and adapter are checked against this run's")
        for stored, line in self.producers.get(method, {}).values():
            differing = [k for k in fingerprint
                         if k in stored and k not in _SHOWN_ONLY and stored[k] != fingerprint[k]]
            if not differing:
                continue
            what = "; ".join(_difference(k, stored, fingerprint) for k in differing)
            if not allow_mixed:
                raise StoreMixError(
                    f"{path}: its {method!r} episodes were produced differently from this run's (the first at line "
                    f"{line}): {what}. Mixed in one store they would count as one run's; use another store, or "
                    f"set {option}=true to add to it anyway (each record keeps its own info.{FINGERPRINT_KEY})")
            notes.append(f"{path}: adding {method!r} episodes produced differently from those it holds (the first "
                         f"at line {line}), as {option} allows: {what}")
            break
        return notes


def fingerprint_of(traj: Trajectory) -> tuple[dict[str, Any], bool]:
    """(what produced the record, whether it carries its own fingerprint). A record written before
    fingerprints yields what it still tells: its adapter, and its model name when it has one."""
    stamped = traj.info.get(FINGERPRINT_KEY)
    if isinstance(stamped, dict):
        return stamped, True
    told: dict[str, Any] = {"model": traj.model.name} if traj.model.name else {}
    told["adapter"] = traj.model.adapter
    return told, False


def _difference(key: str, stored: dict[str, Any], new: dict[str, Any]) -> str:
    if key == "tasks":  # a content hash says little alone: name the files, and what changes it
        return (f"tasks: stored {stored[key]!r} ({stored.get('task_file', '?')}), this run {new[key]!r} "
                f"({new.get('task_file', '?')}): the task file's ids or questions differ (editing a file "
                "without ids renumbers its tasks)")
    return f"{key}: stored {stored[key]!r}, this run {new[key]!r}"


def _key(traj: Trajectory) -> tuple[str, str, int]:
    """The episode key of a record: (task id, method, attempt)."""
    return (traj.task.id, traj.method, traj.attempt)


def _describe(key: tuple[str, str, int]) -> str:
    return f"task {key[0]!r}, method {key[1]!r}, attempt {key[2]}"


def _cut_torn_tail(fd: int) -> int:
    """Truncate a torn last line (:func:`actune.records.jsonl.is_torn`: everything after the last newline), parsable
    or not: appends must start on a fresh line. Return how many bytes were cut (0: none)."""
    size = os.fstat(fd).st_size
    if size == 0 or not is_torn(os.pread(fd, 1, size - 1)):
        return 0
    # Scan backwards in blocks for the last newline: the file may be large, the tail is short.
    pos, block = size, 1 << 16
    while pos > 0:
        start = max(0, pos - block)
        chunk = os.pread(fd, pos - start, start)
        i = chunk.rfind(b"\n")
        if i != -1:
            keep = start + i + 1
            break
        pos = start
    else:
        keep = 0
    if keep < size:
        os.ftruncate(fd, keep)
        os.fsync(fd)
    return size - keep


# How every line ``Trajectory.to_json`` writes begins: a torn first line is a record cut short only if it
# begins so (or is a shorter piece of this).
_RECORD_HEAD = b'{"task": '


def _first_line(path: Path) -> tuple[int, bytes] | None:
    """(line number, bytes) of the first line that is not blank, or None."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if raw.strip():
                return lineno, raw
    return None


def _check_is_store(path: Path) -> None:
    """Raise :class:`NotAStoreError` unless the file ``path`` is blank or begins with a store record (whole, or
    torn: a writer killed in its first append)."""
    first = _first_line(path)
    if first is None:
        return
    lineno, raw = first
    head = raw.lstrip()[: len(_RECORD_HEAD)]
    if is_torn(raw) and _RECORD_HEAD.startswith(head):
        return
    try:
        if verdict_of(Trajectory.from_json(raw.decode("utf-8"))) is not None:
            return
        why = "record has no judge verdict (info.verdict)"
    except ValueError as e:  # UnicodeDecodeError and TrajectoryFormatError included
        why = f"not a store record ({str(e)[:200]})"
    raise NotAStoreError(f"{path}:{lineno}: {why}, so the file is not a trajectory store; actune adds only to a "
                         "store it wrote or a new file (nothing was changed): choose another store path")


def remove_if_empty(path: str | Path) -> bool:
    """Remove the store ``path`` if it is an empty file no other process holds; whether it was removed. Under its
    lock: a writer that opened it meanwhile finds it gone when it locks, and opens a new one
    (:func:`actune.records.atomic_write.open_locked`)."""
    try:
        fd = open_locked(path, os.O_RDONLY)
    except OSError:  # gone already, or not a file
        return False
    if fd is None:
        return False
    try:
        if os.fstat(fd).st_size:
            return False
        os.unlink(path)
        return True
    finally:
        os.close(fd)


def read_state(path: str | Path) -> StoreState:
    """Counts and keys of the records in ``path``; a torn last line that does not parse is left out, as
    :meth:`TrajectoryStore.open` would cut it (:func:`actune.records.jsonl.iter_appended`).

    Raises :class:`StoreError` naming ``file:line`` for a malformed record (bytes that are not UTF-8
    included), a record without a verdict, or a duplicate episode.
    """
    path = Path(path)
    state = StoreState()
    first_line: dict[tuple[str, str, int], int] = {}
    for lineno, traj in iter_appended(path, Trajectory.from_json, StoreError, "corrupt store record: "):
        key = _key(traj)
        if key in first_line:
            raise StoreError(f"{path}:{lineno}: duplicate episode ({_describe(key)}); "
                             f"first written at line {first_line[key]}")
        first_line[key] = lineno
        verdict = verdict_of(traj)
        if verdict is None:
            raise StoreError(f"{path}:{lineno}: record has no judge verdict (info.verdict); "
                             "is this a trajectory store written by bootstrap or eval?")
        state.add(traj, verdict, lineno)
    return state


class TrajectoryStore:
    """An opened store: holds the file (locked) for appends. Use :meth:`open`."""

    def __init__(self, path: Path, fd: int, state: StoreState, cut_bytes: int) -> None:
        self.path = path
        self._fd = fd
        self.state = state
        self.cut_bytes = cut_bytes
        """Bytes of a torn last line removed when the store was opened (0: the file was whole)."""
        self.appended = 0
        """Records appended through this handle."""

    @classmethod
    def open(cls, path: str | Path) -> "TrajectoryStore":
        """Open (creating) the store, lock it, check that it is one, cut a torn last line and read what it holds."""
        path = Path(path)
        if path.is_dir():  # before os.open, whose error would read as a disk problem
            raise NotAStoreError(f"{path}: is a folder, not a trajectory store (a .jsonl file)")
        if path.exists() and not path.is_file():  # /dev/full, a FIFO: reading one never ends
            raise NotAStoreError(f"{path}: is not a regular file, so not a trajectory store (a .jsonl file)")
        if path.is_symlink() and not path.exists():  # a loop or a dangling link: no file to open or create
            raise NotAStoreError(f"{path}: a symbolic link to no file (a loop, or its target missing), so not a "
                                 "trajectory store")
        path.parent.mkdir(parents=True, exist_ok=True)
        created = not path.exists()
        fd = open_locked(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        if fd is None:
            raise StoreError(f"{path}: another process is writing this store (it is locked); "
                             "wait for it or use another store path")
        try:
            if created:
                fsync_dir(path.parent)
            _check_is_store(path)  # before the cut: a file that is no store is left as it is
            cut = _cut_torn_tail(fd)
            state = read_state(path)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, state, cut)

    # --- reading -------------------------------------------------------------------------------
    @property
    def records(self) -> int:
        return self.state.records

    @property
    def kept(self) -> int:
        return self.state.kept

    def has(self, task_id: str, method: str, attempt: int) -> bool:
        """Whether attempt ``attempt`` of task ``task_id`` with ``method`` is stored."""
        return self.state.has(task_id, method, attempt)

    # --- writing -------------------------------------------------------------------------------
    def append(self, traj: Trajectory) -> None:
        """Write one judged record as one line, flushed and fsynced before returning.

        Refuses a record without a verdict, whose (task, method, attempt) the store already holds, or that
        cannot be written as JSON (checked before writing). A failed write is undone (the file is cut back),
        so a later append cannot land after half a line; a stop signal (KeyboardInterrupt) that comes once the
        whole line is in the file keeps it, synced and counted, before the interrupt goes on.
        """
        if self._fd < 0:
            raise StoreError(f"{self.path}: the store is closed")
        verdict = verdict_of(traj)
        if verdict is None:
            raise StoreError(f"{self.path}: record of task {traj.task.id!r} has no verdict; judge it first")
        key = _key(traj)
        if key in self.state.done:
            raise StoreError(f"{self.path}: episode ({_describe(key)}) is already stored")
        try:
            data = (traj.to_json() + "\n").encode("utf-8")
        except (TypeError, ValueError) as e:
            # before any byte is written: the file is untouched and the stage can report the episode
            raise StoreError(f"{self.path}: episode ({_describe(key)}) cannot be written as JSON: {e}") from None
        size = os.fstat(self._fd).st_size
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            os.fsync(self._fd)
        except KeyboardInterrupt:
            # A stop signal once the whole line is in the file (during fsync, or as the last write returned,
            # before ``view`` was advanced: so the file's size decides): the record is complete and a reader
            # may already have seen it, so keep it rather than take back finished work. A second signal is
            # ignored while the first unwinds (actune.runtime.stop_signals), so the fsync here is not cut short.
            if os.fstat(self._fd).st_size == size + len(data) and self._synced():
                self._count_appended(traj, verdict)
            else:
                self._undo(size)
            raise
        except OSError as e:  # disk full, a file-size limit: name the store, which holds every whole record
            self._undo(size)
            raise OSError(e.errno, f"{e.strerror or e} appending to the store", str(self.path)) from None
        except BaseException:
            self._undo(size)
            raise
        self._count_appended(traj, verdict)

    def _synced(self) -> bool:
        try:
            os.fsync(self._fd)
        except OSError:
            return False
        return True

    def _count_appended(self, traj: Trajectory, verdict: Verdict) -> None:
        self.state.add(traj, verdict, self.state.records + 1)
        self.appended += 1

    def _undo(self, size: int) -> None:
        """Cut the file back to ``size`` after a failed append."""
        try:
            os.ftruncate(self._fd, size)
        except OSError:
            self.close()  # cannot undo: refuse further appends; the next open cuts the torn tail

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases the flock
            self._fd = -1

    def __enter__(self) -> "TrajectoryStore":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
