"""PreFlect (prospective reflection): check the plan before acting, not after a failure.

The agent writes a plan; a reflector (same backbone, its own prompt: :mod:`actune.agent.critique`) checks it
against a catalog of planning errors, and a plan that fails is revised and checked again, up to
``preflect_max_revisions`` times. Then ReAct steps run with the plan in context, within PreFlect's own budget,
re-planning on ``re_plan[reason]`` or when forced every ``preflect_force_replan_every`` steps.
``preflect_reflact`` is the same loop with ReflAct's reflection in place of ReAct's thought.

The rules in full: docs/modules.md, actune.agent.methods.preflect.
"""

from __future__ import annotations

import re
from functools import partial
from typing import AsyncIterator

from actune.agent.critique import (
    REFLECTOR_PREFILL,
    REVISION_PREFIX,
    Critique,
    parse_critique,
    reflector_request,
    retry_note,
    revision_request,
)
from actune.agent.episode import Episode, Event
from actune.agent.method_registry import MethodSpec, StepFormat, is_reflective, step_label
from actune.agent.methods.interactive import ActingState, dispatch_step, observe
from actune.agent.methods.live import iteration_event, open_step, record_step
from actune.agent.methods.reflact import REFLECTION_ANSWER_DOC, REFLECTION_PARTS_DOC
from actune.agent.parser import ParsedStep, parse_step
from actune.agent.planning_errors import PlanningErrorCatalog, load_catalog
from actune.agent.render import REPLAN_ACTION, REPLAN_ACTION_DOC, PromptContext
from actune.llm import Completion
from actune.records.trajectory import Step

__all__ = ["PREFLECT", "PREFLECT_REFLACT", "run_preflect", "clean_plan"]

_PLAN_CUT = re.compile(r"(?:^|\n)[ \t]*(?:thought|reflection|action|observation|critique|plan|question|claim)"
                       r"[ \t]*\d*[ \t]*:", re.IGNORECASE)


def clean_plan(text: str) -> str:
    """The plan as written, cut where the model starts another labelled line."""
    body = str(text)
    m = _PLAN_CUT.search(body)
    if m:
        body = body[: m.start()]
    return body.strip()


def _action_names(ep: Episode) -> tuple[str, ...] | None:
    names = tuple(ep.env.action_names)
    return names + (REPLAN_ACTION,) if names else None


def _parse(ep: Episode, method: str, text: str) -> ParsedStep:
    # ReflAct steps use LLARS' labels, whose FINAL ANSWER runs to the next label
    return parse_step(text, _action_names(ep), ep.env.finish_action, free_text=ep.env.finish_action is None,
                      answer_to_label=is_reflective(method))


def _read(ep: Episode, method: str, text: str) -> ParsedStep:
    """The step ``text`` holds, as it is recorded (the live stream reads partial text with this too)."""
    parsed = _parse(ep, method, text)
    if parsed.action_text is None and not is_reflective(method):
        parsed.thought = parsed.thought.strip().split("\n", 1)[0].strip()  # as ReAct: first line only
    return parsed


def _read_action(ep: Episode, method: str, i: int, text: str) -> ParsedStep:
    """The re-prompted action (the completion after ``Action i:``)."""
    return _parse(ep, method, f"Action {i}: " + text)


def _format_hint(ep: Episode, error: str | None) -> str:
    why = error if error and error != "no action" else "Invalid action: no action was given."
    names = _action_names(ep)
    valid = ", ".join(f"{n}[...]" for n in names) if names else "name[argument]"
    return f"{why} Write exactly one action per step as 'Action i: name[argument]' with name one of: {valid}."


async def _critique(ep: Episode, catalog: PlanningErrorCatalog, plan: str,
                    unreadable: Critique | None = None) -> tuple[Critique, int, float]:
    """Ask the reflector about ``plan``: (critique, generated tokens, latency). ``unreadable``: its
    previous answer, which could not be read; the request then says why."""
    cfg, traj = ep.cfg, ep.traj
    instruction, request = reflector_request(catalog, traj.task.question, ep.env.describe_actions(), traj.steps, plan)
    if unreadable is not None:
        request += "\n" + retry_note(unreadable)
    stop = ["\n\n", "\nTask:"]
    if cfg.wire == "text":
        c = await ep.ask(f"{instruction}\n\n{request}\nJSON: {REFLECTOR_PREFILL}", stop,
                         max_tokens=cfg.preflect_critique_max_tokens)
        prefilled = True
    else:
        prefilled = cfg.chat_prefill
        msgs = [{"role": "system", "content": instruction}, {"role": "user", "content": request}]
        if prefilled:
            msgs.append({"role": "assistant", "content": REFLECTOR_PREFILL})
        c = await ep.ask(msgs, stop, max_tokens=cfg.preflect_critique_max_tokens, continue_final=prefilled)
    text = (REFLECTOR_PREFILL if prefilled else "") + c.text
    return parse_critique(text, catalog), c.usage.completion_tokens, c.latency_s


