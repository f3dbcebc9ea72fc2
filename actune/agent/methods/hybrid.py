"""The ReAct paper's hybrids (§3.2): ReAct -> CoT-SC and CoT-SC -> ReAct.

``steps`` of the record hold the phase that produced the prediction; an abandoned phase is kept in
``info["phases"]`` (method, finish reason, its steps) so nothing the model did is lost.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import AsyncIterator

from actune.agent.episode import Episode, EpisodeEnd, Event
from actune.agent.method_registry import MethodSpec
from actune.agent.methods.cot_sc import run_cot_sc
from actune.agent.methods.direct import COT_STEPS
from actune.agent.methods.interactive import run_interactive
from actune.agent.methods.react import STEPS as REACT_STEPS

__all__ = ["COTSC_REACT", "REACT_COTSC", "run_react_cotsc", "run_cotsc_react"]


def _close_phase(ep: Episode, method: str) -> dict:
    phase = {"method": method, "finish_reason": ep.traj.finish_reason, "prediction": ep.traj.prediction,
             "steps": [asdict(s) for s in ep.traj.steps]}
    ep.traj.info.setdefault("phases", []).append(phase)
    ep.traj.steps = []
    ep.traj.prediction = None
    return phase


async def run_react_cotsc(ep: Episode) -> AsyncIterator[Event]:
    """ReAct; when it gives no answer within its step budget, back off to CoT-SC."""
    budget = ep.cfg.hybrid_react_steps or ep.cfg.step_budget(ep.env.name)
    try:
        async for ev in run_interactive(ep, "react", budget):
            yield ev
    except EpisodeEnd as e:
        if e.reason == "server_error":
            raise
        ep.traj.finish_reason = e.reason
    if ep.traj.finish_reason == "answered" and ep.traj.prediction is not None:
        ep.traj.info["phases"] = [{"method": "react", "finish_reason": "answered"}]
        return
    phase = _close_phase(ep, "react")
    yield Event("backoff", 0, {"from": "react", "to": "cot_sc", "reason": phase["finish_reason"]})
    async for ev in run_cot_sc(ep):
        yield ev
    ep.traj.info["phases"].append({"method": "cot_sc", "finish_reason": ep.traj.finish_reason})


async def run_cotsc_react(ep: Episode) -> AsyncIterator[Event]:
    """CoT-SC; when the majority answer has fewer than n/2 votes, back off to ReAct."""
    async for ev in run_cot_sc(ep):
        yield ev
    n = ep.cfg.cot_sc_n
    top = ep.traj.info.get("cot_sc", {}).get("majority_votes", 0)
    if top >= n / 2 and ep.traj.prediction is not None:
        ep.traj.info["phases"] = [{"method": "cot_sc", "finish_reason": ep.traj.finish_reason}]
        return
    phase = _close_phase(ep, "cot_sc")
    yield Event("backoff", 0, {"from": "cot_sc", "to": "react", "reason": f"{top}/{n} votes",
                               "prediction": phase["prediction"]})
    budget = ep.cfg.hybrid_react_steps or ep.cfg.step_budget(ep.env.name)
    async for ev in run_interactive(ep, "react", budget):
        yield ev
    ep.traj.info["phases"].append({"method": "react", "finish_reason": ep.traj.finish_reason})


# records hold the answering phase's steps: ReAct's or CoT's
REACT_COTSC = MethodSpec("react_cotsc", run_react_cotsc, REACT_STEPS, phases=("react", "cot"), paper=True)
COTSC_REACT = MethodSpec("cotsc_react", run_cotsc_react, COT_STEPS, phases=("cot", "react"), paper=True)
