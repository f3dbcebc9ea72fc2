"""An environment's actions declared once, as data: name, argument and help.

    class InventoryEnv(ToolEnvironment):
        name = "inventory"
        actions = (ActionSpec("lookup", "item", "returns the item's stock, price and location."),
                   ActionSpec("finish", "answer", "returns the answer and finishes the task."))

        def act_lookup(self, item: str) -> StepResult: ...
        def act_finish(self, answer: str) -> StepResult: ...

Everything else reads the declaration: ``action_names`` (the step parser's, ``actune import``'s), the
instruction's action list (:meth:`ToolEnvironment.describe_actions`, which the loop, ``actune import`` and
``actune export`` put in every prompt) and the observations that answer an unknown action or a missing argument.
The built-in environments write these by hand (their words are the papers'); a custom one need not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from actune.envs.base import Action, Environment, StepResult

__all__ = ["ActionSpec", "ToolEnvironment", "describe", "valid_actions", "parse_described", "action_specs",
           "tool_schema"]


@dataclass(frozen=True)
class ActionSpec:
    """One action: ``lookup[item]: returns the item's stock, price and location.``"""

    name: str
    """What the model writes before the bracket, lower case: ``lookup``."""
    argument: str
    """What goes in the bracket, in a word: ``item``, ``answer``."""
    help: str
    """What the action does, for the instruction."""

    def __str__(self) -> str:
        return f"{self.name}[{self.argument}]"

    def line(self) -> str:
        """The instruction's line for it."""
        return f"{self}: {self.help}"


def describe(actions: tuple[ActionSpec, ...]) -> str:
    """The instruction's action list: one :meth:`ActionSpec.line` a line."""
    return "\n".join(a.line() for a in actions)


_LINE = re.compile(r"^\s*(?:\(\d+\)\s*)?([A-Za-z_][\w-]*)\[([^\]]+)\](?:\s*[:,]\s*(.*))?$")


def parse_described(text: str) -> tuple[ActionSpec, ...]:
    """The actions of an action list in :func:`describe`'s form (``name[argument]: help`` a line; the built-in
    environments write theirs so, and every record's instruction holds one; the paper's ``(1) Search[entity],
    which ...`` and a bare ``name[argument]`` are read too): lines of another form are skipped, so a whole
    instruction can be read. Names are lower-cased, as the parser reads them."""
    specs: dict[str, ActionSpec] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m and m.group(1).lower() not in specs:
            specs[m.group(1).lower()] = ActionSpec(m.group(1).lower(), m.group(2).strip(), (m.group(3) or "").strip())
    return tuple(specs.values())


def action_specs(env: Environment) -> tuple[ActionSpec, ...]:
    """An environment's actions as specs: its declaration (:class:`ToolEnvironment`), else read from its
    ``describe_actions()``. Free-text commands (ALFWorld: no finish action) have no specs."""
    if isinstance(env, ToolEnvironment) and env.actions:
        return tuple(env.actions)
    if env.finish_action is None:
        raise ValueError(f"the {env.name} environment takes free-text commands, not named actions: "
                         "it cannot be offered as tools (use wire text or chat)")
    specs = parse_described(env.describe_actions())
    missing = [n for n in env.action_names if n not in {s.name for s in specs}]
    if missing:
        raise ValueError(f"the {env.name} environment's describe_actions() has no 'name[argument]: help' line for "
                         f"{', '.join(missing)}")
    return tuple(s for s in specs if s.name in env.action_names)


def tool_schema(spec: ActionSpec) -> dict:
    """One action as an OpenAI function tool: its one argument, a required string."""
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.help,
        "parameters": {"type": "object", "properties": {spec.argument: {"type": "string"}},
                       "required": [spec.argument]}}}


def valid_actions(actions: tuple[ActionSpec, ...]) -> str:
    """``lookup[item], shelf[location] and finish[answer]``."""
    names = [str(a) for a in actions]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


class ToolEnvironment(Environment):
    """An environment whose ``actions`` are declared once (module docstring). :meth:`step` calls the method
    ``act_<name>(argument)`` of the action named, after answering an unknown action, an empty argument and a
    step after the finish action itself. ``reset`` must set ``self.answer = None``; ``act_<finish>`` sets it."""

    actions: tuple[ActionSpec, ...] = ()
    finish_action: str | None = "finish"
    answer: str | None = None

    @property
    def action_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(a.name for a in self.actions)

    def describe_actions(self) -> str:
        return describe(self.actions)

    def step(self, action: Action) -> StepResult:
        name, argument = action.name.strip().lower(), action.argument.strip()
        if self.answer is not None and self.finish_action is not None:
            return StepResult("The episode has already finished.", done=True, info={"answer": self.answer})
        spec = next((a for a in self.actions if a.name == name), None)
        if spec is None:
            return StepResult(f"Invalid action: {action}. Valid actions are {valid_actions(self.actions)}.")
        if not argument:
            return StepResult(f"{spec.name} needs its {spec.argument}: write {spec}.")
        return getattr(self, f"act_{spec.name}")(argument)
