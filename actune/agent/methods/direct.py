"""Standard (answer at once) and CoT (reason, then answer): one completion, no environment."""

from __future__ import annotations

from typing import AsyncIterator

from actune.agent.episode import Episode, Event
from actune.agent.parser import parse_answer
from actune.agent.render import COT_PREFIX
from actune.records.trajectory import Step

__all__ = ["run_standard", "run_cot", "cot_sample"]


async def run_standard(ep: Episode) -> AsyncIterator[Event]:
    yield Event("iteration", 1, {"goal": ep.traj.task.question, "max_iterations": 1})
    c = await ep.generate([], "Answer:", ["\n"], prompt=ep.prompt_for("standard"))
    _, answer = parse_answer("Answer:" + c.text)
    answer = answer or c.text.strip().split("\n", 1)[0].strip() or None
    if answer is None:
        ep.traj.finish_reason = "parse_errors"
        return
    yield ep.add(Step("answer", c.text.strip(), 1, action_name="answer", action_arg=answer,
                      tokens=c.usage.completion_tokens, latency_s=c.latency_s))
    ep.traj.prediction = answer
    ep.traj.finish_reason = "answered"


async def cot_sample(
    ep: Episode, temperature: float | None = None, offset: int | None = None
) -> tuple[str, str | None, int, float]:
    """One chain of thought -> (reasoning incl. the CoT prefix, answer or None, tokens, latency).

    With the paper's prompts the model writes the whole thought after ``Thought:`` (FEVER's exemplars do not
    start theirs with the CoT prefix); in paper fidelity it stops where the paper's files start the next
    example."""
    prompt = ep.prompt_for("cot")
    paper = prompt.fidelity == "paper"
    prefix = "Thought:" if paper else f"Thought: {COT_PREFIX}"
    stop = prompt.paper_answer_stop() if ep.cfg.fidelity == "paper" else []
    c = await ep.generate([], prefix, stop, prompt=prompt, temperature=temperature, offset=offset)
    reasoning, answer = parse_answer(c.text)
    return (reasoning if paper else f"{COT_PREFIX} {reasoning}").strip(), answer, c.usage.completion_tokens, c.latency_s


async def run_cot(ep: Episode) -> AsyncIterator[Event]:
    yield Event("iteration", 1, {"goal": ep.traj.task.question, "max_iterations": 1})
    reasoning, answer, tokens, latency = await cot_sample(ep)
    yield ep.add(Step("thought", reasoning, 1, tokens=tokens, latency_s=latency))
    if answer is None:
        ep.traj.finish_reason = "parse_errors"
        return
    yield ep.add(Step("answer", answer, 1, action_name="answer", action_arg=answer))
    ep.traj.prediction = answer
    ep.traj.finish_reason = "answered"
