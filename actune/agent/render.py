"""Render prompts: instructions, exemplars and the steps so far, in text or chat wire format.

The loop builds every prompt by rendering the trajectory's steps with these functions, so a
trajectory rendered for training is exactly what the model saw (``render_text``/``render_messages``
on a finished record give the full training text).

``AgentConfig.fidelity: paper`` builds the head with :func:`build_paper_prompt_context`: the ReAct code's
prompt text, byte for byte (its files as they are, its instruction, no separator of actune's), and ALFWorld in
its ``> command`` form; the loop then asks with the stop strings of :meth:`PromptContext.paper_stop`.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.agent.exemplars import (
    EVERY_STEP,
    SPARSE_THINK,
    Exemplar,
    ExemplarError,
    ExemplarSet,
    load_exemplars,
    load_paper_alfworld_examples,
    load_paper_prompt,
    select_exemplars,
)
from actune.agent.method_registry import is_reflective, step_format, step_label
from actune.records.trajectory import Step, Trajectory

__all__ = [
    "PromptContext",
    "build_prompt_context",
    "build_paper_prompt_context",
    "resolve_exemplar_kinds",
    "TASK_KIND",
    "instruction_for",
    "render_exemplar",
    "exemplar_plan",
    "render_steps_text",
    "render_text",
    "render_messages",
    "step_label",
    "question_line",
    "COT_PREFIX",
    "REPLAN_ACTION",
    "USER_STEP_TYPES",
    "trajectory_prompt_context",
    "episode_segments",
    "trained_step",
    "assistant_turns_trained",
]

log = logging.getLogger(__name__)

COT_PREFIX = "Let's think step by step."

#: Steps that come from outside the agent: chat user turns, never trained on (a critique is the
#: reflector's answer, not the agent's).
USER_STEP_TYPES = ("observation", "critique")

#: PreFlect's extra action, named in its instruction.
REPLAN_ACTION = "re_plan"
REPLAN_ACTION_DOC = (f"{REPLAN_ACTION}[reason], which discards the current plan when it no longer works (say why, "
                     "e.g. the search finds nothing) and writes a new one.")

# The ReAct paper's HotpotQA instruction (hotpotqa.ipynb), used with its prompt files.
PAPER_WEBTHINK_INSTRUCTION = """Solve a question answering task with interleaving Thought, Action, Observation steps. Thought can reason about the current situation, and Action can be three types: 
(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.
(2) Lookup[keyword], which returns the next sentence containing keyword in the current passage.
(3) Finish[answer], which returns the answer and finishes the task.
Here are some examples.
"""  # noqa: E501, W291 - verbatim from the paper's code, trailing space included

# The ReAct paper's ALFWorld framing (alfworld.ipynb, the cell that plays the 134 games): the intro, the two
# trajectories of the game's type, then this line before the game's first observation.
PAPER_ALFWORLD_INTRO = "Interact with a household to solve a task. Here are two examples.\n"
PAPER_ALFWORLD_TASK = "\nHere is the task.\n"

#: The ``exemplar_kinds`` entry that stands for the episode's own task kind (``task.meta["kind"]``).
TASK_KIND = "task"

_TASK_PHRASE = {
    "fever": "Decide whether a claim is SUPPORTS, REFUTES or NOT ENOUGH INFO",
    "alfworld": "Interact with a household to solve a task",
}
_QUESTION_LABEL = {"fever": "Claim", "alfworld": None}


@dataclass
class PromptContext:
    """Everything before the first step: instruction, rendered exemplars, the question line."""

    method: str  # the base method whose format the steps use: standard, cot, act, react, reflact
    env: str
    instruction: str
    examples: str  # "" in the zero-shot regime
    question: str  # "Question: ..." (or the first observation, ALFWorld)
    finish_action: str | None = "finish"
    style: str = EVERY_STEP  # SPARSE_THINK: ReAct steps are actions only, thoughts are think: actions
    # "paper": the ReAct code's text (build_paper_prompt_context): the parts joined as they are, ALFWorld's
    # steps as "> command" lines and bare observations
    fidelity: str = "actune"

    def paper_stop(self, i: int) -> list[str]:
        """The stop strings of step ``i``'s request in the paper's code: one command line on ALFWorld
        (alfworld.ipynb: ``stop=['\\n']``), else up to the step's observation (hotpotqa.ipynb, FEVER.ipynb:
        ``stop=[f"\\nObservation {i}:"]``; Act, whose runner the repository does not have, stops there too)."""
        return ["\n"] if _command_form(self) else [f"\nObservation {i}:"]

    def paper_answer_stop(self) -> list[str]:
        """Where a CoT answer ends with the paper's prompts: where the next example would start (the repository
        has no CoT runner; its files start each example with the question's label)."""
        return [f"\n{_QUESTION_LABEL.get(self.env) or 'Question'}:"]


