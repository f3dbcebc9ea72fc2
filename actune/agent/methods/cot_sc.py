"""CoT-SC: n chains of thought sampled at T=0.7, majority vote over normalised answers."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import AsyncIterator

from actune.agent.episode import Episode, Event
from actune.agent.method_registry import MethodSpec
from actune.agent.methods.direct import COT_STEPS, cot_sample
from actune.records.trajectory import Step
from actune.tasks.metrics import normalize_answer

__all__ = ["SPEC", "run_cot_sc", "majority_vote"]


def majority_vote(answers: list[str | None]) -> tuple[int | None, dict[str, int]]:
    """Index of the first sample holding the most common answer, and the vote counts.

    Answers vote as the scorer compares them (:func:`actune.tasks.metrics.normalize_answer`), so the
    winner's group is the one exact match would judge as one answer. Samples without an answer do not
    vote; ties go to the answer seen first.
    """
    norms = [normalize_answer(a) if a else None for a in answers]
    votes = Counter(n for n in norms if n)
    if not votes:
        return None, {}
    best = max(votes.values())
    for i, n in enumerate(norms):
        if n and votes[n] == best:
            return i, dict(votes)
    return None, dict(votes)  # unreachable


async def run_cot_sc(ep: Episode) -> AsyncIterator[Event]:
    n = ep.cfg.cot_sc_n
    yield Event("iteration", 1, {"goal": ep.traj.task.question, "max_iterations": 1, "samples": n})
    base = ep.requests
    ep.requests += n  # reserve one seed offset per sample so samples differ but stay reproducible
    samples = await asyncio.gather(*[
        cot_sample(ep, temperature=ep.cfg.cot_sc_temperature, offset=base + k) for k in range(n)])
    for k, (reasoning, answer, _, _) in enumerate(samples):
        yield Event("sample", 1, {"index": k, "text": reasoning, "answer": answer})
    winner, votes = majority_vote([a for _, a, _, _ in samples])
    top = max(votes.values()) if votes else 0
    ep.traj.info["cot_sc"] = {
        "n": n,
        "votes": votes,
        "majority_votes": top,
        "samples": [{"text": r, "answer": a, "tokens": t} for r, a, t, _ in samples],
    }
    if winner is None:
        ep.traj.finish_reason = "parse_errors"
        return
    reasoning, answer, tokens, latency = samples[winner]
    yield ep.add(Step("thought", reasoning, 1, tokens=tokens, latency_s=latency, meta={"sample": winner}))
    yield ep.add(Step("answer", answer, 1, action_name="answer", action_arg=answer,
                      meta={"votes": top, "n": n}))
    ep.traj.prediction = answer
    ep.traj.finish_reason = "answered"


SPEC = MethodSpec("cot_sc", run_cot_sc, COT_STEPS, reads_pages=False, paper=True, temperature="cot_sc_temperature")