async def _revise_by_reflector(ep: Episode, catalog: PlanningErrorCatalog, plan: str, crit: Critique) -> Completion:
    """The reflector's second turn after its FAIL: its conversation (task, tools, past actions, plan; its verdict)
    continued with :func:`~actune.agent.critique.revision_request`; the answer is the revised plan."""
    cfg, traj = ep.cfg, ep.traj
    instruction, request = reflector_request(catalog, traj.task.question, ep.env.describe_actions(), traj.steps, plan)
    revise = revision_request(crit, catalog)
    stop = ["\n\n", "\nTask:", "\nJSON:"]
    if cfg.wire == "text":
        return await ep.ask(f"{instruction}\n\n{request}\nJSON: {crit.as_json()}\n\n{revise}\n{REVISION_PREFIX}", stop)
    msgs = [{"role": "system", "content": instruction}, {"role": "user", "content": request},
            {"role": "assistant", "content": crit.as_json()}, {"role": "user", "content": revise}]
    if cfg.chat_prefill:
        msgs.append({"role": "assistant", "content": REVISION_PREFIX})
    return await ep.ask(msgs, stop, continue_final=cfg.chat_prefill)


async def _revise(ep: Episode, prompt: PromptContext, catalog: PlanningErrorCatalog, plan: str, crit: Critique,
                  i: int, plan_stop: list[str]) -> Completion:
    """The revised plan's completion, written by ``preflect_reviser``."""
    if ep.cfg.preflect_reviser == "agent":
        return await ep.generate(ep.traj.steps, f"Plan {i}:", plan_stop, prompt=prompt)
    return await _revise_by_reflector(ep, catalog, plan, crit)


def _stats(ep: Episode) -> dict[str, int]:
    """The episode's PreFlect counts (``traj.info["preflect"]``)."""
    return ep.traj.info.setdefault("preflect", {"plans": 0, "critiques": 0, "fails": 0, "revisions": 0,
                                                "re_plans": 0, "forced_re_plans": 0, "critique_retries": 0,
                                                "critique_parse_errors": 0})


async def _plan_block(ep: Episode, prompt: PromptContext, catalog: PlanningErrorCatalog, i: int,
                      meta: dict, plan_stop: list[str]) -> AsyncIterator[Event]:
    """Write a plan at step ``i`` and have it critiqued; on FAIL revise it and critique the revision, up to
    ``preflect_max_revisions`` times."""
    cfg, traj = ep.cfg, ep.traj
    c = await ep.generate(traj.steps, f"Plan {i}:", plan_stop, prompt=prompt)
    plan = clean_plan(c.text)
    yield ep.add(Step("plan", plan, i, tokens=c.usage.completion_tokens, latency_s=c.latency_s, meta=dict(meta)))
    stats = _stats(ep)
    stats["plans"] += 1
    revisions = 0
    while True:
        crit, tokens, latency = await _critique(ep, catalog, plan)
        if crit.parse_error is not None:
            yield Event("critique_retry", i, {"parse_error": crit.parse_error})
            stats["critique_retries"] += 1
            first = crit
            crit, tokens2, latency2 = await _critique(ep, catalog, plan, unreadable=first)
            crit.retry_of = first
            tokens, latency = tokens + tokens2, latency + latency2
        stats["critiques"] += 1
        stats["fails"] += crit.verdict == "FAIL"
        stats["critique_parse_errors"] += crit.parse_error is not None
        yield ep.add(Step("critique", crit.line(catalog), i, tokens=tokens, latency_s=latency, meta=crit.to_meta()))
        if crit.verdict == "PASS" or revisions >= cfg.preflect_max_revisions:
            return
        revisions += 1
        stats["revisions"] += 1
        c = await _revise(ep, prompt, catalog, plan, crit, i, plan_stop)
        plan = clean_plan(c.text)
        yield ep.add(Step("plan", plan, i, tokens=c.usage.completion_tokens, latency_s=c.latency_s,
                          meta={"revision": revisions, "errors": list(crit.errors), "reviser": cfg.preflect_reviser}))
        stats["plans"] += 1