def question_line(env: str, question: str, initial_observation: str = "") -> str:
    label = _QUESTION_LABEL.get(env, "Question")
    if label is None:
        return (initial_observation or question).strip()
    return f"{label}: {question.strip()}"


def instruction_for(method: str, env: str, actions: str, style: str = EVERY_STEP) -> str:
    """The instruction the model sees first, in every regime: step format ``method``'s (a name no method writes
    gets Standard's)."""
    task = _TASK_PHRASE.get(env, "Solve a question answering task")
    hint = " The answer is one of SUPPORTS, REFUTES, NOT ENOUGH INFO." if env == "fever" else ""
    f = step_format(method) or step_format("standard")
    assert f is not None
    return f.instruction(task, actions.strip(), style, hint)


def _is_finish(action: str, finish_action: str | None) -> str | None:
    if not finish_action:
        return None
    m = re.match(rf"\s*{re.escape(finish_action)}\s*\[(.*)\]\s*$", action, re.IGNORECASE | re.DOTALL)
    return m.group(1) if m else None


def exemplar_plan(ex: Exemplar, finish_action: str | None = "finish") -> str:
    """PreFlect: a plan for an exemplar that has none, from the actions its trajectory took (the
    answer left out), so a few-shot prompt shows plans in the format the loop uses."""
    acts = [s.action.strip() for s in ex.steps if s.action.strip() and _is_finish(s.action, finish_action) is None]
    if finish_action:
        acts.append(f"{finish_action}[answer]")
    return ", then ".join(acts) + "." if acts else "Solve it step by step."


def render_exemplar(ex: Exemplar, method: str, env: str, finish_action: str | None = "finish",
                    style: str = EVERY_STEP) -> str:
    """One exemplar in ``method``'s text format (ends with a newline); ``style`` is its set's."""
    lines = [question_line(env, ex.question, ex.initial_observation)]
    f = step_format(method)
    if f is not None and f.plans:
        lines += [f"Plan 1: {exemplar_plan(ex, finish_action)}", "Critique 1: PASS"]
    if f is None or not f.acting:  # Standard: the answer; CoT: the reasoning, then the answer
        if f is not None and f.reason_type is not None:
            lines.append(f"{f.label}: {COT_PREFIX} {ex.cot}".rstrip())
        lines.append(f"Answer: {ex.answer}")
    else:
        for i, s in enumerate(ex.steps, 1):
            answer = _is_finish(s.action, finish_action)
            if f.reflections:
                lines.append(f"{f.label} {i}: {s.reflection or s.thought}")
            elif f.label is not None and style != SPARSE_THINK:
                lines.append(f"{f.label} {i}: {s.thought}")
            if f.reflections and answer is not None:
                lines.append(f"FINAL ANSWER: {answer}")
                break
            lines.append(f"Action {i}: {s.action}")
            if answer is not None:
                break
            lines.append(f"Observation {i}: {s.observation}")
    return "\n".join(lines) + "\n"


def resolve_exemplar_kinds(kinds: list[str] | None, task_kind: str | None) -> list[str] | None:
    """The exemplar kinds of one episode: ``kinds`` with the :data:`TASK_KIND` entry replaced by the task's
    own kind (order kept, duplicates dropped). A task without a kind makes that entry mean every kind, so
    the result is None (all exemplars) rather than a filter that matches nothing."""
    if not kinds or TASK_KIND not in kinds:
        return kinds
    if not task_kind:
        return None
    out: list[str] = []
    for k in kinds:
        k = task_kind if k == TASK_KIND else k
        if k not in out:
            out.append(k)
    return out


