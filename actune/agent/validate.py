"""Check that a trajectory's steps form a well-ordered episode (for tests and bootstrap filters)."""

from __future__ import annotations

from actune.trajectory import Trajectory

__all__ = ["step_order_problems", "steps_method"]

_BASE = {"standard": "standard", "cot": "cot", "cot_sc": "cot", "act": "act", "react": "react",
         "reflact": "reflact"}


def steps_method(traj: Trajectory) -> str:
    """The base method whose format ``traj.steps`` are in (hybrids: the phase that answered)."""
    if traj.method in _BASE:
        return _BASE[traj.method]
    phases = traj.info.get("phases") or []
    last = phases[-1]["method"] if phases else ("react" if traj.method == "react_cotsc" else "cot_sc")
    return _BASE.get(last, "react")


def step_order_problems(traj: Trajectory) -> list[str]:
    """What is wrong with the order of ``traj.steps`` ([] when nothing is)."""
    method = steps_method(traj)
    kinds = [s.type for s in traj.steps]
    problems: list[str] = []
    if method == "standard":
        if kinds not in ([], ["answer"]):
            problems.append(f"standard: expected [answer], got {kinds}")
    elif method == "cot":
        if kinds not in ([], ["thought"], ["thought", "answer"]):
            problems.append(f"cot: expected [thought, answer], got {kinds}")
    else:
        reason_type = {"react": "thought", "reflact": "reflection", "act": None}[method]
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
