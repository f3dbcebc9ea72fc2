"""Live progress of a collection run (bootstrap or eval) on stderr.

Episodes done/total, kept (of the target), keep rate, episodes per minute and an ETA (the sooner of "all
episodes done" and "target reached at the current keep rate"). On a terminal it is a rich progress bar;
otherwise (logs, CI) a plain line every ``log_every_s`` seconds. Eval names what it counts by what it
means there (``kept_word="solved", rate_word="solve rate"``): an eval episode is not kept for anything.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
from rich.progress import Progress as RichProgress

__all__ = ["Progress"]


@dataclass
class _Rates:
    keep_rate: float
    per_min: float
    eta_s: float | None


class Progress:
    """Counts episodes as they finish and shows them (see the module docstring)."""

    def __init__(self, total: int, done: int, kept: int, target: int, *, stream: TextIO | None = None,
                 enabled: bool = True, log_every_s: float = 30.0, label: str = "bootstrap",
                 kept_word: str = "kept", rate_word: str = "keep rate") -> None:
        self.total, self.done, self.kept, self.target = total, done, kept, target
        # eval shows the same line under its own name ("eval finetuned: 12/40 episodes ...").
        self.label = label
        self.kept_word, self.rate_word = kept_word, rate_word
        self.session_done = 0
        self.session_kept = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.log_every_s = log_every_s
        self._t0 = time.monotonic()
        self._last_log = self._t0
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> "Progress":
        if self.enabled and self.stream.isatty():
            self._bar = RichProgress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[stats]}"),
                                     console=Console(file=self.stream), transient=False)
            self._bar.start()
            self._task = self._bar.add_task("episodes", total=self.total, completed=self.done,
                                            stats=self._stats())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.update(self._task, stats=self._stats())
            self._bar.stop()
        elif self.enabled:
            self._log()

    def rates(self) -> _Rates:
        elapsed = max(time.monotonic() - self._t0, 1e-9)
        per_min = self.session_done / elapsed * 60
        keep_rate = self.session_kept / self.session_done if self.session_done else 0.0
        eta = None
        if per_min > 0:
            left = self.total - self.done
            if keep_rate > 0:
                left = min(left, (self.target - self.kept) / keep_rate)
            eta = max(left, 0) / per_min * 60
        return _Rates(keep_rate, per_min, eta)

    def _stats(self) -> str:
        r = self.rates()
        eta = "?" if r.eta_s is None else _duration(r.eta_s)
        return (f"{self.kept_word} {self.kept}/{self.target} · {self.rate_word} {r.keep_rate:.0%} · "
                f"{r.per_min:.1f} episodes/min · ETA {eta}")

    def _log(self) -> None:
        print(f"{self.label}: {self.done}/{self.total} episodes · {self._stats()}", file=self.stream, flush=True)
        self._last_log = time.monotonic()

    def episode(self, kept: bool) -> None:
        """One more episode finished (and was stored)."""
        self.done += 1
        self.session_done += 1
        self.kept += int(kept)
        self.session_kept += int(kept)
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, stats=self._stats())
        elif time.monotonic() - self._last_log >= self.log_every_s:
            self._log()


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"
