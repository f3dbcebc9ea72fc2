"""A lock so that tests and benchmarks never run two vLLM servers at once on a small machine.

The server module does not take it (users may run several servers on purpose); the test fixture and the
benchmark do.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def default_lock() -> Path:
    """``<tmp>/actune-<uid>/vllm.lock``: in a folder only this user can write, so nobody can plant a symlink
    where the lock is opened (a fixed name in ``/tmp`` would let another user point it at a file of ours)."""
    folder = Path(tempfile.gettempdir()) / f"actune-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PermissionError(f"{folder}: not a private folder of this user; remove it and run again")
    return folder / "vllm.lock"


def _open_lock(path: Path):
    # O_NOFOLLOW: a symlink at the lock's path is refused, never followed (and its target never truncated)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    return os.fdopen(fd, "r+")


@contextlib.contextmanager
def exclusive_server_lock(path: Path | None = None, log=None) -> Iterator[None]:
    """Hold an exclusive fcntl lock on ``path`` (:func:`default_lock`); when someone else holds it, say so and
    wait."""
    log = log or (lambda msg: print(msg, file=sys.__stderr__, flush=True))
    path = path or default_lock()
    with _open_lock(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            log(f"waiting for {path} (held by {holder}): only one vLLM server may run at a time here")
            started = time.monotonic()
            fcntl.flock(handle, fcntl.LOCK_EX)
            log(f"got {path} after {time.monotonic() - started:.0f} s")
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}: {' '.join(sys.argv)[:200]}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
