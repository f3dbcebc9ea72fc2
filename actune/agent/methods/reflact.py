"""ReflAct (Kim et al., 2025): a goal-state reflection (the current state, the latest discovery, the relation
to the goal) before each action; the episode ends with a reflection saying the goal is reached and
``FINAL ANSWER: ...``."""

from __future__ import annotations

from actune.agent.method_registry import Cost, MethodSpec, StepFormat
from actune.agent.methods.tool_calls import acting

__all__ = ["REFLECTION_ANSWER_DOC", "REFLECTION_PARTS_DOC", "SPEC", "STEPS"]

REFLECTION_PARTS_DOC = ("Each Reflection states (1) the current state: what is known so far, (2) the latest "
                        "discovery: what the last observation added, (3) the relation to the goal: how close the "
                        "answer is and what is still missing.")
REFLECTION_ANSWER_DOC = "When the goal is reached, write a Reflection saying so, then FINAL ANSWER: <answer>."


def _instruction(task: str, actions: str, style: str, hint: str) -> str:
    return (f"{task} with interleaving Reflection, Action, Observation steps. {REFLECTION_PARTS_DOC} "
            f"Action can be one of:\n{actions}\n{REFLECTION_ANSWER_DOC}")


STEPS = StepFormat(
    "reflact", "ReflAct", "Reflection", "reflection", _instruction, reflections=True,
    # a ReAct thought says what to do next, not where the agent stands: only reflections and one-shot answers
    accepts=lambda s: not s.plans and (s.reflections or not s.acting),
    card_steps="`Reflection i: ...` (the current state, the latest discovery and how they relate to "
               "the goal) then `Action i: tool[argument]`, answered by `Observation i: ...`; the "
               "episode ends with a reflection saying the goal is reached and `FINAL ANSWER: answer`",
    card_ending="Action i: tool[argument] ... FINAL ANSWER: answer",
    conversion="a chain of thought becomes one reflection and the answer",
    cost=Cost(bootstrap=1.3, prompted=1.77, tuned=0.75, tokens_per_example=500, keep_rate=0.09))
SPEC = MethodSpec("reflact", acting("reflact"), STEPS, imports_as="reflact")