def build_prompt_context(
    method: str,
    env: str,
    actions: str,
    question: str,
    *,
    regime: str = "few_shot",
    exemplar_set: str | ExemplarSet | None = None,
    exemplar_kinds: list[str] | None = None,
    num_exemplars: int | None = None,
    paper_prompt: tuple[str, str] | None = None,
    initial_observation: str = "",
    finish_action: str | None = "finish",
    task_kind: str | None = None,
) -> PromptContext:
    """Assemble the prompt head for one episode. ``paper_prompt`` = (file, key) of the ReAct repo
    (PreFlect acts in ReAct's format, so it takes ReAct's prompts under its own instruction).
    ``task_kind``: the task's ``meta["kind"]``, which a ``task`` entry of ``exemplar_kinds`` stands for
    (:func:`resolve_exemplar_kinds`)."""
    qline = question_line(env, question, initial_observation)
    es: ExemplarSet | None = None
    if paper_prompt is None:
        if isinstance(exemplar_set, ExemplarSet):
            es = exemplar_set
        elif regime == "few_shot":
            es = load_exemplars(exemplar_set or env)
        elif exemplar_set is not None:
            # No exemplar is shown, but the set's style still fixes the step format. A set that is not
            # here (a spec naming a file on the machine an adapter was trained on) shows nothing either.
            try:
                es = load_exemplars(exemplar_set)
            except ExemplarError as e:
                log.warning("%s: the steps get a thought each", e)
    style = es.style if es is not None else EVERY_STEP
    if style == SPARSE_THINK and method != "react":
        raise ExemplarError(f"exemplar set {getattr(exemplar_set, 'name', exemplar_set)!r} is in ReAct's sparse "
                            f"think form; {method} needs exemplars with a thought or reflection on every step")
    instruction = instruction_for(method, env, actions, style)
    examples = ""
    if regime == "few_shot":
        if paper_prompt is not None:
            paper_method, text = load_paper_prompt(*paper_prompt)
            if paper_method != method and not (method == "preflect" and paper_method == "react"):
                raise ValueError(f"paper prompt key {paper_prompt[1]!r} is for {paper_method}, not {method}")
            body = text.lstrip("\n")
            if body.startswith("Question:") and method == "react":
                instruction = PAPER_WEBTHINK_INSTRUCTION.rstrip("\n").removesuffix("Here are some examples.").rstrip()
            elif not body.startswith("Question:") and method != "preflect":  # preflect: keep re_plan's doc
                instruction = ""  # FEVER files carry their own instruction line
            examples = body if body.endswith("\n") else body + "\n"
        else:
            assert es is not None
            chosen = select_exemplars(es, resolve_exemplar_kinds(exemplar_kinds, task_kind), num_exemplars)
            examples = "\n".join(render_exemplar(e, method, env, finish_action, style) for e in chosen)
    return PromptContext(method=method, env=env, instruction=instruction, examples=examples, question=qline,
                         finish_action=finish_action, style=style)


