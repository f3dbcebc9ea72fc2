"""Replace a file all at once: readers see the old content or the new, never a half-written file.

The new content goes to a temporary file in the same folder (so the final ``os.replace`` is a rename
on one file system), is flushed and fsynced, then renamed over the target. On any error, including
KeyboardInterrupt, the temporary file is removed and the target is left as it was.

A new file gets the permissions ``open(path, "w")`` would give it (0o666 less the umask, so 0o644
under the usual umask 022); a replaced file keeps its permission bits, as with ``Path.write_text``.

A folder cannot be renamed over a non-empty one, so :func:`replace_folder` swaps with two renames (the
old folder aside, the new one in) and :func:`recover_folder` repairs a swap that a crash cut between them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_writer", "atomic_write_text", "atomic_write_bytes", "atomic_write_png", "replace_folder",
           "recover_folder"]


def _create_temp(path: Path) -> tuple[int, Path]:
    """Create and open a new, uniquely named temporary file next to ``path``."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            # Mode 0o666 goes through the umask like any open(..., "w"); mkstemp's 0o600 would not.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        return fd, tmp
    raise FileExistsError(f"{path.parent}: could not create a unique temporary file for {path.name}")


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
    except BaseException:
        if fd != -1:
            os.close(fd)
        tmp.unlink(missing_ok=True)
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


def _aside(out: Path) -> Path:
    # One fixed name, so that recover_folder knows where a crashed swap left the old folder; the dash
    # keeps it apart from tempfile.mkdtemp names (".out.XXXXXXXX" never holds one).
    return out.parent / f".{out.name}.swap-old"


def _fsync_tree(folder: Path) -> None:
    # After a power loss a renamed folder could otherwise hold empty or short files: its content must
    # be on disk before its name says it is complete.
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
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


def atomic_write_png(fig: Any, path: str | Path) -> Path:
    """A matplotlib figure as a PNG at ``path``, laid out tight, written whole or not at all."""
    import io

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)
