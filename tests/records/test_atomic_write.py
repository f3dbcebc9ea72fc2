from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from actune.records import atomic_write
from actune.records.atomic_write import (
    atomic_write_bytes,
    atomic_write_text,
    atomic_writer,
    recover_folder,
    replace_folder,
)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_text_and_bytes_content(tmp_path):
    p = tmp_path / "a.txt"
    atomic_write_text(p, "héllo\nworld\n")
    assert p.read_bytes() == "héllo\nworld\n".encode()
    atomic_write_bytes(p, b"\x00\xffraw")
    assert p.read_bytes() == b"\x00\xffraw"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.txt"]


def test_streaming_writer(tmp_path):
    p = tmp_path / "lines.jsonl"
    with atomic_writer(p) as f:
        for i in range(3):
            f.write(f"{i}\n")
        assert not p.exists()  # nothing visible until the block ends
    assert p.read_text() == "0\n1\n2\n"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_file_permissions_equal_a_normal_file(tmp_path, umask):
    old = os.umask(umask)
    try:
        normal = tmp_path / "normal.txt"
        normal.write_text("x")
        atomic = tmp_path / "atomic.txt"
        atomic_write_text(atomic, "x")
    finally:
        os.umask(old)
    assert _mode(atomic) == _mode(normal) == 0o666 & ~umask


def test_replaced_file_keeps_its_permissions(tmp_path):
    p = tmp_path / "script.sh"
    p.write_text("old")
    p.chmod(0o750)
    atomic_write_text(p, "new")
    assert p.read_text() == "new"
    assert _mode(p) == 0o750


def test_failed_replace_leaves_old_content_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "data.json"
    p.write_text("old")

    def broken_replace(src, dst):
        raise OSError("injected failure")

    monkeypatch.setattr(atomic_write.os, "replace", broken_replace)
    with pytest.raises(OSError, match="injected failure"):
        atomic_write_text(p, "new")
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["data.json"]


def test_error_mid_stream_leaves_no_file_and_no_temp(tmp_path):
    p = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with atomic_writer(p) as f:
            f.write("partial\n")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_failed_fsync_leaves_no_temp(tmp_path, monkeypatch):
    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(atomic_write.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(tmp_path / "x.bin", b"123")
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "nope" / "x.txt", "x")



# --- replace_folder / recover_folder ---


def _folder(path, **files):
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    return path


def _content(path) -> dict[str, str]:
    return {p.name: p.read_text() for p in path.iterdir()}


