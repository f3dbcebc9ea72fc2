"""Scoring a prediction: HotpotQA EM/F1 (the official ``hotpot_evaluate_v1.py`` rules), FEVER accuracy,
ALFWorld wins.

``score_prediction`` dispatches on the task: ``env == "fever"`` (or ``meta["metric"] == "label"``)
-> label accuracy; ``env == "alfworld"`` (or ``meta["metric"] == "won"``) -> the game's win in
``info["won"]``; anything else -> question answering, EM and F1 maxed over the answer and its aliases.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from actune.records.task_record import Task
from actune.text import normalize_label

__all__ = ["normalize_answer", "exact_match", "f1_score", "qa_scores", "score_prediction"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)
_YES_NO = ("yes", "no", "noanswer")


def normalize_answer(s: str) -> str:
    """Lower case, ASCII punctuation removed, articles removed, whitespace collapsed (official order)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str) -> tuple[float, float, float]:
    """(f1, precision, recall) over normalised tokens; yes/no/noanswer must match exactly or score 0."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _YES_NO or ref in _YES_NO) and pred != ref:
        return 0.0, 0.0, 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def qa_scores(prediction: str, golds: list[str]) -> dict[str, float]:
    """EM, F1, precision, recall: each the max over the gold answers (answer + aliases)."""
    golds = [g for g in golds if g is not None] or [""]
    em = max(exact_match(prediction, g) for g in golds)
    f1s = [f1_score(prediction, g) for g in golds]
    return {"em": em, "f1": max(f[0] for f in f1s), "precision": max(f[1] for f in f1s),
            "recall": max(f[2] for f in f1s)}


_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def strip_citations(text: str) -> str:
    """``"Paris [1], [2]."`` -> ``"Paris,."``: numbered source markers removed."""
    return _CITATION.sub("", text).strip()


def score_prediction(task: Task, prediction: str | None, info: dict) -> tuple[bool, dict[str, float]]:
    """(correct, metrics) for one finished episode. ``prediction`` is None when the agent gave no answer."""
    metric = task.meta.get("metric") if isinstance(task.meta, dict) else None
    if task.env == "alfworld" or metric == "won":
        won = bool((info or {}).get("won", False))
        return won, {"won": float(won)}
    if task.env == "fever" or metric == "label":
        pred = normalize_label(prediction) if prediction is not None else None
        acc = float(pred is not None and pred == normalize_label(task.answer))
        return acc == 1.0, {"acc": acc, "em": acc}
    if prediction is None:
        return False, {"em": 0.0, "f1": 0.0, "precision": 0.0, "recall": 0.0}
    if task.env == "docqa":
        # Document-QA answers cite sources ("Paris [1][2]"); the citations are not part of the answer.
        prediction = strip_citations(prediction)
    scores = qa_scores(prediction, [task.answer, *task.aliases])
    return scores["em"] == 1.0, scores
