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

from dataclasses import dataclass

from actune.envs.base import Action, Environment, StepResult

__all__ = ["ActionSpec", "ToolEnvironment", "describe", "valid_actions"]


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
