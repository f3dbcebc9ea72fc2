"""The environment interface the agent loop talks to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from actune.records.task_record import Task


@dataclass(frozen=True)
class Action:
    """A parsed action: ``search[Paris]`` -> Action("search", "Paris"). Names are lower case."""

    name: str
    argument: str

    def __str__(self) -> str:
        return f"{self.name}[{self.argument}]"


@dataclass
class StepResult:
    """What the environment returns for one action.

    ``info`` carries facts the loop and judges use: ``answer`` (set when a finish action ends the
    episode), ``retrieval_score`` (0..1, for adaptive early exit), ``titles`` (pages read this step,
    for grounding), ``sources`` (numbered citations, document QA), ``won`` (ALFWorld).
    """

    observation: str
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """reset(task) -> first observation; step(action) -> StepResult. Deterministic given the seed.

    The agent loop steps through :meth:`astep`: environments subclass this protocol to inherit its
    default, which runs ``step`` in place."""

    name: str
    #: action names this environment accepts, e.g. ("search", "lookup", "finish")
    action_names: tuple[str, ...]
    #: the action that ends the episode with an answer ("finish"); None when only the env decides (ALFWorld)
    finish_action: str | None

    def reset(self, task: Task, seed: int | None = None) -> str:
        """Start an episode on ``task``; returns the first observation ("" when there is none)."""
        ...

    def step(self, action: Action) -> StepResult:
        """Apply one action. Never raises on bad arguments: explains them in the observation."""
        ...

    async def astep(self, action: Action) -> StepResult:
        """:meth:`step` for the agent loop, which runs many episodes on one event loop. An environment whose
        step waits on the network overrides this so that the wait suspends only its own episode; the
        default steps in place, as local work (an index, a game) is quick."""
        return self.step(action)

    def describe_actions(self) -> str:
        """The action descriptions for an instruction prompt (one per line)."""
        ...
