"""Custom question sets: JSONL lines ``{"question", "answer", "aliases"?, "id"?, "meta"?, "env"?}``."""

from __future__ import annotations

from typing import Any

from actune.records.task_record import Task
from actune.tasks.sources import TaskFileError

__all__ = ["custom_task"]

_KNOWN = {"id", "question", "answer", "aliases", "meta", "env", "split"}


def custom_task(rec: dict[str, Any], where: str, index: int, split: str, env: str | None) -> Task:
    question = rec.get("question")
    if not isinstance(question, str) or not question.strip():
        raise TaskFileError(f"{where}: missing or empty 'question'")
    answer = rec.get("answer")
    if not isinstance(answer, str):
        raise TaskFileError(f"{where}: missing 'answer' (a string)")
    aliases = rec.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise TaskFileError(f"{where}: 'aliases' must be a list of strings")
    meta = rec.get("meta") or {}
    if not isinstance(meta, dict):
        raise TaskFileError(f"{where}: 'meta' must be an object")
    unknown = sorted(set(rec) - _KNOWN)
    if unknown:
        raise TaskFileError(f"{where}: unknown key(s) {unknown}; extra fields go under 'meta'")
    meta = {**meta, "index": index}
    task_env = env or rec.get("env") or "wiki"
    return Task(id=str(rec.get("id") or f"custom-{split}-{index}"), question=question.strip(),
                answer=answer, env=task_env, split=split, aliases=list(aliases), meta=meta)
