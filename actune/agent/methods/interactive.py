"""Act, ReAct and ReflAct: (thought or reflection), action, observation, until an answer.

One loop for all three; they differ in the step label (none / ``Thought i:`` / ``Reflection i:``)
and how the final answer is written (``finish[...]`` / ``FINAL ANSWER: ...``, both accepted).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import AsyncIterator, Callable

from actune.agent.episode import Episode, Event, approx_tokens, truncate_observation
from actune.agent.exemplars import SPARSE_THINK
from actune.agent.method_registry import is_reflective, reason_type, step_label
from actune.agent.methods.live import (
    adaptive_iteration_event,
    adaptive_response_event,
    iteration_event,
    open_step,
    record_step,
)
from actune.agent.parser import ParsedStep, parse_step
from actune.envs.base import Action
from actune.records.trajectory import Step

__all__ = ["run_interactive", "final_answer_now", "ActingState", "dispatch_step", "observe", "act_on"]

_LEAD_ACTION = re.compile(r"^\s*action\s*\d*\s*:\s*", re.IGNORECASE)


def _format_hint(ep: Episode, error: str | None) -> str:
    names = ep.env.action_names
    if ep.env.finish_action is None:  # free-text commands (ALFWorld)
        why = error if error and error != "no action" else "Invalid action: no action was given."
        return f"{why} Write exactly one command per step as 'Action i: <command>'."
    valid = ", ".join(f"{n}[...]" for n in names) if names else "name[argument]"
    why = error if error and error != "no action" else "Invalid action: no action was given."
    return f"{why} Write exactly one action per step as 'Action i: name[argument]' with name one of: {valid}."


def _parse(ep: Episode, method: str, text: str, i: int) -> ParsedStep:
    env = ep.env
    free = env.finish_action is None  # ALFWorld-style commands: "go to cabinet 1" -> Action("go", "to cabinet 1")
    if method == "act":
        text = f"Action {i}: " + _LEAD_ACTION.sub("", text, count=1)
    # ReflAct writes LLARS' labels, whose FINAL ANSWER runs to the next label (a cited, multi-line answer).
    return parse_step(text, tuple(env.action_names) or None, env.finish_action, free_text=free,
                      answer_to_label=is_reflective(method))


def _read(ep: Episode, method: str, step_format: str, text: str, i: int) -> ParsedStep:
    """The step ``text`` holds, as it is recorded (the live stream reads partial text with this too)."""
    parsed = _parse(ep, step_format, text, i)
    if parsed.action_text is None and method == "react":
        # As the ReAct code does: a thought without an action keeps only its first line.
        parsed.thought = parsed.thought.strip().split("\n", 1)[0].strip()
    return parsed


# The outcomes of one parsed step, shared by every method that acts (react, reflact, act, preflect).
# They return the events to yield (the environment's step, their only await, comes before the first of
# them, so yielding them as a list is the same stream) and whether the episode ended.

async def answer_events(ep: Episode, parsed: ParsedStep, i: int, tokens: int, latency: float,
                        meta: dict) -> list[Event]:
    """The model answered: record it (telling the env when it has a finish action); the episode ends."""
    env, traj = ep.env, ep.traj
    if env.finish_action:
        await ep.env_step(Action(env.finish_action, parsed.answer))
    events = record_step(ep, Step("answer", parsed.action_text or "", i, action_name=env.finish_action or "answer",
                                  action_arg=parsed.answer, tokens=tokens, latency_s=latency, meta=meta))
    traj.prediction = parsed.answer
    traj.finish_reason = "answered"
    return events


def parse_error_events(ep: Episode, parsed: ParsedStep, i: int, tokens: int, latency: float, meta: dict,
                       errors_in_row: int, hint: str) -> tuple[list[Event], bool]:
    """An unusable action: record it and a format hint as the observation. ``errors_in_row`` counts this
    one; the episode ends (``parse_errors``) when it reaches the limit."""
    traj = ep.traj
    traj.info["parse_errors"] += 1
    events = [
        *record_step(ep, Step("action", parsed.action_text or "", i, tokens=tokens, latency_s=latency, meta=meta)),
        Event("parse_error", i, {"error": parsed.error, "consecutive": errors_in_row}),
        *record_step(ep, Step("observation", hint, i, tokens=approx_tokens(hint), meta={"format_hint": True})),
    ]
    if errors_in_row >= ep.cfg.max_parse_errors:
        traj.finish_reason = "parse_errors"
        return events, True
    return events, False


def action_events(ep: Episode, action: Action, action_text: str | None, i: int, tokens: int, latency: float,
                  meta: dict, seen: Counter[tuple[str, str]]) -> tuple[list[Event], bool]:
    """Record a valid action; the episode ends (``repetition``) when it is issued ``repeat_limit`` times."""
    events = record_step(ep, Step("action", action_text or str(action), i, action_name=action.name,
                                  action_arg=action.argument, tokens=tokens, latency_s=latency, meta=meta))
    key = (action.name, " ".join(action.argument.lower().split()))
    seen[key] += 1
    if seen[key] >= ep.cfg.repeat_limit:
        events.append(Event("repetition", i, {"action": str(action), "count": seen[key]}))
        ep.traj.finish_reason = "repetition"
        return events, True
    return events, False


async def observation_events(ep: Episode, action: Action, i: int) -> tuple[list[Event], bool, bool]:
    """Step the environment and record the observation. Returns (events, episode ended, answer now: the
    LLARS early exit after a high-confidence retrieval; the caller asks for the final answer at once, with
    :func:`final_answer_now`, before anything else is generated, so it saves every step left, and it
    happens on the budget's last step too)."""
    cfg, traj = ep.cfg, ep.traj
    res = await ep.env_step(action)
    if cfg.fidelity == "paper":  # the notebooks keep the whole observation and drop its newlines
        obs = res.observation.replace("\n", "")
    else:
        obs = truncate_observation(res.observation, cfg.observation_max_tokens, ep.count_tokens)
        obs = " ".join(obs.split("\n"))  # one line per observation keeps the text format parseable
    truncated = obs.endswith(" ...") and not res.observation.endswith(" ...")
    events = record_step(ep, Step("observation", obs, i, tokens=ep.count_tokens(obs),
                                  meta={"truncated": True} if truncated else {}))
    if res.done:
        answer = (res.info or {}).get("answer")
        traj.prediction = answer
        traj.finish_reason = "answered" if answer is not None else "env_done"
        return events, True, False
    score = (res.info or {}).get("retrieval_score")
    if cfg.early_exit and score is not None and score >= cfg.early_exit_threshold:
        traj.info["early_exit"] = {"iteration": i, "retrieval_score": score}
        events.append(adaptive_iteration_event(i, score))
        return events, False, True
    return events, False, False


@dataclass
class ActingState:
    """What a loop that acts carries from step to step: unusable actions in a row, how often each action
    was issued (the repetition check), and whether the last step (:func:`dispatch_step`, :func:`observe`)
    ended the episode."""

    errors_in_row: int = 0
    seen: Counter[tuple[str, str]] = field(default_factory=Counter)
    ended: bool = False


async def dispatch_step(ep: Episode, parsed: ParsedStep, i: int, tokens: int, latency: float, meta: dict,
                        state: ActingState, action_names: tuple[str, ...] | None,
                        format_hint: Callable[[Episode, str | None], str]) -> tuple[list[Event], bool]:
    """Record the outcome of one parsed step: (events, act). ``state.ended`` is set when the episode ends
    here (answered, too many unusable actions in a row, or a repetition); ``act`` is true when
    ``parsed.action`` is recorded and the environment should see it (:func:`observe`); neither, an unusable
    action got a format hint and the loop goes on to the next step. An action is usable when it parsed and,
    if ``action_names`` is given, is one of them."""
    if parsed.answer is not None and (ep.env.finish_action or parsed.action is None):
        state.ended = True
        return await answer_events(ep, parsed, i, tokens, latency, meta), False
    if parsed.action is None or (action_names and parsed.action.name not in action_names):
        state.errors_in_row += 1
        events, state.ended = parse_error_events(ep, parsed, i, tokens, latency, meta, state.errors_in_row,
                                                 _paper_invalid(ep, parsed) if ep.cfg.fidelity == "paper"
                                                 else format_hint(ep, parsed.error))
        return events, False
    state.errors_in_row = 0
    events, state.ended = action_events(ep, parsed.action, parsed.action_text, i, tokens, latency, meta,
                                        state.seen)
    return events, not state.ended


async def observe(ep: Episode, method: str, action: Action, i: int, state: ActingState) -> AsyncIterator[Event]:
    """Step the environment with ``action`` and yield the observation (:func:`observation_events`); on the
    adaptive early exit, the final answer asked at once (:func:`final_answer_now`). Sets ``state.ended``
    when the episode ended here."""
    events, ended, answer_now = await observation_events(ep, action, i)
    for ev in events:
        yield ev
    if answer_now:
        async for ev in final_answer_now(ep, method, i + 1):
            yield ev
    state.ended = ended or answer_now


def _paper_invalid(ep: Episode, parsed: ParsedStep) -> str:
    """What the paper's environments answer an unusable action, which its notebooks hand them as written (first
    letter lower-cased): wikienv ``Invalid action: ...``, ALFWorld ``Nothing happens.``."""
    if ep.env.finish_action is None:
        return "Nothing happens."
    text = (parsed.action_text or "").strip()
    return f"Invalid action: {text[:1].lower() + text[1:]}"


async def act_on(ep: Episode, method: str, parsed: ParsedStep, i: int, tokens: int, latency: float, meta: dict,
                 state: ActingState, format_hint: Callable[[Episode, str | None], str]) -> AsyncIterator[Event]:
    """The end of an acting step, whatever wrote it: record the parsed step's outcome (:func:`dispatch_step`) and,
    when it acts, the environment's answer (:func:`observe`); ``state.ended`` says whether the episode ended."""
    events, act = await dispatch_step(ep, parsed, i, tokens, latency, meta, state, ep.env.action_names, format_hint)
    for ev in events:
        yield ev
    if act:
        async for ev in observe(ep, method, parsed.action, i, state):
            yield ev


async def run_interactive(ep: Episode, method: str, budget: int | None = None) -> AsyncIterator[Event]:
    cfg, env, traj = ep.cfg, ep.env, ep.traj
    budget = budget or cfg.step_budget(env.name)
    prompt = ep.prompt_for(method)
    # ReAct's sparse form (the paper's ALFWorld) writes actions only; its thoughts are think: actions.
    label = None if prompt.style == SPARSE_THINK else step_label(method)
    step_format = method if label else "act"
    thought_type = reason_type(method)
    # Stop at a made-up observation, at a blank line (the end of an exemplar: the model is about to
    # invent a new one) and at the next step's label (running ahead without an action), or at the line's end
    # when steps have no label. Paper fidelity stops where the paper's code did (PromptContext.paper_stop).
    stop = ["\nObservation", "\n\n"] + ([f"\n{label}"] if label else ["\n"])
    # Paper fidelity ends an episode at its budget or its answer only (AgentConfig.ending_limits).
    ep.cfg = cfg = cfg.ending_limits(budget)
    state = ActingState()
    traj.info.setdefault("parse_errors", 0)
    for i in range(1, budget + 1):
        yield iteration_event(i, traj.task.question, budget)
        prefix = f"{label} {i}:" if label else f"Action {i}:"
        for ev in open_step(ep, thought_type if label else None, i,
                            lambda text, i=i: _read(ep, method, step_format, text, i)):
            yield ev
        step_stop = prompt.paper_stop(i) if cfg.fidelity == "paper" else stop
        c = await ep.generate(traj.steps, prefix, step_stop, prompt=prompt)
        parsed = _read(ep, method, step_format, c.text, i)
        if label:
            for ev in record_step(ep, Step(thought_type, parsed.thought, i, tokens=c.usage.completion_tokens,
                                           latency_s=c.latency_s, meta=parsed.goal_meta())):
                yield ev
        tokens, latency = (0, 0.0) if label else (c.usage.completion_tokens, c.latency_s)
        reprompted = False
        if parsed.action_text is None and label and cfg.reprompt_action:
            # The ReAct code's fix for a thought without an action: ask for the action line alone.
            yield Event("reprompt", i, {"prefix": f"Action {i}:"})
            read_action = partial(_parse, ep, "act", i=i)
            open_step(ep, None, i, read_action)  # its action streams
            c2 = await ep.generate(traj.steps, f"Action {i}:", ["\n"], prompt=prompt)
            parsed2 = read_action(c2.text)
            parsed = ParsedStep(parsed.thought, parsed2.action_text, parsed2.action, parsed2.answer, parsed2.error)
            tokens, latency = c2.usage.completion_tokens, c2.latency_s
            reprompted = True
        meta = {"reprompted": True} if reprompted else {}
        async for ev in act_on(ep, method, parsed, i, tokens, latency, meta, state, _format_hint):
            yield ev
        if state.ended:
            return
    yield Event("max_iterations_reached", budget, {})
    traj.finish_reason = "max_steps"


async def final_answer_now(ep: Episode, method: str, i: int) -> AsyncIterator[Event]:
    """Adaptive early exit: prompt the final answer line (step ``i``) directly and end the episode."""
    env, traj = ep.env, ep.traj
    finish = env.finish_action or "finish"
    labelled = is_reflective(method)  # FINAL ANSWER: ...; else the finish action
    prefix = "FINAL ANSWER:" if labelled else f"Action {i}: {finish}["

    def read(text: str) -> ParsedStep:
        return ParsedStep(answer=text.strip() if labelled else text.split("]", 1)[0].strip())

    open_step(ep, None, i, read)
    c = await ep.generate(traj.steps, prefix, ["\n"] + ([] if labelled else ["]"]), prompt=ep.prompt_for(method))
    answer = read(c.text).answer or ""
    if env.finish_action:
        await ep.env_step(Action(env.finish_action, answer))
    text = f"FINAL ANSWER: {answer}" if labelled else f"{finish}[{answer}]"
    for ev in record_step(ep, Step("answer", text, i, action_name=finish, action_arg=answer,
                                   tokens=c.usage.completion_tokens, latency_s=c.latency_s, meta={"early_exit": True})):
        yield ev
    traj.prediction = answer
    traj.finish_reason = "answered"
    yield adaptive_response_event(i, answer, traj.info["early_exit"]["retrieval_score"])
