"""Replace a file all at once: readers see the old content or the new, never a half-written file.

The new content goes to a temporary file in the same folder (so the final ``os.replace`` is a rename
on one file system), is flushed and fsynced, then renamed over the target. On any error, including
KeyboardInterrupt, the temporary file is removed and the target is left as it was.

A new file gets the permissions ``open(path, "w")`` would give it (0o666 less the umask, so 0o644
under the usual umask 022); a replaced file keeps its permission bits, as with ``Path.write_text``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["atomic_writer", "atomic_write_text", "atomic_write_bytes"]


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
