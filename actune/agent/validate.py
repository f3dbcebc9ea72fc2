"""Check that a trajectory's steps form a well-ordered episode (for tests and bootstrap filters)."""

from __future__ import annotations

from actune.agent.exemplars import SPARSE_THINK
from actune.agent.method_registry import find_method, step_format
from actune.records.trajectory import Trajectory

__all__ = ["step_order_problems", "steps_method"]

REPLAN_ACTION = "re_plan"  # actune.agent.render.REPLAN_ACTION, kept import-free here


def steps_method(traj: Trajectory) -> str:
    """The step format ``traj.steps`` are in (hybrids: the phase that answered; before phases were recorded, the
    first)."""
    spec = find_method(traj.method)
    if spec is not None and not spec.phases:
        return spec.steps.name
    phases = traj.info.get("phases") or []
    if not phases:
        return spec.phases[0] if spec is not None else "react"
    last = find_method(phases[-1]["method"])
    return last.steps.name if last is not None else "react"


def step_order_problems(traj: Trajectory) -> list[str]:
    """What is wrong with the order of ``traj.steps`` ([] when nothing is)."""
    method = steps_method(traj)
    kinds = [s.type for s in traj.steps]
    problems: list[str] = []
    f = step_format(method)
    if f is not None and not f.acting:  # Standard: [answer]; CoT: [thought, answer]
        whole = [t for t in (f.reason_type, "answer") if t is not None]
        if kinds != whole[:len(kinds)]:  # a record may stop anywhere (a context overflow)
            problems.append(f"{method}: expected [{', '.join(whole)}], got {kinds}")
    elif f is not None and f.plans:
        problems.extend(_preflect_problems(traj.steps, f.reason_type or "thought"))
    else:
        reason_type = f.reason_type if f is not None else None
        if (traj.info.get("prompt") or {}).get("style") == SPARSE_THINK:
            reason_type = None  # ReAct's sparse form: its thoughts are think: actions

        expected_iteration = 1
        i = 0
        steps = traj.steps
        while i < len(steps):
            s = steps[i]
            if s.iteration != expected_iteration:
                problems.append(f"steps[{i}]: iteration {s.iteration}, expected {expected_iteration}")
            if reason_type and s.type == reason_type:
                i += 1
                if i == len(steps):
                    break  # ended (e.g. context overflow) after the thought
                s = steps[i]
            elif reason_type and not (s.type == "answer" and s.meta.get("early_exit")):
                problems.append(f"steps[{i}]: expected {reason_type}, got {s.type}")
            if s.type == "answer":
                if i != len(steps) - 1:
                    problems.append(f"steps[{i}]: answer before the end")
                break
            if s.type != "action":
                problems.append(f"steps[{i}]: expected action, got {s.type}")
            i += 1
            if i < len(steps):
                if steps[i].type != "observation":
                    problems.append(f"steps[{i}]: expected observation, got {steps[i].type}")
                i += 1
            expected_iteration += 1
    if traj.finish_reason == "answered":
        if traj.prediction is None:
            problems.append("finish_reason answered without a prediction")
        elif kinds and kinds[-1] == "answer" and traj.steps[-1].action_arg != traj.prediction:
            problems.append("the answer step and the prediction differ")
    return problems


def _preflect_problems(steps: list, reason_type: str = "thought") -> list[str]:
    """PreFlect: a planning block (plan, then critique and revised plan pairs, maybe a last critique)
    opens step 1, may open any later step (forced re-plan) and follows a ``re_plan`` action; otherwise
    the ReAct order (``reason_type``: thought, or ReflAct's reflection; action, observation | answer). An
    episode may end anywhere (overflow)."""
    problems: list[str] = []
    n = len(steps)
    pos = 0

    def block(it: int) -> None:
        nonlocal pos
        if pos >= n:
            return
        if steps[pos].type != "plan":
            problems.append(f"steps[{pos}]: expected plan, got {steps[pos].type}")
            return
        while pos < n and steps[pos].type == "plan":
            if steps[pos].iteration != it:
                problems.append(f"steps[{pos}]: iteration {steps[pos].iteration}, expected {it}")
            pos += 1
            if pos < n and steps[pos].type == "critique":
                if steps[pos].iteration != it:
                    problems.append(f"steps[{pos}]: iteration {steps[pos].iteration}, expected {it}")
                pos += 1
            else:
                break

    if n and steps[0].type != "plan":
        problems.append(f"steps[0]: expected plan, got {steps[0].type}")
    expected = 1
    while pos < n:
        s = steps[pos]
        if s.type == "plan":
            block(expected)
            continue
        if s.iteration != expected:
            problems.append(f"steps[{pos}]: iteration {s.iteration}, expected {expected}")
        if s.type == reason_type:
            pos += 1
            if pos == n:
                break
            s = steps[pos]
        elif not (s.type == "answer" and s.meta.get("early_exit")):
            problems.append(f"steps[{pos}]: expected {reason_type}, got {s.type}")
        if s.type == "answer":
            if pos != n - 1:
                problems.append(f"steps[{pos}]: answer before the end")
            break
        if s.type != "action":
            problems.append(f"steps[{pos}]: expected action, got {s.type}")
        pos += 1
        if s.type == "action" and s.action_name == REPLAN_ACTION:
            if pos < n:
                block(expected)
        elif pos < n:
            if steps[pos].type != "observation":
                problems.append(f"steps[{pos}]: expected observation, got {steps[pos].type}")
            pos += 1
        expected += 1
    return problems
