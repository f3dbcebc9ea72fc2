"""Standard (answer at once) and CoT (reason, then answer): one completion, no environment."""

from __future__ import annotations

from typing import AsyncIterator

from actune.agent.episode import Episode, Event
from actune.agent.method_registry import Cost, MethodSpec, StepFormat
from actune.agent.parser import parse_answer
from actune.agent.render import COT_PREFIX
from actune.records.trajectory import Step

__all__ = ["COT", "COT_STEPS", "STANDARD", "STANDARD_STEPS", "run_standard", "run_cot", "cot_sample"]


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


def _standard_instruction(task: str, actions: str, style: str, hint: str) -> str:
    return f"{task}. Give the answer on a line starting with 'Answer:'.{hint}"


def _cot_instruction(task: str, actions: str, style: str, hint: str) -> str:
    return f"{task}. Think step by step, then give the answer on a line starting with 'Answer:'.{hint}"


STANDARD_STEPS = StepFormat(
    "standard", "Standard", None, None, _standard_instruction, acting=False,
    accepts=lambda s: not s.plans,  # any record's answer alone
    card_steps="the answer alone, `Answer: answer`, with no reasoning or action",
    card_ending="Answer: answer", conversion="the answer alone", cost=Cost(prompted=0.1, tuned=0.05))
COT_STEPS = StepFormat(
    "cot", "CoT", "Thought", "thought", _cot_instruction, acting=False,
    accepts=lambda s: not s.plans and s.reason_type is not None,  # the reasoning joined: none to join in Act's
    card_steps="one `Thought: Let's think step by step. ...` (the reasoning on one line) then `Answer: "
               "answer`, with no action (a ReAct or ReflAct episode's thoughts or reflections, joined "
               "in order, are the reasoning)",
    card_ending="Thought: ... Answer: answer", conversion="thoughts joined into the one reasoning",
    cost=Cost(prompted=0.25, tuned=0.15))
STANDARD = MethodSpec("standard", run_standard, STANDARD_STEPS, reads_pages=False, paper=True)
COT = MethodSpec("cot", run_cot, COT_STEPS, reads_pages=False, paper=True, imports_as="react")
