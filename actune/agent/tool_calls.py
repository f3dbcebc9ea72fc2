"""The ``tools`` wire format: the environment's actions as OpenAI tools, each step one assistant turn.

An episode in this form, as the loop sends it and as export writes it for training::

    system     the instruction                       (the tools go beside the messages, not in them)
    user       Question: ...
    assistant  content: the thought (ReflAct: the reflection; Act: empty)
               tool_calls: [{"id": "call_1", "type": "function",
                             "function": {"name": "search", "arguments": "{\\"entity\\": \\"Paris\\"}"}}]
    tool       tool_call_id: call_1, content: the observation
    ...
    assistant  the last thought, and a call of the finish action with the answer

An output with no readable tool call gets the same format hint as in the text wire, as a user turn. The
record keeps the steps in the text wire's form (``search[Paris]``, ``finish[answer]``), so one store exports
to any wire format.
"""

from __future__ import annotations

import json
from typing import Any

from actune.agent.method_registry import is_reflective
from actune.agent.parser import ParsedStep
from actune.agent.render import USER_STEP_TYPES, PromptContext, assistant_turns_trained
from actune.envs.actions import ActionSpec, tool_schema
from actune.envs.base import Action
from actune.records.trajectory import Step

__all__ = ["tools_for", "render_tool_messages", "read_tool_call", "tool_hint", "call_id"]

def tools_for(specs: tuple[ActionSpec, ...]) -> list[dict[str, Any]]:
    """The OpenAI ``tools`` list for an environment's actions, in their declared order."""
    return [tool_schema(s) for s in specs]


def call_id(iteration: int) -> str:
    """The id of step ``iteration``'s tool call: ours, not the server's, so a record renders the same twice."""
    return f"call_{iteration}"


def _arguments(spec: ActionSpec | None, value: str) -> str:
    # ensure_ascii=False: the templates' tojson writes non-ASCII as is, and training must render what the server does
    return json.dumps({spec.argument if spec else "argument": value}, ensure_ascii=False)


def render_tool_messages(ctx: PromptContext, steps: list[Step],
                         specs: tuple[ActionSpec, ...]) -> list[dict[str, Any]]:
    """Chat messages of the tools wire (module docstring); each carries ``train`` (what a tuned model learns to
    write: :func:`~actune.agent.render.assistant_turns_trained`)."""
    by_name = {s.name: s for s in specs}
    trained = iter(assistant_turns_trained(steps))
    msgs: list[dict[str, Any]] = []
    if ctx.instruction:
        msgs.append({"role": "system", "content": ctx.instruction.rstrip("\n"), "train": False})
    msgs.append({"role": "user", "content": ctx.question, "train": False})
    turn: dict[str, Any] | None = None
    for s in steps:
        if s.type in USER_STEP_TYPES:
            called = turn is not None and turn.get("tool_calls")
            if turn is not None:
                msgs.append(turn)
            msgs.append({"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": s.text,
                         "train": False} if called else {"role": "user", "content": s.text, "train": False})
            turn = None
            continue
        if turn is None:
            turn = {"role": "assistant", "content": "", "train": next(trained)}
        if s.type in ("thought", "reflection"):
            turn["content"] = s.text
        elif s.action_name is not None:
            name = (ctx.finish_action or "finish") if s.type == "answer" else s.action_name
            turn["tool_calls"] = [{"id": call_id(s.iteration), "type": "function", "function": {
                "name": name, "arguments": _arguments(by_name.get(name), s.action_arg or "")}}]
    if turn is not None:
        msgs.append(turn)
    return msgs


def tool_hint(action_names: tuple[str, ...], error: str | None) -> str:
    """The observation that answers a turn with no usable tool call."""
    why = error if error and error != "no action" else "Invalid action: no tool was called."
    return f"{why} Call exactly one tool per step, one of: {', '.join(action_names)}."


def read_tool_call(content: str, tool_calls: list[dict[str, Any]] | None, specs: tuple[ActionSpec, ...],
                   method: str, finish_action: str | None) -> ParsedStep:
    """One assistant turn of the tools wire as a parsed step: the content is the thought (Act has none), the
    first tool call the action; a call of ``finish_action`` is the answer. A turn without a call, or with
    arguments that are not a JSON object, has no action and says why in ``error``."""
    thought = "" if method == "act" else (content or "").strip()
    if not tool_calls:
        return ParsedStep(thought=thought, action_text=None, error="no action")
    fn = tool_calls[0].get("function") or {}
    name = str(fn.get("name") or "").strip().lower()
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError:
        args = None
    if not isinstance(args, dict):
        return ParsedStep(thought=thought, action_text=f"{name}[?]",
                          error=f"Invalid action: the arguments of {name or 'the call'} are not a JSON object.")
    spec = next((s for s in specs if s.name == name), None)
    value = args.get(spec.argument) if spec else None
    if value is None and len(args) == 1:  # the model named the argument otherwise: its one value is still it
        value = next(iter(args.values()))
    value = "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if name == finish_action:
        text = f"FINAL ANSWER: {value}" if is_reflective(method) else f"{name}[{value}]"
        return ParsedStep(thought=thought, action_text=text, answer=value.strip())
    return ParsedStep(thought=thought, action_text=f"{name}[{value}]", action=Action(name, value.strip()),
                      error=None if spec else f"Invalid action: {name} is not a tool here.")