def _names(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _failing_replace(monkeypatch, failures: dict[int, str]) -> list[str]:
    """Make the n-th os.replace raise OSError(failures[n]); returns the destination names, call by call."""
    real = os.replace
    calls: list[str] = []

    def replace(src, dst):
        calls.append(os.path.basename(dst))
        if len(calls) in failures:
            raise OSError(failures[len(calls)])
        real(src, dst)

    monkeypatch.setattr(atomic_write.os, "replace", replace)
    return calls


def _crash_in_child(new, out, crash_at: str) -> None:
    """Run replace_folder in a child process killed (os._exit: no handler, no cleanup) at ``crash_at``:
    ``second_rename`` (the old folder already aside) or ``delete_old`` (the new one already in place)."""
    code = f"""
import os, shutil, sys
from actune.records.atomic_write import replace_folder
real = os.replace
calls = []
def replace(src, dst):
    calls.append(dst)
    if {crash_at!r} == "second_rename" and len(calls) == 2:
        os._exit(9)
    real(src, dst)
os.replace = replace
if {crash_at!r} == "delete_old":
    shutil.rmtree = lambda *a, **k: os._exit(9)
replace_folder(sys.argv[1], sys.argv[2])
"""
    done = subprocess.run([sys.executable, "-c", code, str(new), str(out)], capture_output=True, text=True)
    assert done.returncode == 9, done.stderr


def test_replace_folder_swaps_and_leaves_nothing_beside(tmp_path):
    out = tmp_path / "out"
    replace_folder(_folder(tmp_path / "first", a="1"), out)  # no folder there yet
    assert _content(out) == {"a": "1"}
    _folder(out / "sub")  # a non-empty old folder with a subfolder is replaced whole
    replace_folder(_folder(tmp_path / "second", b="2"), out)
    assert _content(out) == {"b": "2"}
    assert _names(tmp_path) == ["out"]


def test_replace_folder_deletes_the_old_folder_only_once_the_new_one_is_durably_in_place(tmp_path, monkeypatch):
    out = _folder(tmp_path / "out", a="old")
    new = _folder(tmp_path / "new", a="new")
    events: list[str] = []
    real_replace, real_rmtree = os.replace, shutil.rmtree

    def replace(src, dst):
        events.append(f"rename {os.path.basename(src)} -> {os.path.basename(dst)}")
        real_replace(src, dst)

    def fsync_dir(folder):
        if folder == tmp_path:
            events.append("fsync parent: " + (_content(out)["a"] if out.exists() else "no out"))

    def rmtree(path, ignore_errors=False):
        events.append(f"delete {os.path.basename(path)}")
        real_rmtree(path, ignore_errors=ignore_errors)

    def fsync(fd):
        events.append("fsync a file")

    monkeypatch.setattr(atomic_write.os, "replace", replace)
    monkeypatch.setattr(atomic_write.os, "fsync", fsync)
    monkeypatch.setattr(atomic_write, "fsync_dir", fsync_dir)
    monkeypatch.setattr(atomic_write.shutil, "rmtree", rmtree)
    replace_folder(new, out)
    aside = events[1].rpartition(" -> ")[2]
    assert aside.startswith(".out.") and aside not in ("out", "new")
    # the new folder's one file is on disk before it takes the name
    assert events == ["fsync a file", f"rename out -> {aside}", "fsync parent: no out", "rename new -> out",
                      "fsync parent: new", f"delete {aside}"]
    assert _names(tmp_path) == ["out"]


def test_failed_second_rename_puts_the_old_folder_back_and_reraises(tmp_path, monkeypatch):
    out = _folder(tmp_path / "out", a="old")
    new = _folder(tmp_path / "new", a="new")
    calls = _failing_replace(monkeypatch, {2: "injected failure"})
    with pytest.raises(OSError, match="injected failure"):
        replace_folder(new, out)
    assert len(calls) == 3 and calls[1:] == ["out", "out"]  # the failed move in, then the old folder back
    assert _content(out) == {"a": "old"}
    assert _content(new) == {"a": "new"}  # left for the caller to remove
    assert _names(tmp_path) == ["new", "out"]


def test_when_the_old_folder_cannot_be_put_back_the_first_error_is_raised_and_recovery_restores_it(
        tmp_path, monkeypatch):
    out = _folder(tmp_path / "out", a="old")
    new = _folder(tmp_path / "new", a="new")
    _failing_replace(monkeypatch, {2: "injected failure", 3: "restore failed too"})
    with pytest.raises(OSError, match="injected failure"):
        replace_folder(new, out)
    monkeypatch.undo()
    assert not out.exists() and len(_names(tmp_path)) == 2  # new, and the old folder aside
    recover_folder(out)
    assert _content(out) == {"a": "old"}
    assert _names(tmp_path) == ["new", "out"]


def test_crash_between_the_renames_is_recovered_by_recover_folder(tmp_path):
    out = _folder(tmp_path / "out", a="old")
    new = _folder(tmp_path / "new", a="new")
    _crash_in_child(new, out, "second_rename")
    assert not out.exists()
    (aside,) = [p for p in tmp_path.iterdir() if p.name != "new"]
    assert _content(aside) == {"a": "old"}  # nothing lost: the old folder waits aside
    recover_folder(out)
    assert _content(out) == {"a": "old"}
    assert _names(tmp_path) == ["new", "out"]
    recover_folder(out)  # nothing left to do
    assert _content(out) == {"a": "old"} and _names(tmp_path) == ["new", "out"]


def test_crash_between_the_renames_is_recovered_by_the_next_swap(tmp_path, monkeypatch):
    out = _folder(tmp_path / "out", a="old")
    _crash_in_child(_folder(tmp_path / "new", a="new"), out, "second_rename")
    assert not out.exists()
    real = os.replace
    renames: list[tuple[str, str, dict[str, str]]] = []

    def replace(src, dst):
        real(src, dst)
        renames.append((os.path.basename(src), os.path.basename(dst), _content(Path(dst))))

    monkeypatch.setattr(atomic_write.os, "replace", replace)
    replace_folder(_folder(tmp_path / "newer", a="newer"), out)
    aside = renames[0][0]
    # the old folder is put back first, then swapped out as in any replace
    assert renames == [(aside, "out", {"a": "old"}), ("out", aside, {"a": "old"}), ("newer", "out", {"a": "newer"})]
    assert _content(out) == {"a": "newer"}
    assert _names(tmp_path) == ["new", "out"]


def test_crash_before_the_old_folder_is_deleted_keeps_the_new_one(tmp_path):
    out = _folder(tmp_path / "out", a="old")
    _crash_in_child(_folder(tmp_path / "new", a="new"), out, "delete_old")
    assert _content(out) == {"a": "new"} and len(_names(tmp_path)) == 2  # out, and the old folder aside
    recover_folder(out)
    assert _content(out) == {"a": "new"}
    assert _names(tmp_path) == ["out"]


def test_recover_folder_without_a_swap_changes_nothing(tmp_path):
    recover_folder(tmp_path / "missing")  # nothing there, not even the parent
    recover_folder(tmp_path / "no" / "parent")
    out = _folder(tmp_path / "out", a="x")
    recover_folder(out)
    assert _names(tmp_path) == ["out"] and _content(out) == {"a": "x"}


def test_a_folder_written_beside_and_swapped_in_has_the_umask_modes(tmp_path: Path) -> None:
    from actune.records.atomic_write import temp_folder_beside

    old = os.umask(0o022)
    try:
        tmp = temp_folder_beside(tmp_path / "dataset")
        (tmp / "sub").mkdir(mode=0o700)
        (tmp / "sub" / "weights.safetensors").write_bytes(b"w")
        os.chmod(tmp / "sub" / "weights.safetensors", 0o600)  # as safetensors leaves an adapter's weights
        replace_folder(tmp, tmp_path / "dataset")
    finally:
        os.umask(old)
    # 0755 and 0644, as mkdir and open make them: 0700 / 0600 would leave the output unreadable to another user
    assert (tmp_path / "dataset").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "dataset" / "sub").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "dataset" / "sub" / "weights.safetensors").stat().st_mode & 0o777 == 0o644


