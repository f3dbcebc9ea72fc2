"""Replace a file all at once: readers see the old content or the new, never a half-written file.

The new content goes to a temporary file in the same folder (so the final ``os.replace`` is a rename
on one file system), is flushed and fsynced, then renamed over the target. On any error, including
KeyboardInterrupt, the temporary file is removed and the target is left as it was.

A new file gets the permissions ``open(path, "w")`` would give it (0o666 less the umask, so 0o644
under the usual umask 022); a replaced file keeps its permission bits, as with ``Path.write_text``.

A folder cannot be renamed over a non-empty one, so :func:`replace_folder` swaps with two renames (the
old folder aside, the new one in) and :func:`recover_folder` repairs a swap that a crash cut between them.

Two writers of one output: :func:`try_lock` is the one exclusive lock actune takes (the store locks its own
file with it); :func:`output_lock` holds it on a lock file beside a folder or file that is replaced whole, so a
second writer is refused, naming the holder, before it touches anything.

What an output may replace (issue #47): :func:`check_output` refuses an output equal to, containing or inside one
of the command's inputs (even when told to overwrite: it would destroy what is being read), and an existing
output the command did not write itself, unless told to overwrite.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["temp_folder_beside", "atomic_writer", "atomic_write_text", "atomic_write_bytes", "atomic_write_png",
           "replace_folder", "recover_folder", "try_lock", "open_locked", "output_lock", "lock_path",
           "check_not_an_input", "check_output", "fresh_work_folder", "is_leftover"]


_MARK = "actune-"
"""What every name actune gives a file or folder of its own beside an output carries after ``.<output name>.``: the
clean-up of dead writers' leftovers (:func:`_remove_dead_temps`) and the crash repair (:func:`recover_folder`) touch
only names with it, never a user's own ``.<name>.old`` or ``.<name>.lock``."""