async def run_preflect(ep: Episode, method: str = "preflect") -> AsyncIterator[Event]:
    """PreFlect acting in ``method``'s steps: ``preflect`` (ReAct thoughts) or ``preflect_reflact`` (ReflAct
    reflections)."""
    cfg, env, traj = ep.cfg, ep.env, ep.traj
    budget = cfg.step_budget(env.name)
    catalog = load_catalog(cfg.preflect_catalog)
    prompt = ep.prompt_for(method)
    label = step_label(method)  # Thought | Reflection
    reflects = is_reflective(method)
    # A plan ends at a blank line or where the model runs on into the acting steps.
    plan_stop = ["\n\n", "\nCritique", f"\n{label}"]
    step_stop = ["\nObservation", "\n\n", f"\n{label}"]
    every = cfg.preflect_force_replan_every
    last_forced = every * cfg.preflect_force_replan_windows
    state = ActingState()
    last_replan = 0  # the step of the latest re-plan (0: none yet; the first plan is not a re-plan)
    traj.info.setdefault("parse_errors", 0)
    for i in range(1, budget + 1):
        yield iteration_event(i, traj.task.question, budget)
        if i == 1:
            async for ev in _plan_block(ep, prompt, catalog, i, {"initial": True}, plan_stop):
                yield ev
        elif every and i % every == 0 and i <= last_forced and last_replan <= i - every:
            yield Event("re_plan", i, {"reason": "scheduled", "forced": True})
            async for ev in _plan_block(ep, prompt, catalog, i, {"forced": True}, plan_stop):
                yield ev
            last_replan = i
            _stats(ep)["forced_re_plans"] += 1
        for ev in open_step(ep, "reflection" if reflects else "thought", i, lambda text: _read(ep, method, text)):
            yield ev
        c = await ep.generate(traj.steps, f"{label} {i}:", step_stop, prompt=prompt)
        parsed = _read(ep, method, c.text)
        for ev in record_step(ep, Step("reflection" if reflects else "thought", parsed.thought, i,
                                       tokens=c.usage.completion_tokens, latency_s=c.latency_s,
                                       meta=parsed.goal_meta())):
            yield ev
        tokens, latency = 0, 0.0
        meta: dict = {}
        if parsed.action_text is None and cfg.reprompt_action:
            yield Event("reprompt", i, {"prefix": f"Action {i}:"})
            read_action = partial(_read_action, ep, method, i)
            open_step(ep, None, i, read_action)  # its action streams
            c2 = await ep.generate(traj.steps, f"Action {i}:", ["\n"], prompt=prompt)
            parsed2 = read_action(c2.text)
            parsed = ParsedStep(parsed.thought, parsed2.action_text, parsed2.action, parsed2.answer, parsed2.error)
            tokens, latency = c2.usage.completion_tokens, c2.latency_s
            meta = {"reprompted": True}
        events, act = await dispatch_step(ep, parsed, i, tokens, latency, meta, state, _action_names(ep), _format_hint)
        for ev in events:
            yield ev
        action = parsed.action
        if act and action.name == REPLAN_ACTION:
            yield Event("re_plan", i, {"reason": action.argument, "forced": False})
            async for ev in _plan_block(ep, prompt, catalog, i, {"reason": action.argument}, plan_stop):
                yield ev
            last_replan = i
            _stats(ep)["re_plans"] += 1
        elif act:  # an early exit answers here, before a forced re-plan could spend calls on a step that will not come
            async for ev in observe(ep, method, action, i, state):
                yield ev
        if state.ended:
            return
    yield Event("max_iterations_reached", budget, {})
    traj.finish_reason = "max_steps"


_PLAN_FIRST = "First write a Plan: the steps that will solve it with the actions below. Then follow it with"


def _instruction(task: str, actions: str, style: str, hint: str) -> str:
    return (f"{task}. {_PLAN_FIRST} interleaving Thought, Action, Observation steps. Thought can reason about the "
            f"current situation, and Action can be one of:\n{actions}\n{REPLAN_ACTION_DOC}")


def _reflecting_instruction(task: str, actions: str, style: str, hint: str) -> str:
    return (f"{task}. {_PLAN_FIRST} interleaving Reflection, Action, Observation steps. {REFLECTION_PARTS_DOC} "
            f"Action can be one of:\n{actions}\n{REPLAN_ACTION_DOC}\n{REFLECTION_ANSWER_DOC}")


PREFLECT = MethodSpec("preflect", run_preflect,
                      StepFormat("preflect", "PreFlect", "Thought", "thought", _instruction, plans=True))
PREFLECT_REFLACT = MethodSpec(
    "preflect_reflact", lambda ep: run_preflect(ep, "preflect_reflact"),
    StepFormat("preflect_reflact", "PreFlect (ReflAct steps)", "Reflection", "reflection", _reflecting_instruction,
               plans=True, reflections=True))