def build_paper_prompt_context(
    method: str,
    env: str,
    question: str,
    prompt_file: str | Path,
    prompt_key: str | None,
    *,
    initial_observation: str = "",
    finish_action: str | None = "finish",
    task_kind: str | None = None,
) -> PromptContext:
    """The prompt head of the ReAct paper's code for ``method`` on ``env``, byte for byte.

    HotpotQA (hotpotqa.ipynb): ``instruction + webthink_examples``, then ``question + "\\n"`` with the question
    as its wrapper returns it (``"Question: ..."``); the instruction is the notebook's and only ReAct's (the
    repository runs no other HotpotQA method: Act, CoT and Standard get their file's text alone). FEVER
    (FEVER.ipynb): the file's text, which carries its own instruction, then ``"Claim: ..."``. ALFWorld
    (alfworld.ipynb): the intro, ``d[f"react_{v}_1"] + d[f"react_{v}_0"]`` of the game's type ``task_kind``,
    ``"\\nHere is the task.\\n"``, the game's first observation; steps are ``> command`` lines and the game's
    answers (:func:`render_text`). Nothing is stripped or added in between."""
    if env == "alfworld":
        if prompt_key is not None:
            raise ExemplarError("the ReAct paper prompts each ALFWorld game with the trajectories of its type "
                                "(react_<type>_1, react_<type>_0): paper_prompt_key does not apply")
        examples = load_paper_alfworld_examples(prompt_file, method, task_kind) + PAPER_ALFWORLD_TASK
        return PromptContext(method=method, env=env, instruction=PAPER_ALFWORLD_INTRO, examples=examples,
                             question=initial_observation or question, finish_action=finish_action,
                             style=SPARSE_THINK if method == "react" else EVERY_STEP, fidelity="paper")
    if prompt_key is None:
        raise ValueError("a paper prompt needs its key (paper_prompt_key)")
    paper_method, text = load_paper_prompt(prompt_file, prompt_key)
    if paper_method != method:
        raise ValueError(f"paper prompt key {prompt_key!r} is for {paper_method}, not {method}")
    instruction = PAPER_WEBTHINK_INSTRUCTION if method == "react" and env != "fever" else ""
    label = _QUESTION_LABEL.get(env) or "Question"
    return PromptContext(method=method, env=env, instruction=instruction, examples=text,
                         question=f"{label}: {question}", finish_action=finish_action, fidelity="paper")


def _command_form(ctx: PromptContext) -> bool:
    """ReAct's ALFWorld prompt: each action a ``> command`` line, each observation the game's bare text."""
    return ctx.fidelity == "paper" and ctx.env == "alfworld"


def _head_text(ctx: PromptContext) -> str:
    if ctx.fidelity == "paper":
        # The paper's code joins its parts as they are: instruction + examples, then question + "\n".
        return ctx.instruction + ctx.examples + ctx.question + "\n"
    parts = []
    if ctx.instruction:
        parts.append(ctx.instruction.rstrip("\n") + "\n")
    if ctx.examples:
        parts.append("Here are some examples.\n" if ctx.instruction else "")
        parts.append(ctx.examples.rstrip("\n") + "\n\n")
    parts.append(ctx.question + "\n")
    return "".join(parts)


def _answer_line(ctx: PromptContext, s: Step) -> str:
    f = step_format(ctx.method)
    if f is not None and not f.acting:  # Standard, CoT
        return f"Answer: {s.action_arg or ''}"
    if is_reflective(ctx.method):
        return f"FINAL ANSWER: {s.action_arg or ''}"
    if _is_finish(s.text, ctx.finish_action) is not None:
        text = s.text
    else:
        text = f"{ctx.finish_action or 'finish'}[{s.action_arg or ''}]"
    return f"Action {s.iteration}: {text}"


def _step_line(ctx: PromptContext, s: Step) -> str:
    if _command_form(ctx) and s.type in ("action", "observation"):
        # alfworld.ipynb: prompt += f' {action}\n{observation}\n>', the ">" written as the next step's label
        return f"> {s.text}" if s.type == "action" else s.text
    if s.type == "answer":
        return _answer_line(ctx, s)
    f = step_format(ctx.method)
    if f is not None and f.label and s.type == f.reason_type:  # the format's own label: CoT's one is unnumbered
        return f"{f.label} {s.iteration}: {s.text}" if f.acting else f"{f.label}: {s.text}"
    label = {"thought": "Thought", "reflection": "Reflection", "action": "Action", "observation": "Observation",
             "plan": "Plan", "critique": "Critique"}[s.type]
    return f"{label} {s.iteration}: {s.text}"


def render_steps_text(ctx: PromptContext, steps: list[Step]) -> str:
    return "".join(_step_line(ctx, s) + "\n" for s in steps)


