"""HotpotQA records -> tasks, in any of the shapes the data comes in, and the ReAct evaluation subset.

Shapes: the official list (``_id, question, answer, type, level, supporting_facts: [[title, sent]],
context: [[title, [sentences]]]``), the ``dev_v1_simplified.json`` list (question/answer/type only),
JSONL with extra fields (``supporting_titles``, ``dev_index``...), and the Hugging Face columns
(``id``, ``supporting_facts: {title: [...], sent_id: [...]}``, ``context: {title: [...], sentences: [...]}``).
"""

from __future__ import annotations

import random
from typing import Any

from actune.records.task_record import Task
from actune.tasks.sources import TaskFileError

__all__ = ["react_subset_indices", "hotpotqa_task", "REACT_DEV_SIZE", "REACT_SUBSET_SIZE", "REACT_SEED"]

REACT_DEV_SIZE = 7405
REACT_SUBSET_SIZE = 500
REACT_SEED = 233

_CORE = {"_id", "id", "question", "answer", "context"}


def react_subset_indices(n: int = REACT_DEV_SIZE, size: int = REACT_SUBSET_SIZE, seed: int = REACT_SEED) -> list[int]:
    """The dev indices the ReAct paper evaluated on, in its order."""
    idxs = list(range(n))
    random.Random(seed).shuffle(idxs)
    return idxs[:size]


def _pairs(value: Any, first: str, second: str) -> list[list[Any]]:
    """[[a, b], ...] from either a list of pairs or the column form {first: [...], second: [...]}."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [[a, b] for a, b in zip(value.get(first) or [], value.get(second) or [])]
    return [list(p)[:2] for p in value]


def hotpotqa_task(rec: dict[str, Any], where: str, index: int, split: str, env: str,
                  keep_context: bool) -> Task:
    question = rec.get("question")
    if not isinstance(question, str) or not question.strip():
        raise TaskFileError(f"{where}: missing or empty 'question'")
    answer = rec.get("answer")
    if answer is None and split != "test":
        raise TaskFileError(f"{where}: missing 'answer'")
    if answer is not None and not isinstance(answer, str):
        raise TaskFileError(f"{where}: 'answer' must be a string")
    task_id = rec.get("_id") or rec.get("id") or f"hotpotqa-{split}-{index}"
    meta: dict[str, Any] = {k: v for k, v in rec.items() if k not in _CORE}
    meta["index"] = index
    facts = _pairs(rec.get("supporting_facts"), "title", "sent_id")
    if facts:
        meta["supporting_facts"] = facts
    if "supporting_titles" not in meta and facts:
        meta["supporting_titles"] = list(dict.fromkeys(t for t, _ in facts))
    if keep_context and rec.get("context") is not None:
        meta["context"] = _pairs(rec["context"], "title", "sentences")
    return Task(id=str(task_id), question=question.strip(), answer=answer or "", env=env,
                split=split, meta=meta)
