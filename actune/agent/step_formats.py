"""The step formats episodes are written, judged, exported and trained in: one record each.

A method's prompt head and records use one of these (``BASE_METHOD``): ReAct's thoughts, ReflAct's goal-state
reflections, Act's bare actions, CoT's one reasoning, Standard's answer alone, and PreFlect's plan with either
kind of step. Everything that differs by format — the label a generated step starts with, the step type its
reasoning is recorded as, how it answers, the words the dataset and model cards use for it — is read from here, so
a format is described once (issue #50: a method in one place; the methods' registry is the next step).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["STEP_FORMATS", "StepFormat", "reason_type", "reflection_formats", "step_format", "step_label"]


@dataclass(frozen=True)
class StepFormat:
    """One step format."""

    name: str
    title: str
    """How the cards and reports name it ("ReflAct")."""
    label: str | None
    """The label a generated reasoning step starts with ("Reflection"); None: it writes no reasoning label."""
    reason_type: str | None
    """The step type its reasoning is recorded as (``thought``, ``reflection``); None: it records none."""
    reflections: bool = False
    """Its reasoning steps are goal-state reflections and it answers ``FINAL ANSWER: ...`` after one saying the
    goal is reached (ReflAct's form), not with the finish action."""
    card_steps: str = ""
    """The dataset card's description of an episode's steps."""
    card_ending: str = ""
    """The model card's one-line shape of an episode, from its first action to its answer."""
    conversion: str = ""
    """The dataset card's words for what a conversion of another format's episode into this one keeps."""


STEP_FORMATS: dict[str, StepFormat] = {f.name: f for f in (
    StepFormat("react", "ReAct", "Thought", "thought",
               card_steps="`Thought i: ...` then `Action i: tool[argument]`, answered by the environment's "
                          "`Observation i: ...`; the episode ends with the finish action, `Action i: finish[answer]`",
               card_ending="Action i: tool[argument] ... Action n: finish[answer]",
               conversion="a chain of thought becomes one step and the answer"),
    StepFormat("reflact", "ReflAct", "Reflection", "reflection", reflections=True,
               card_steps="`Reflection i: ...` (the current state, the latest discovery and how they relate to "
                          "the goal) then `Action i: tool[argument]`, answered by `Observation i: ...`; the "
                          "episode ends with a reflection saying the goal is reached and `FINAL ANSWER: answer`",
               card_ending="Action i: tool[argument] ... FINAL ANSWER: answer",
               conversion="a chain of thought becomes one reflection and the answer"),
    StepFormat("act", "Act", None, None,
               card_steps="`Action i: tool[argument]`, answered by `Observation i: ...`, with no thought; the "
                          "episode ends with the finish action, `Action i: finish[answer]` (a ReAct or ReflAct "
                          "episode keeps its actions and observations, numbered anew)",
               card_ending="Action i: tool[argument] ... Action n: finish[answer]",
               conversion="thoughts and reflections left out"),
    StepFormat("cot", "CoT", "Thought", "thought",
               card_steps="one `Thought: Let's think step by step. ...` (the reasoning on one line) then `Answer: "
                          "answer`, with no action (a ReAct or ReflAct episode's thoughts or reflections, joined "
                          "in order, are the reasoning)",
               card_ending="Thought: ... Answer: answer", conversion="thoughts joined into the one reasoning"),
    StepFormat("standard", "Standard", None, None,
               card_steps="the answer alone, `Answer: answer`, with no reasoning or action",
               card_ending="Answer: answer", conversion="the answer alone"),
    StepFormat("preflect", "PreFlect", "Thought", "thought"),
    StepFormat("preflect_reflact", "PreFlect (ReflAct steps)", "Reflection", "reflection", reflections=True),
)}


def step_format(name: str) -> StepFormat | None:
    """The step format ``name`` (None: not a format of actune's)."""
    return STEP_FORMATS.get(name)


def step_label(name: str) -> str | None:
    """The label a generated step of format ``name`` starts with: Thought (ReAct, PreFlect), Reflection (ReflAct,
    PreFlect with ReflAct steps), none (Act, and the one-shot formats' answers)."""
    f = STEP_FORMATS.get(name)
    return f.label if f is not None and name not in ("cot", "standard") else None


def reason_type(name: str) -> str:
    """The step type format ``name`` records its reasoning as (``thought`` where it has none of its own)."""
    f = STEP_FORMATS.get(name)
    return (f.reason_type if f is not None else None) or "thought"


def reflection_formats() -> tuple[str, ...]:
    """The formats whose reasoning is reflections and whose answer is ``FINAL ANSWER: ...``."""
    return tuple(f.name for f in STEP_FORMATS.values() if f.reflections)
