"""ReAct (Yao et al., 2023): a thought, then an action, then the environment's observation, until the finish
action answers."""

from __future__ import annotations

from actune.agent.exemplars import SPARSE_THINK
from actune.agent.method_registry import Cost, MethodSpec, StepFormat
from actune.agent.methods.tool_calls import acting

__all__ = ["SPEC", "STEPS"]


def _instruction(task: str, actions: str, style: str, hint: str) -> str:
    if style == SPARSE_THINK:
        return (f"{task} with interleaving Action, Observation steps. Think only where it helps, with the "
                f"action 'think: ...'. Action can be one of:\n{actions}")
    return (f"{task} with interleaving Thought, Action, Observation steps. Thought can reason about "
            f"the current situation, and Action can be one of:\n{actions}")


STEPS = StepFormat(
    "react", "ReAct", "Thought", "thought", _instruction,
    # a thought is made from a reflection or a chain of thought (Standard's record gets an empty one); Act has none
    accepts=lambda s: not s.plans and (s.reason_type is not None or not s.acting),
    card_steps="`Thought i: ...` then `Action i: tool[argument]`, answered by the environment's "
               "`Observation i: ...`; the episode ends with the finish action, `Action i: finish[answer]`",
    card_ending="Action i: tool[argument] ... Action n: finish[answer]",
    conversion="a chain of thought becomes one step and the answer",
    cost=Cost(bootstrap=1.0, prompted=1.0, tuned=0.63, tokens_per_example=335, keep_rate=0.21))
SPEC = MethodSpec("react", acting("react"), STEPS, paper=True, imports_as="react")
