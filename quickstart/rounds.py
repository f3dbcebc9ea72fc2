"""The rounds of a run, each a list of stages: one that collects episodes, then each method's export and
training. Round 1 bootstraps with the prompted base model; each later round is expert iteration with the previous
round's tuned model on the tasks still unsolved.

A new kind of round (DPO on preference pairs, GRPO) is one more function of :data:`RoundPlan`'s shape, which
:func:`rounds_of` lists for the rounds that run it: the pipeline plans and runs whatever stages it returns.
"""

from __future__ import annotations

from collections.abc import Callable

from actune.quickstart.bootstrap_rounds import bootstrap_later_round, bootstrap_round1
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import StageEstimate
from actune.quickstart.fine_tune import fine_tune_stages
from actune.quickstart.stage import Stage

__all__ = ["RoundPlan", "prompted_round", "expert_iteration_round", "rounds_of"]

RoundPlan = Callable[[RunContext, int, StageEstimate], list[Stage]]
"""(run, round number from 1, the run's estimate) -> the round's stages, in order."""


def prompted_round(run: RunContext, r: int, est: StageEstimate) -> list[Stage]:
    """Round 1: every pass of every method with the prompted base model, then each method's fine-tuning."""
    return [Stage(f"bootstrap round {r}", est.bootstrap_rounds[r - 1], lambda: bootstrap_round1(run)),
            *fine_tune_stages(run, r, est)]


def expert_iteration_round(run: RunContext, r: int, est: StageEstimate) -> list[Stage]:
    """Round ``r`` >= 2: round r-1's tuned models on the tasks no round solved, then each method's fine-tuning."""
    return [Stage(f"bootstrap round {r}", est.bootstrap_rounds[r - 1], lambda: bootstrap_later_round(run, r)),
            *fine_tune_stages(run, r, est)]


def rounds_of(cfg: QuickstartConfig) -> list[RoundPlan]:
    """The plan of each round the run makes, round 1 first."""
    return [prompted_round, *[expert_iteration_round] * (cfg.rounds - 1)]
