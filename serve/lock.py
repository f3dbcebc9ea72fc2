"""A machine-wide lock so that tests and benchmarks never run two vLLM servers at once on a small machine.

The server module does not take it (users may run several servers on purpose); the test fixture and the
benchmark do.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

DEFAULT_LOCK = Path("/tmp/actune-vllm.lock")


@contextlib.contextmanager
def exclusive_server_lock(path: Path = DEFAULT_LOCK, log=None) -> Iterator[None]:
    """Hold an exclusive fcntl lock on ``path``; when someone else holds it, say so and wait."""
    log = log or (lambda msg: print(msg, file=sys.__stderr__, flush=True))
    with open(path, "a+") as handle:
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
