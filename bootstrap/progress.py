"""What the user sees of a bootstrap run: live progress on stderr, and the final summary.

Progress: episodes done/total, kept (of the target), keep rate, episodes per minute and an ETA (the
sooner of "all episodes done" and "target reached at the current keep rate"). On a terminal it is a
rich progress bar; otherwise (logs, CI) a plain line every ``log_every_s`` seconds.

Summary (:func:`summarize`): counts over the whole store, per task kind when tasks have ``meta.kind``
(attempts, correct, grounded, kept), written as ``summary.json`` beside the store (atomically).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from actune.atomic_write import atomic_write_text
from actune.bootstrap.judge import verdict_of
from actune.trajectory import read_trajectories

__all__ = ["Progress", "summarize", "write_summary", "format_summary", "summary_path"]

NO_KIND = "(no kind)"


@dataclass
class _Rates:
    keep_rate: float
    per_min: float
    eta_s: float | None


class Progress:
    """Counts episodes as they finish and shows them (see the module docstring)."""

    def __init__(self, total: int, done: int, kept: int, target: int, *, stream: TextIO | None = None,
                 enabled: bool = True, log_every_s: float = 30.0, label: str = "bootstrap") -> None:
        self.total, self.done, self.kept, self.target = total, done, kept, target
        # eval shows the same line under its own name ("eval finetuned: 12/40 episodes ...").
        self.label = label
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
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as RichProgress

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
        return (f"kept {self.kept}/{self.target} · keep rate {r.keep_rate:.0%} · {r.per_min:.1f} episodes/min · "
                f"ETA {eta}")

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


def summary_path(store: str | Path) -> Path:
    """``summary.json`` in the store's folder."""
    return Path(store).parent / "summary.json"


def _zero() -> dict[str, int]:
    return {"attempts": 0, "correct": 0, "grounded": 0, "kept": 0}


def summarize(store: str | Path, *, tasks: int, attempts_per_task: int, target_correct: int,
              run_id: str = "", interrupted: bool = False) -> dict[str, Any]:
    """Counts over every record in ``store`` (all runs that wrote it), per task kind."""
    store = Path(store)
    totals = _zero()
    by_kind: dict[str, dict[str, int]] = {}
    finish = Counter()
    run_ids: list[str] = []
    tasks_kept: set[str] = set()
    tasks_seen: set[str] = set()
    if store.exists():
        for traj in read_trajectories(store):
            v = verdict_of(traj)
            kind = str(traj.task.meta.get("kind", NO_KIND))
            row = by_kind.setdefault(kind, _zero())
            for counts in (totals, row):
                counts["attempts"] += 1
                counts["correct"] += int(bool(v and v.correct))
                counts["grounded"] += int(bool(v and v.grounded))
                counts["kept"] += int(bool(v and v.kept))
            finish[traj.finish_reason] += 1
            tasks_seen.add(traj.task.id)
            if v and v.kept:
                tasks_kept.add(traj.task.id)
            if traj.run_id not in run_ids:
                run_ids.append(traj.run_id)
    return {
        "store": str(store),
        "run_id": run_id,
        "run_ids": run_ids,
        "tasks": tasks,
        "attempts_per_task": attempts_per_task,
        "target_correct": target_correct,
        "target_reached": totals["kept"] >= target_correct,
        "interrupted": interrupted,
        "episodes": totals["attempts"],
        **{k: totals[k] for k in ("correct", "grounded", "kept")},
        "keep_rate": totals["kept"] / totals["attempts"] if totals["attempts"] else 0.0,
        "tasks_with_kept": len(tasks_kept),
        # store-wide like every count here: a run over a subset (tasks.where) resumes a store that holds
        # other runs' tasks too, so ``tasks`` (this run's task set) is no denominator for tasks_with_kept
        "tasks_in_store": len(tasks_seen),
        "by_kind": dict(sorted(by_kind.items())),
        "finish_reasons": dict(sorted(finish.items())),
    }


def write_summary(summary: dict[str, Any], path: str | Path) -> Path:
    """Write ``summary`` as JSON to ``path`` atomically (temp file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return path


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a small plain-text table (per kind, then the total)."""
    rows = [(kind, c) for kind, c in summary["by_kind"].items()]
    rows.append(("total", {k: summary[k] if k != "attempts" else summary["episodes"]
                           for k in ("attempts", "correct", "grounded", "kept")}))
    width = max(len("kind"), *(len(k) for k, _ in rows))
    lines = [f"{'kind':<{width}}  attempts  correct  grounded  kept  keep rate"]
    for kind, c in rows:
        rate = c["kept"] / c["attempts"] if c["attempts"] else 0.0
        lines.append(f"{kind:<{width}}  {c['attempts']:>8}  {c['correct']:>7}  {c['grounded']:>8}  {c['kept']:>4}  "
                     f"{rate:>9.0%}")
    state = "reached" if summary["target_reached"] else "not reached"
    lines.append(f"target {summary['target_correct']} kept: {state}; {summary['tasks_with_kept']} of "
                 f"{summary['tasks_in_store']} tasks in the store have a kept episode (this run: "
                 f"{summary['tasks']} tasks); store {summary['store']}")
    return "\n".join(lines)
