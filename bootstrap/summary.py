"""The bootstrap summary: counts over the whole store, per task kind when tasks have ``meta.kind``
(attempts, correct, grounded, kept), written as ``summary.json`` beside the store (atomically)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from actune.agent.reflection_parts import reflection_part_problems
from actune.judge import verdict_of
from actune.records.atomic_write import atomic_write_text
from actune.records.jsonl import json_object
from actune.records.trajectory import read_trajectories

__all__ = ["summarize", "write_summary", "format_summary", "summary_path", "foreign_summary"]

NO_KIND = "(no kind)"


def summary_path(store: str | Path) -> Path:
    """``summary.json`` in the store's folder."""
    return Path(store).parent / "summary.json"


def foreign_summary(store: str | Path) -> Path | None:
    """:func:`summary_path` of ``store`` when a file there is not a bootstrap summary (a JSON object with
    ``by_kind`` and ``finish_reasons``): someone else's file, which the summary would replace; else None."""
    path = summary_path(store)
    if not os.path.lexists(path):
        return None
    summary = json_object(path)
    return None if summary is not None and {"by_kind", "finish_reasons"} <= summary.keys() else path


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
    incomplete = 0  # kept ReflAct episodes with a reflection lacking a part (actune.judge)
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
                incomplete += bool(reflection_part_problems(traj))
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
        "kept_with_incomplete_reflections": incomplete,
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
    if summary.get("kept_with_incomplete_reflections"):
        lines.append(f"{summary['kept_with_incomplete_reflections']} kept ReflAct episodes have a reflection "
                     "lacking a part (current state, latest discovery, goal relation); "
                     "export.require_reflection_parts=true leaves them out of a ReflAct-format export")
    return "\n".join(lines)