def _create_temp(path: Path) -> tuple[int, Path]:
    """Create and open a new, uniquely named temporary file next to ``path``, named with this process's id (see
    :func:`_remove_temps_of_dead_writers`)."""
    _remove_temps_of_dead_writers(path)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{_MARK}p{os.getpid()}-{os.urandom(4).hex()}.tmp")
        try:
            # Mode 0o666 goes through the umask like any open(..., "w"); mkstemp's 0o600 would not.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        return fd, tmp
    raise FileExistsError(f"{path.parent}: could not create a unique temporary file for {path.name}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process; no pid at all: not ours to remove
        return True
    return True


DEAD_TEMP_AGE_S = 600
"""How old a dead writer's temp file must be before the next write removes it: a writer on another host or in another
container that shares the folder has a process id this one cannot see, and an export runs for minutes, not ten."""


def _remove_temps_of_dead_writers(path: Path) -> None:
    """Remove the temporary files a writer of ``path`` killed mid-write (SIGKILL, a power cut) left beside it: most
    single files are written under no lock, so a temp file's own process id tells a dead writer's from a live
    one's. A reused id keeps a dead one's file until that process ends too."""
    dead = re.compile(rf"\.{re.escape(path.name)}\.{re.escape(_MARK)}p([0-9]+)-[0-9a-f]{{8}}\.tmp")
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return  # the write itself names the folder's problem
    for entry in entries:
        match = dead.fullmatch(entry.name)
        if match and not _alive(int(match[1])) and not entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                if time.time() - entry.stat(follow_symlinks=False).st_mtime >= DEAD_TEMP_AGE_S:
                    os.unlink(entry.path)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file's directory entry durable; not every platform can open a folder,
    which is fine."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | Path, *, binary: bool = False, encoding: str = "utf-8") -> Iterator[IO]:
    """Open a stream whose content replaces ``path`` when the ``with`` block ends without an error.

    For writers that produce their output piece by piece (JSONL records); ``atomic_write_text`` and
    ``atomic_write_bytes`` are the one-call forms. The parent folder must exist.
    """
    path = Path(path)
    fd, tmp = _create_temp(path)
    try:
        try:
            old_mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            old_mode = None
        if old_mode is not None:
            os.fchmod(fd, old_mode)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": encoding})) as f:
            fd = -1  # the file object owns it now
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if fd != -1:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno is not None and not e.filename:  # a full disk names the output
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` with ``text`` atomically (see the module docstring)."""
    with atomic_writer(path, encoding=encoding) as f:
        f.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (see the module docstring)."""
    with atomic_writer(path, binary=True) as f:
        f.write(data)


def temp_folder_beside(out: Path) -> Path:
    """A new empty folder beside ``out`` (same file system, so :func:`replace_folder` is a rename; that swap gives it
    and everything in it the umask's modes)."""
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.{_MARK}", dir=out.parent))


def _aside(out: Path) -> Path:
    # One fixed name, so that recover_folder knows where a crashed swap left the old folder; the dash
    # keeps it apart from temp_folder_beside's names (".out.actune-XXXXXXXX" never holds one).
    return out.parent / f".{out.name}.{_MARK}swap-old"


def _fsync_tree(folder: Path) -> None:
    # After a power loss a renamed folder could otherwise hold empty or short files: its content must
    # be on disk before its name says it is complete. On the way, every file and folder gets the mode the
    # process umask gives (0644 / 0755 under umask 022): mkdtemp's 0700 and the 0600 some writers give their
    # temporary files (safetensors' adapter weights) would otherwise make an output private to its writer.
    umask = os.umask(0)
    os.umask(umask)
    for root, _, files in os.walk(folder):
        os.chmod(root, 0o777 & ~umask)
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            os.chmod(path, 0o666 & ~umask)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(root))


def recover_folder(out: str | Path) -> None:
    """Repair ``out`` after a :func:`replace_folder` that a crash interrupted; does nothing otherwise.

    Died between the two renames (``out`` missing, the old folder aside): the old folder goes back to
    ``out``. Died after them (``out`` holds the new folder): the old one aside is deleted. Call it before
    reading or writing ``out``; ``replace_folder`` calls it itself. Not safe against another process
    swapping the same ``out`` at the same time (nor is ``replace_folder``).
    """
    out = Path(out)
    aside = _aside(out)
    if not os.path.lexists(aside):
        return
    if os.path.lexists(out):
        # the old folder is deleted only once the new one is durably in place, so this one is garbage
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(aside, out)
        fsync_dir(out.parent)


def replace_folder(new: str | Path, out: str | Path) -> None:
    """Move the complete folder ``new`` to ``out``, replacing the folder there, if any.

    ``new`` must be on the same file system as ``out`` (a sibling temp folder). At every instant ``out``
    holds the old folder or the new one, except between the two renames, when the old folder waits
    aside under a fixed name for :func:`recover_folder` (run at the start of the next call, or by a
    reader) to put it back. If moving ``new`` in fails, the old folder is put back and the error
    re-raised; ``new`` is left where it was for the caller to remove. The old folder is deleted only
    after the new one is in place and the rename is on disk.
    """
    new, out = Path(new), Path(out)
    recover_folder(out)
    _fsync_tree(new)
    aside = _aside(out)
    moved_aside = False
    try:
        if os.path.lexists(out):
            os.replace(out, aside)
            moved_aside = True
            # on disk before the new folder takes the name, so a crash cannot lose both
            fsync_dir(out.parent)
        os.replace(new, out)
    except BaseException:
        if moved_aside:
            # If even this fails, the caller still sees the first error; the old folder stays aside and
            # the next recover_folder puts it back.
            with contextlib.suppress(OSError):
                os.replace(aside, out)
                fsync_dir(out.parent)
        raise
    fsync_dir(out.parent)
    if moved_aside:
        shutil.rmtree(aside, ignore_errors=True)


def try_lock(fd: int) -> bool:
    """Take an exclusive ``flock`` on an open file without waiting; False: another process holds it. It is
    released when the file is closed."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def lock_path(out: Path) -> Path:
    """The lock file :func:`output_lock` holds for ``out``."""
    # beside the output, not in it: a folder is swapped whole, and its lock must outlive the swap
    return out.parent / f".{out.name}.{_MARK}lock"


def open_locked(path: str | Path, flags: int) -> int | None:
    """``os.open(path, flags)`` holding the file's lock (:func:`try_lock`), or None if another process holds it.

    A file removed or replaced between the open and the lock (its holder removed it as it finished) is opened
    again: a lock on a file no longer at ``path`` locks nothing."""
    while True:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
        if not try_lock(fd):
            os.close(fd)
            return None
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        os.close(fd)


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "a process that is starting"
    except (OSError, UnicodeDecodeError):
        return "another process"


@contextlib.contextmanager
def output_lock(out: str | Path, error: type[Exception] = RuntimeError) -> Iterator[None]:
    """Hold the lock of the output ``out`` (a folder or a file replaced whole) for the ``with`` block.

    A second writer gets ``error`` naming ``out`` and the holder (its pid and command), and has touched
    nothing. The lock file, ``.<name>.actune-lock`` beside ``out`` (:func:`lock_path`), is removed when the block
    ends.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    path = lock_path(out)
    fd = open_locked(path, os.O_RDWR | os.O_CREAT)
    if fd is None:
        raise error(f"{out}: another process is writing it ({_holder(path)}; lock {path}); wait for it to "
                    "finish or write elsewhere")
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, {Path(sys.argv[0]).name} {' '.join(sys.argv[1:2])}".strip().encode())
        _remove_dead_temps(out)
        yield
    finally:
        path.unlink(missing_ok=True)  # before the lock goes: a waiter that opened it sees it was removed
        os.close(fd)


def is_leftover(name: str) -> bool:
    """Whether ``name`` is one actune gives what it leaves beside an output (``.<output>.actune-…``: a temp file or
    folder, a lock, a swap's old folder): a folder holding only such entries holds nothing of a user's."""
    return name.startswith(".") and f".{_MARK}" in name[1:]


def _remove_dead_temps(out: Path) -> None:
    """Remove what a writer of ``out`` killed mid-write left beside it: :func:`temp_folder_beside`'s folders and
    :func:`atomic_writer`'s files. Called holding ``out``'s lock, under which alone they are made, so none of them
    belongs to a live writer."""
    name, mark = re.escape(out.name), re.escape(_MARK)
    dead = re.compile(rf"\.{name}\.{mark}(?:[a-z0-9_]{{8}}|(?:p[0-9]+-)?[0-9a-f]{{8}}\.tmp)")
    for entry in os.scandir(out.parent):
        if dead.fullmatch(entry.name):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)


def _real(path: str | Path) -> str:
    # realpath, not Path.resolve: a symlink loop comes back as a path rather than an exception
    return os.path.realpath(path)


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def check_not_an_input(out: str | Path, inputs: Sequence[str | Path], error: type[Exception],
                       what: str = "output") -> None:
    """Raise ``error`` naming both if ``out`` is, contains or lies inside one of ``inputs`` (symlinks followed)."""
    mine = _real(out)
    for source in inputs:
        theirs = _real(source)
        if _within(theirs, mine) or _within(mine, theirs):
            relation = "is" if theirs == mine else "contains" if _within(theirs, mine) else "is inside"
            raise error(f"{out}: the {what} {relation} the input {source}; writing it would destroy what is being "
                        f"read: choose another {what}")


def check_output(out: str | Path, inputs: Sequence[str | Path], error: type[Exception], *, own: bool,
                 overwrite: bool, mine: str, also: Sequence[Path] = ()) -> None:
    """Refuse (``error``) to write ``out`` (and ``also``, written with it) over an input, or over an existing
    output that is not the command's own (``own``: the caller's test, ``mine``: what it looks for) unless
    ``overwrite``."""
    for path in (out, *also):
        check_not_an_input(path, inputs, error)
    exists = [p for p in (out, *also) if os.path.lexists(p)]
    if exists and not own and not overwrite:
        raise error(f"{exists[0]}: exists and is not this command's earlier output ({mine}); choose another "
                    "output, or pass --overwrite to replace it")


def atomic_write_png(fig: Any, path: str | Path) -> Path:
    """A matplotlib figure as a PNG at ``path``, laid out tight, written whole or not at all."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


WORK_MARK = ".actune-work"
"""The file :func:`fresh_work_folder` leaves in a folder it made: the next call may empty that folder."""


def fresh_work_folder(out: str | Path, error: type[Exception] = SystemExit) -> Path:
    """``out`` emptied for a run that starts over (a bench's working folder), or ``error`` when it holds files and no
    :data:`WORK_MARK`: a ``--out`` pointed at a user's folder is refused, never deleted."""
    out = Path(out)
    if os.path.lexists(out) and not (out / WORK_MARK).is_file() and (not out.is_dir() or any(out.iterdir())):
        raise error(f"{out}: not empty and not a working folder an earlier run made (no {WORK_MARK}); it would be "
                    "emptied: choose another --out")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / WORK_MARK).write_text("made by an actune bench; emptied by the next run with this --out\n")
    return out
