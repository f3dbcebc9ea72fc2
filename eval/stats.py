"""Scores with bootstrap confidence intervals, per task kind, and paired tests between two models.

    est = metric_estimate(records, "correct", samples=1000, confidence=0.95, seed=0)   # mean, low, high
    cmp = paired_comparison(prompted, tuned, samples=1000, confidence=0.95, seed=0)      # tuned - prompted

The task is the unit of resampling (a task's attempts are averaged first), so an interval reflects how many
questions were asked, not how many episodes ran; the same inputs and seed give the same numbers. The headline
metric, ``correct_grounded``, counts an episode only when it is correct and the judge found it grounded, so a
small model's lucky guesses on two-way comparisons do not count; a record without the score is left out, never
counted as 0. Two models are compared on the tasks both ran: a paired bootstrap of the per-task difference and an
exact McNemar test. :func:`cost_per_episode` gives tokens and seconds per episode.

The rules in full: docs/modules.md, actune.eval.stats.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from actune.records.trajectory import Trajectory

__all__ = ["Estimate", "PairedComparison", "METRICS", "HEADLINE", "PAGES", "PAIRED_METRICS", "NO_KIND", "metric_names",
           "metric_value", "correct_grounded", "first_attempts", "task_values", "bootstrap_ci", "metric_estimate",
           "model_stats", "mcnemar_exact", "paired_comparison", "cost_per_episode"]

HEADLINE = "correct_grounded"
"""The metric a report leads with (see the module docstring)."""
PAGES = "correct_pages_read"
"""Correct and every supporting page opened (the judge's ``pages_read``): the page-level column beside the
evidence-level headline."""
METRICS = (HEADLINE, "correct", PAGES, "em", "f1", "acc", "won")
"""Metrics in report order: ``correct_grounded`` and ``correct`` (the task's own correctness flag: exact
match for QA, label accuracy for FEVER, a win for ALFWorld) always, then the metric's scores when every
record has them."""
PAIRED_METRICS = (HEADLINE, "correct")
"""Metrics the paired comparison against the first model is made on."""
ALWAYS = (HEADLINE, "correct")
NO_KIND = "(no kind)"


@dataclass
class Estimate:
    """A mean over tasks with its bootstrap interval (None when there are no tasks)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    """Tasks the mean is over."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _grounded(traj: Trajectory) -> bool | None:
    """The judge's grounding verdict of a record: its ``grounded`` score, else ``info["verdict"]``
    (None: never judged)."""
    v = traj.scores.get("grounded")
    if v is not None:
        return bool(v)
    verdict = traj.info.get("verdict")
    if isinstance(verdict, dict) and verdict.get("evidence_known") is False:
        return None
    if isinstance(verdict, dict) and isinstance(verdict.get("grounded"), bool):
        return verdict["grounded"]
    return None


def metric_value(traj: Trajectory, metric: str) -> float | None:
    """``metric`` of one record: ``correct`` from its flag, ``correct_grounded`` from the flag and the
    grounding verdict, anything else from its scores (None: absent)."""
    if metric == "correct":
        return float(bool(traj.correct))
    if metric == HEADLINE:
        grounded = _grounded(traj)
        return None if grounded is None else float(bool(traj.correct) and grounded)
    if metric == PAGES:
        pages = traj.scores.get("pages_read")
        return None if pages is None else float(bool(traj.correct) and bool(pages))
    v = traj.scores.get(metric)
    return None if v is None else float(v)


def metric_names(records: Sequence[Trajectory]) -> list[str]:
    """``correct_grounded`` and ``correct`` (always: a report has the same headline columns whatever its
    records hold), then the other :data:`METRICS` every record has, in that order."""
    rest = [m for m in METRICS if m not in ALWAYS and records
            and all(metric_value(t, m) is not None for t in records)]
    return [*ALWAYS, *rest]


def correct_grounded(traj: Trajectory) -> bool:
    """Whether one record is correct & grounded (:data:`HEADLINE`), for pairing records one by one; a record with no
    evidence-level verdict (unjudged, or its evidence unknown) is refused, never counted as a miss."""
    value = metric_value(traj, HEADLINE)
    if value is None:
        raise ValueError(f"{traj.task.id}: no evidence-level verdict to pair")
    return value == 1.0


def first_attempts(records: Iterable[Trajectory]) -> dict[str, Trajectory]:
    """Task id -> its first record in file order (a greedy eval writes one a task), for pairing two models'
    episodes question by question."""
    out: dict[str, Trajectory] = {}
    for t in records:
        out.setdefault(t.task.id, t)
    return out


def task_values(records: Iterable[Trajectory], metric: str) -> dict[str, float]:
    """Task id -> the metric averaged over that task's attempts (records without it are left out)."""
    sums: dict[str, list[float]] = defaultdict(list)
    for t in records:
        v = metric_value(t, metric)
        if v is not None:
            sums[t.task.id].append(v)
    return {tid: float(np.mean(vs)) for tid, vs in sums.items()}


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, samples: int, confidence: float, seed: int) -> Estimate:
    """Mean of ``values`` and its percentile bootstrap interval (``samples`` resamples with replacement)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Estimate(None, None, None, 0)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, n, size=(samples, n))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return Estimate(float(x.mean()), float(low), float(high), n)


def metric_estimate(records: Iterable[Trajectory], metric: str, *, samples: int, confidence: float,
                    seed: int) -> Estimate:
    per_task = task_values(records, metric)
    return bootstrap_ci([per_task[k] for k in sorted(per_task)], samples=samples, confidence=confidence, seed=seed)


def model_stats(records: Sequence[Trajectory], *, samples: int, confidence: float, seed: int,
                metrics: Sequence[str] | None = None, per_kind: bool = True) -> dict[str, Any]:
    """Episodes, tasks, each metric's estimate (``metrics``, default :func:`metric_names`), and with ``per_kind``
    the same per task kind (``task.meta["kind"]``, as ``by_kind``)."""

    def block(recs: Sequence[Trajectory], metrics: list[str]) -> dict[str, Any]:
        return {
            "episodes": len(recs),
            "tasks": len({t.task.id for t in recs}),
            "metrics": {m: metric_estimate(recs, m, samples=samples, confidence=confidence, seed=seed).to_dict()
                        for m in metrics},
        }

    metrics = list(metrics) if metrics is not None else metric_names(records)
    if not per_kind:
        return block(records, metrics)
    by_kind: dict[str, list[Trajectory]] = defaultdict(list)
    for t in records:
        by_kind[str(t.task.meta.get("kind", NO_KIND))].append(t)
    out = block(records, metrics)
    out["by_kind"] = {kind: block(recs, metrics) for kind, recs in sorted(by_kind.items())}
    return out


def _binom_two_sided(b: int, c: int) -> float:
    """Exact two-sided sign-test p-value from the binomial pmf (math.comb, exact integers until the end)."""
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**n)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar p-value for ``b`` and ``c`` discordant pairs (scipy's binomtest when installed)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    try:
        from scipy.stats import binomtest
    except ImportError:
        return _binom_two_sided(b, c)
    return float(min(1.0, binomtest(min(b, c), b + c, 0.5).pvalue))


@dataclass
class PairedComparison:
    """Model B against model A on the tasks (and attempts) both ran."""

    metric: str
    tasks: int
    """Tasks both models ran."""
    pairs: int
    """(task, attempt) episodes both ran and both have the metric for (McNemar's pairs)."""
    mean_a: float | None
    mean_b: float | None
    diff: Estimate
    """B - A per task, averaged over tasks, with its paired bootstrap interval."""
    b: int
    """Pairs A got right and B wrong."""
    c: int
    """Pairs A got wrong and B right."""
    p_value: float
    """Exact McNemar two-sided p-value (on the metric's values read as flags)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_comparison(a: Sequence[Trajectory], b: Sequence[Trajectory], *, metric: str = "correct", samples: int,
                      confidence: float, seed: int) -> PairedComparison:
    """Compare ``b`` against ``a`` (see the module docstring)."""
    ea = {(t.task.id, t.attempt): t for t in a}
    eb = {(t.task.id, t.attempt): t for t in b}
    # pairs where both records have the metric: an unjudged record has no correct_grounded to compare
    flags = {k: (metric_value(ea[k], metric), metric_value(eb[k], metric)) for k in ea.keys() & eb.keys()}
    common = sorted(k for k, (x, y) in flags.items() if x is not None and y is not None)
    va = task_values((ea[k] for k in common), metric)
    vb = task_values((eb[k] for k in common), metric)
    tasks = sorted(va.keys() & vb.keys())
    diff = bootstrap_ci([vb[t] - va[t] for t in tasks], samples=samples, confidence=confidence, seed=seed)
    n_b = sum(1 for k in common if flags[k][0] == 1.0 and flags[k][1] != 1.0)
    n_c = sum(1 for k in common if flags[k][0] != 1.0 and flags[k][1] == 1.0)
    return PairedComparison(
        metric=metric, tasks=len(tasks), pairs=len(common),
        mean_a=float(np.mean([va[t] for t in tasks])) if tasks else None,
        mean_b=float(np.mean([vb[t] for t in tasks])) if tasks else None,
        diff=diff, b=n_b, c=n_c, p_value=mcnemar_exact(n_b, n_c),
    )


def cost_per_episode(records: Sequence[Trajectory]) -> dict[str, Any]:
    """``episodes`` and the mean ``prompt_tokens``, ``completion_tokens`` and ``wall_s`` per episode (None
    without episodes), from each record's ``usage`` and ``timings``."""
    n = len(records)

    def mean(values: Iterable[float]) -> float | None:
        return float(np.mean(list(values))) if n else None

    return {
        "episodes": n,
        "prompt_tokens": mean(t.usage.prompt_tokens for t in records),
        "completion_tokens": mean(t.usage.completion_tokens for t in records),
        "wall_s": mean(t.timings.wall_s for t in records),
    }
