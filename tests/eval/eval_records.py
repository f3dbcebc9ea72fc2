"""Hand-made trajectory records for the eval tests (no model, no environment)."""

from __future__ import annotations

from actune.records.trajectory import TaskRecord, Trajectory


def record(task_id: str, *, correct: bool, attempt: int = 0, kind: str | None = "single",
           prediction: str | None = "x", finish_reason: str = "answered", supporting: list[str] | None = None,
           read: list[str] | None = None, em: float | None = None, f1: float | None = None,
           adapter: str | None = None, grounded: bool | None = None, prompt_tokens: int = 0,
           completion_tokens: int = 0, wall_s: float = 0.0, method: str = "react") -> Trajectory:
    """One record; ``grounded`` (not None) stores a judge's grounding verdict as
    :func:`actune.judge.record_verdict` does (None: an unjudged, older record)."""
    meta: dict = {}
    if kind is not None:
        meta["kind"] = kind
    if supporting is not None:
        meta["supporting_titles"] = supporting
    scores = {}
    scores["em"] = float(correct) if em is None else em
    scores["f1"] = float(correct) if f1 is None else f1
    t = Trajectory(task=TaskRecord(task_id, f"question {task_id}?", "gold", meta=meta), method=method,
                   prediction=prediction, correct=correct, finish_reason=finish_reason, scores=scores,
                   attempt=attempt, info={"env_info": {"titles": list(read or [])}})
    t.model.adapter = adapter
    t.usage.prompt_tokens = prompt_tokens
    t.usage.completion_tokens = completion_tokens
    t.timings.wall_s = wall_s
    if grounded is not None:
        t.scores["grounded"] = float(grounded)
        t.info["verdict"] = {"correct": correct, "grounded": grounded, "kept": correct and grounded}
    return t
