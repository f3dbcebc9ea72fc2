"""Stop signals unwind like Ctrl-C, so every command cleans up the same way whoever stops it.

    with stop_signals_as_interrupt():
        run_stage()          # SIGTERM, SIGINT or SIGHUP -> KeyboardInterrupt here

A supervisor, ``kill`` or ``timeout`` sends SIGTERM, which Python would otherwise obey by dying at once:
no ``finally`` runs, so a vLLM server started by the stage outlives it and an open store is never
closed. Raised as KeyboardInterrupt instead, the stage's own ``with`` blocks stop the server and close
the store, and the CLI exits with status 130 ("interrupted"); a rerun resumes from the files.

SIGINT is installed too: a shell starts a background job (``actune serve &`` in a script) with SIGINT
ignored, and Python then never turns ``kill -INT`` into KeyboardInterrupt. SIGHUP (the terminal closed) is
left alone where ``nohup`` set it to be ignored. A second signal while the first one unwinds is ignored,
so stopping a server is never cut short half-way.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["run_script", "stop_signals_as_interrupt"]


@contextmanager
def stop_signals_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM, SIGINT and SIGHUP raise KeyboardInterrupt once (see the module
    docstring). Outside the main thread (where Python cannot install handlers) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal stopping
        if stopping:
            return
        stopping = True
        raise KeyboardInterrupt

    signals = [signal.SIGINT, signal.SIGTERM]
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signals.append(signal.SIGHUP)
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_script(main: Callable[[], int | str | None]) -> None:
    """Exit with what ``main`` returns, as ``sys.exit(main())`` does, for the ``bench/`` and ``scripts/`` programs: a
    stop signal unwinds ``main`` like Ctrl-C (servers it started stop; ``subprocess.run`` kills its child, whose own
    server guard then stops that child's server) and exits 130 with one line, as actune's commands do. Without
    it a bench sent SIGTERM died at once and left its children running."""
    try:
        with stop_signals_as_interrupt():
            code = main()
    except KeyboardInterrupt:
        print(f"{sys.argv[0]}: interrupted", file=sys.stderr)
        sys.exit(130)  # actune.cli.exit_codes.INTERRUPTED: the runtime may not import the CLI (test_architecture.py)
    sys.exit(code)
