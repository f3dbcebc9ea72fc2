"""Whether a ReflAct reflection has its three parts: current state, latest discovery, goal relation.

ReflAct's reflection says where the agent stands relative to the goal, not what to do next; without its
parts a kept ReflAct trajectory is ReAct in disguise and teaches ReAct. The exemplars (and so the
reflections a prompted model copies) label each part, ``Current state: ... Latest discovery: ... Goal
relation: ...``; a part counts when its label is there with some text after it, in any order or case.
A few wordings models use for the same labels are accepted. "none" is a valid discovery: at step 1
nothing has been observed yet.
"""

from __future__ import annotations

import re

from actune.agent.method_registry import is_reflective
from actune.agent.validate import steps_method
from actune.records.trajectory import Trajectory

__all__ = ["REFLECTION_PARTS", "missing_reflection_parts", "reflection_part_problems"]

#: The parts, in the order the exemplars write them.
REFLECTION_PARTS = ("current state", "latest discovery", "goal relation")

_LABELS = {
    "current state": r"current[ \t]++state|state[ \t]++so[ \t]++far",
    "latest discovery": r"latest[ \t]++discovery|new[ \t]++discovery|latest[ \t]++observation",
    "goal relation": r"goal[ \t]++relation|relation[ \t]++to[ \t]++(?:the[ \t]++)?goal",
}
# One alternation, so the text is scanned once; \b keeps "understate:" from counting as "state:".
_GROUPS = {f"p{i}": part for i, part in enumerate(REFLECTION_PARTS)}
_PART = re.compile(r"\b(?:" + "|".join(f"(?P<{g}>{_LABELS[p]})" for g, p in _GROUPS.items()) + r")[ \t]*+:",
                   re.IGNORECASE)


def missing_reflection_parts(reflection: str) -> list[str]:
    """The parts (names from :data:`REFLECTION_PARTS`, in that order) that ``reflection`` lacks or leaves
    empty; [] when it has all three."""
    text = str(reflection)
    found: dict[str, bool] = {}
    labels = list(_PART.finditer(text))
    for k, m in enumerate(labels):
        part = _GROUPS[m.lastgroup or ""]
        end = labels[k + 1].start() if k + 1 < len(labels) else len(text)
        found[part] = found.get(part, False) or bool(re.search(r"\w", text[m.end() : end]))
    return [p for p in REFLECTION_PARTS if not found.get(p)]


def reflection_part_problems(traj: Trajectory) -> list[str]:
    """For a ReflAct trajectory (or PreFlect's with ReflAct steps), one line per reflection step that lacks
    parts ([] when every one has all three, and for trajectories of other methods), e.g. ``steps[3]:
    reflection 2 lacks latest discovery``."""
    if not is_reflective(steps_method(traj)):
        return []
    problems = []
    for k, s in enumerate(traj.steps):
        if s.type == "reflection":
            missing = missing_reflection_parts(s.text)
            if missing:
                problems.append(f"steps[{k}]: reflection {s.iteration} lacks {', '.join(missing)}")
    return problems
