"""Scores, intervals and paired tests on hand-made records, checked against values computed here."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from eval_records import record

from actune.eval.stats import (
    _binom_two_sided,
    bootstrap_ci,
    correct_grounded,
    cost_per_episode,
    first_attempts,
    mcnemar_exact,
    metric_names,
    metric_value,
    model_stats,
    paired_comparison,
    task_values,
)


def exact_binomial_p(b: int, c: int) -> float:
    """Two-sided exact binomial test by its definition: the total probability of every outcome no more
    likely than the observed one, under Binomial(b + c, 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    pmf = [Fraction(math.comb(n, k), 2**n) for k in range(n + 1)]
    return float(min(Fraction(1), sum(p for p in pmf if p <= pmf[b])))


@pytest.mark.parametrize("b,c", [(0, 0), (3, 0), (0, 3), (1, 4), (7, 2), (10, 10), (25, 5), (6, 7), (40, 22)])
def test_mcnemar_matches_the_binomial_definition(b: int, c: int) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(exact_binomial_p(b, c), rel=1e-12)
    assert _binom_two_sided(b, c) == pytest.approx(exact_binomial_p(b, c), rel=1e-12)


def test_mcnemar_known_values() -> None:
    assert mcnemar_exact(1, 4) == 0.375  # 2 * (1 + 5) / 32
    assert mcnemar_exact(3, 0) == 0.25  # 2 * 1 / 8
    assert mcnemar_exact(5, 5) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_bootstrap_ci_is_seeded_and_contains_the_mean() -> None:
    x = [0.1, 0.9, 0.35, 1.0, 0.0, 0.62, 0.47, 0.8, 0.15, 0.33, 0.71, 0.05, 0.58]  # F1-like values
    a = bootstrap_ci(x, samples=500, confidence=0.9, seed=3)
    assert a.mean == pytest.approx(sum(x) / 13) and a.n == 13
    assert a.low <= a.mean <= a.high and 0 <= a.low < a.high <= 1
    assert bootstrap_ci(x, samples=500, confidence=0.9, seed=3) == a  # same seed, same interval
    assert bootstrap_ci(x, samples=500, confidence=0.9, seed=4) != a
    wide = bootstrap_ci(x, samples=500, confidence=0.99, seed=3)
    assert wide.low <= a.low and wide.high >= a.high
    # the interval is the percentile interval of resampled means drawn from default_rng(seed)
    rng = np.random.default_rng(3)
    means = np.asarray(x, float)[rng.integers(0, 13, size=(500, 13))].mean(axis=1)
    assert a.low == pytest.approx(float(np.quantile(means, 0.05)))
    assert a.high == pytest.approx(float(np.quantile(means, 0.95)))


def test_bootstrap_ci_edge_cases() -> None:
    same = bootstrap_ci([1.0] * 5, samples=100, confidence=0.95, seed=0)
    assert (same.mean, same.low, same.high, same.n) == (1.0, 1.0, 1.0, 5)
    empty = bootstrap_ci([], samples=100, confidence=0.95, seed=0)
    assert (empty.mean, empty.low, empty.high, empty.n) == (None, None, None, 0)


def records_two_attempts():
    # t1: 2 of 2 right; t2: 1 of 2; t3: 0 of 2 (comparison kind); t4: 1 of 2
    rs = []
    for tid, flags, kind in [("t1", (1, 1), "single"), ("t2", (1, 0), "single"), ("t3", (0, 0), "comparison"),
                             ("t4", (0, 1), "bridge")]:
        for a, ok in enumerate(flags):
            rs.append(record(tid, correct=bool(ok), attempt=a, kind=kind, f1=0.5 if not ok else 1.0))
    return rs


def test_model_stats_average_attempts_then_tasks() -> None:
    rs = records_two_attempts()
    assert task_values(rs, "correct") == {"t1": 1.0, "t2": 0.5, "t3": 0.0, "t4": 0.5}
    assert metric_names(rs) == ["correct_grounded", "correct", "em", "f1"]
    s = model_stats(rs, samples=200, confidence=0.95, seed=0)
    assert s["episodes"] == 8 and s["tasks"] == 4
    assert s["metrics"]["correct"]["mean"] == pytest.approx(0.5)
    assert s["metrics"]["em"]["mean"] == pytest.approx(0.5)
    assert s["metrics"]["f1"]["mean"] == pytest.approx((1 + 0.75 + 0.5 + 0.75) / 4)
    assert s["by_kind"].keys() == {"single", "comparison", "bridge"}
    assert s["by_kind"]["single"]["tasks"] == 2 and s["by_kind"]["single"]["episodes"] == 4
    assert s["by_kind"]["single"]["metrics"]["correct"]["mean"] == pytest.approx(0.75)
    assert s["by_kind"]["comparison"]["metrics"]["correct"] == {"mean": 0.0, "low": 0.0, "high": 0.0, "n": 1}


def test_correct_grounded_one_record_refuses_a_record_without_a_verdict() -> None:
    right, wrong = record("t1", correct=True, grounded=True), record("t2", correct=False, grounded=True)
    unread, unjudged = record("t4", correct=True, grounded=False), record("t3", correct=True)
    assert [correct_grounded(t) for t in (right, wrong, unread)] == [True, False, False]
    with pytest.raises(ValueError, match="t3: no evidence-level verdict"):
        correct_grounded(unjudged)


def test_first_attempts_keeps_each_tasks_first_record_in_file_order() -> None:
    rs = records_two_attempts()
    first = first_attempts(reversed(rs))  # file order, not the attempt number, decides
    assert list(first) == ["t4", "t3", "t2", "t1"]
    assert [first[t].attempt for t in first] == [1, 1, 1, 1]
    assert [first[t].correct for t in ("t1", "t2", "t3", "t4")] == [True, False, False, True]


def test_paired_comparison_counts_discordant_pairs() -> None:
    # 10 shared tasks: A right on 0-5, B right on 3-9 -> b = 3 (0,1,2), c = 4 (6,7,8,9)
    a = [record(f"q{i}", correct=i <= 5) for i in range(10)]
    b = [record(f"q{i}", correct=i >= 3) for i in range(10)] + [record("extra", correct=True)]
    cmp = paired_comparison(a, b, samples=300, confidence=0.95, seed=1)
    assert (cmp.tasks, cmp.pairs, cmp.b, cmp.c) == (10, 10, 3, 4)
    assert cmp.mean_a == pytest.approx(0.6) and cmp.mean_b == pytest.approx(0.7)
    assert cmp.diff.mean == pytest.approx(0.1)
    assert cmp.diff.low <= 0.1 <= cmp.diff.high
    assert cmp.p_value == pytest.approx(exact_binomial_p(3, 4))
    assert cmp.p_value == 1.0  # 2 * P(X <= 3) for X ~ Bin(7, 1/2) = 2 * 64/128, capped at 1
    same = paired_comparison(a, a, samples=300, confidence=0.95, seed=1)
    assert (same.b, same.c, same.p_value, same.diff.mean, same.diff.low, same.diff.high) == (0, 0, 1.0, 0, 0, 0)


def test_correct_grounded_needs_both_and_skips_unjudged_records() -> None:
    rs = [record("t1", correct=True, grounded=True, kind="bridge"),     # counts
          record("t2", correct=True, grounded=False, kind="bridge"),    # a lucky guess: 0
          record("t3", correct=False, grounded=True, kind="single"),    # read everything, answered wrong: 0
          record("t4", correct=True, grounded=None, kind="single")]     # judged before eval kept verdicts: absent
    assert [metric_value(t, "correct_grounded") for t in rs] == [1.0, 0.0, 0.0, None]
    assert task_values(rs, "correct_grounded") == {"t1": 1.0, "t2": 0.0, "t3": 0.0}
    assert metric_names(rs) == ["correct_grounded", "correct", "em", "f1"]
    assert metric_names([]) == ["correct_grounded", "correct"]
    s = model_stats(rs, samples=200, confidence=0.95, seed=0)
    assert list(s["metrics"]) == ["correct_grounded", "correct", "em", "f1"]
    assert s["metrics"]["correct_grounded"]["mean"] == pytest.approx(1 / 3)
    assert s["metrics"]["correct_grounded"]["n"] == 3
    assert s["metrics"]["correct"]["mean"] == 0.75 and s["metrics"]["correct"]["n"] == 4
    assert s["by_kind"]["bridge"]["metrics"]["correct_grounded"]["mean"] == 0.5
    assert s["by_kind"]["single"]["metrics"]["correct_grounded"]["mean"] == 0.0
    assert s["by_kind"]["single"]["metrics"]["correct_grounded"]["n"] == 1
    # only unjudged records: no value, not 0
    old = model_stats([record("t4", correct=True)], samples=200, confidence=0.95, seed=0)
    assert old["metrics"]["correct_grounded"] == {"mean": None, "low": None, "high": None, "n": 0}
    # the stored verdict counts when the score is missing
    t = record("t5", correct=True)
    t.info["verdict"] = {"grounded": True}
    assert metric_value(t, "correct_grounded") == 1.0


def test_paired_correct_grounded_counts_and_mcnemar() -> None:
    # 8 shared tasks; per task (A correct, A grounded, B correct, B grounded)
    spec = {
        "q0": (True, True, True, True),     # both count
        "q1": (True, True, True, False),    # A counts, B guessed          -> b
        "q2": (True, True, False, True),    # A counts, B wrong             -> b
        "q3": (True, False, True, True),    # A guessed, B counts           -> c
        "q4": (False, True, True, True),    # A wrong, B counts             -> c
        "q5": (False, False, True, True),   # -> c
        "q6": (True, False, True, False),   # both guessed: neither counts
        "q7": (True, True, True, None),     # B unjudged: not a pair for correct_grounded
    }
    a = [record(t, correct=ac, grounded=ag) for t, (ac, ag, _, _) in spec.items()]
    b = [record(t, correct=bc, grounded=bg) for t, (_, _, bc, bg) in spec.items()]
    cg = paired_comparison(a, b, metric="correct_grounded", samples=300, confidence=0.95, seed=1)
    assert (cg.metric, cg.tasks, cg.pairs, cg.b, cg.c) == ("correct_grounded", 7, 7, 2, 3)
    assert cg.mean_a == pytest.approx(3 / 7) and cg.mean_b == pytest.approx(4 / 7)
    assert cg.diff.mean == pytest.approx(1 / 7)
    assert cg.p_value == 1.0  # 2 * P(X <= 2), X ~ Bin(5, 1/2) = 2 * 16/32
    assert cg.p_value == pytest.approx(exact_binomial_p(2, 3))
    c = paired_comparison(a, b, metric="correct", samples=300, confidence=0.95, seed=1)
    # correct: A wrong on q4, q5 (B right) -> c = 2; A right, B wrong on q2 -> b = 1; all 8 pair
    assert (c.tasks, c.pairs, c.b, c.c) == (8, 8, 1, 2)
    assert c.mean_a == pytest.approx(6 / 8) and c.mean_b == pytest.approx(7 / 8)
    assert c.p_value == 1.0


def test_cost_per_episode() -> None:
    rs = [record("a", correct=True, prompt_tokens=1000, completion_tokens=50, wall_s=2.0),
          record("b", correct=False, prompt_tokens=3000, completion_tokens=150, wall_s=4.5),
          record("b", correct=False, attempt=1, prompt_tokens=2000, completion_tokens=100, wall_s=1.0)]
    assert cost_per_episode(rs) == {"episodes": 3, "prompt_tokens": 2000.0, "completion_tokens": 100.0,
                                    "wall_s": 2.5}
    assert cost_per_episode([]) == {"episodes": 0, "prompt_tokens": None, "completion_tokens": None, "wall_s": None}