def test_the_next_writer_of_an_output_removes_what_a_killed_one_left_beside_it(tmp_path: Path) -> None:
    """A writer killed mid-write leaves its temp folder (``.ds.actune-XXXXXXXX/``) or temp file
    (``.ds.actune-XXXXXXXX.tmp``); the next one to hold the output's lock removes them, and nothing else beside the
    output: not the user's own hidden files and folders named like the output (``.ds.previous``, ``.ds.lock``)."""
    out = tmp_path / "ds"
    dead_folder = atomic_write.temp_folder_beside(out)
    (dead_folder / "data.arrow").write_text("half")
    dead_file, dead_named = tmp_path / ".ds.actune-0a1b2c3d.tmp", tmp_path / f".ds.actune-p{os.getpid()}-0a1b2c3d.tmp"
    dead_file.write_text("half")
    dead_named.write_text("half")  # under the lock: whatever process it names
    others = [tmp_path / ".ds.actune-swap-old", tmp_path / ".dsx.actune-0a1b2c3d.tmp", tmp_path / "notes.txt",
              tmp_path / ".other.abcdefgh", tmp_path / ".ds.previous", tmp_path / ".ds.0a1b2c3d.tmp",
              tmp_path / ".ds.lock"]
    for p in others:
        p.write_text("keep")
    (tmp_path / ".ds.original").mkdir()
    others.append(tmp_path / ".ds.original")
    with atomic_write.output_lock(out):
        assert not dead_folder.exists() and not dead_file.exists() and not dead_named.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in others)


def test_a_single_file_write_removes_the_temp_file_a_killed_writer_left_and_no_live_writers(tmp_path: Path) -> None:
    """Single files are written under no lock: a temp file names its writer's process, and the next write of the
    same file removes those of writers that are gone (a SIGKILL mid-write), never a live writer's or a user's."""
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = tmp_path / f".report.json.actune-p{int(gone.stdout)}-0a1b2c3d.tmp"
    live = tmp_path / f".report.json.actune-p{os.getpid()}-0a1b2c3d.tmp"
    kept = [live, tmp_path / ".report.json.actune-0a1b2c3d.tmp", tmp_path / f".other.json.actune-p{int(gone.stdout)}"
            f"-0a1b2c3d.tmp", tmp_path / ".report.json.tmp"]
    young = tmp_path / f".report.json.actune-p{int(gone.stdout)}-1a1b2c3d.tmp"  # another host's live writer, maybe
    no_pid = tmp_path / ".report.json.actune-p99999999999999999999-0a1b2c3d.tmp"
    kept += [young, no_pid]
    for p in (dead, *kept):
        p.write_text("half")
    for p in (dead, no_pid):
        os.utime(p, (1, 1))  # older than DEAD_TEMP_AGE_S
    atomic_write_text(tmp_path / "report.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (*kept, tmp_path / "report.json"))
    assert live.read_text() == "half"


def test_a_full_disk_names_the_output_it_could_not_write(tmp_path, monkeypatch):
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "fsync", full)
    with pytest.raises(OSError) as e:
        atomic_write_text(tmp_path / "report.json", "{}")
    assert (e.value.errno, e.value.filename) == (errno.ENOSPC, str(tmp_path / "report.json"))
    assert list(tmp_path.iterdir()) == []


def test_a_work_folder_is_emptied_only_when_a_run_made_it(tmp_path: Path) -> None:
    work = atomic_write.fresh_work_folder(tmp_path / "bench")
    (work / "half.jsonl").write_text("x")
    assert [p.name for p in atomic_write.fresh_work_folder(work).iterdir()] == [atomic_write.WORK_MARK]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep")
    with pytest.raises(SystemExit, match="mine: not empty and not a working folder an earlier run made"):
        atomic_write.fresh_work_folder(mine)
    assert (mine / "thesis.tex").read_text() == "keep"
    (tmp_path / "empty").mkdir()
    assert atomic_write.fresh_work_folder(tmp_path / "empty").is_dir()