def render_text(ctx: PromptContext, steps: list[Step], next_prefix: str = "") -> str:
    """The whole text-completion prompt: head, steps so far, and the next step's label (ReAct's ALFWorld
    form writes an ``Action i:`` label as ``>``)."""
    if _command_form(ctx) and next_prefix.startswith("Action"):
        next_prefix = ">"
    return _head_text(ctx) + render_steps_text(ctx, steps) + next_prefix


def render_messages(ctx: PromptContext, steps: list[Step], prefill: str | None = None) -> list[dict[str, Any]]:
    """Chat messages: system (instruction + exemplars), user (question), then assistant turns holding
    plans, thoughts and actions, user turns holding observations and plan critiques; ``prefill`` opens
    a final assistant turn."""
    if ctx.fidelity == "paper":
        raise ValueError("the ReAct paper's prompts are text completions: paper fidelity renders the text wire")
    system = ctx.instruction.rstrip("\n")
    if ctx.examples:
        system = (system + "\n\nHere are some examples.\n\n" if system else "") + ctx.examples.rstrip("\n")
    msgs: list[dict[str, Any]] = []
    if system:
        msgs.append({"role": "system", "content": system})
    msgs.append({"role": "user", "content": ctx.question})
    buf: list[str] = []
    for s in steps:
        if s.type in USER_STEP_TYPES:
            if buf:
                msgs.append({"role": "assistant", "content": "\n".join(buf)})
                buf = []
            msgs.append({"role": "user", "content": _step_line(ctx, s)})
        else:
            buf.append(_step_line(ctx, s))
    if prefill is not None:
        buf.append(prefill)
    if buf:
        msgs.append({"role": "assistant", "content": "\n".join(buf)})
    return msgs


def trajectory_prompt_context(traj: Trajectory) -> PromptContext:
    """The zero-shot prompt head a finished record was produced under (from ``traj.info["prompt"]``).

    ``render_text(ctx, traj.steps)`` / ``render_messages(ctx, traj.steps)`` then give the whole
    episode as a fine-tuned model will see and write it.
    """
    p = traj.info.get("prompt")
    if not isinstance(p, dict):
        raise ValueError(f"trajectory {traj.episode_id!r} has no info.prompt (written by an older actune?)")
    return PromptContext(method=p["method"], env=p["env"], instruction=p["instruction"], examples="",
                         question=p["question"], finish_action=p.get("finish_action"),
                         style=p.get("style", EVERY_STEP))


def trained_step(step: Step) -> bool:
    """Whether a tuned model learns to write ``step``: not an observation or critique (written by others), not a
    plan the reflector revised (PreFlect: the reflector wrote it, and in the loop it writes it again), not an
    action the parser could not read (the loop answered it with a format hint)."""
    if step.type in USER_STEP_TYPES or (step.type == "plan" and step.meta.get("reviser") == "reflector"):
        return False
    return not (step.type == "action" and step.action_name is None)


def assistant_turns_trained(steps: list[Step]) -> list[bool]:
    """For each assistant turn the chat and tools wires make of ``steps`` (the steps between two observations, in
    order), whether a tuned model learns it: every step of it :func:`trained_step` accepts."""
    flags: list[bool] = []
    current: bool | None = None
    for s in steps:
        if s.type in USER_STEP_TYPES:
            if current is not None:
                flags.append(current)
            current = None
        else:
            current = (current is None or current) and trained_step(s)
    if current is not None:
        flags.append(current)
    return flags


def episode_segments(traj: Trajectory, every_model_step: bool = False) -> list[dict[str, Any]]:
    """A finished record as the zero-shot text a tuned model sees and writes: ``{"text", "train"}`` segments, the
    prompt head first (untrained), then one per step flagged by :func:`trained_step`; joined, they are exactly
    ``render_text(trajectory_prompt_context(traj), traj.steps)``. ``every_model_step``: an unreadable action is
    trained too (a rejected side, a rewarded rollout: the loss pushes it down); observations never are."""
    ctx = trajectory_prompt_context(traj)
    segments = [{"text": render_text(ctx, []), "train": False}]
    segments += [{"text": render_steps_text(ctx, [s]),
                  "train": s.type not in USER_STEP_TYPES if every_model_step else trained_step(s)}
                 for s in traj.steps]
    return segments
