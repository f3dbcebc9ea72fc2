"""Act (the ReAct paper's baseline): actions and observations with no thought."""

from __future__ import annotations

from actune.agent.method_registry import Cost, MethodSpec, StepFormat
from actune.agent.methods.tool_calls import acting

__all__ = ["SPEC", "STEPS"]


def _instruction(task: str, actions: str, style: str, hint: str) -> str:
    return f"{task} with interleaving Action, Observation steps. Action can be one of:\n{actions}"


STEPS = StepFormat(
    "act", "Act", None, None, _instruction,
    accepts=lambda s: not s.plans,  # any record less its reasoning
    card_steps="`Action i: tool[argument]`, answered by `Observation i: ...`, with no thought; the "
               "episode ends with the finish action, `Action i: finish[answer]` (a ReAct or ReflAct "
               "episode keeps its actions and observations, numbered anew)",
    card_ending="Action i: tool[argument] ... Action n: finish[answer]",
    conversion="thoughts and reflections left out",
    cost=Cost(prompted=0.8, tuned=0.5))
SPEC = MethodSpec("act", acting("act"), STEPS, paper=True)
