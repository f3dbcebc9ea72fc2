"""actune environments as TRL's, and TRL's as actune's (TRL's ``GRPOTrainer(environment_factory=...)``).

    trainer = GRPOTrainer(model, args=args, train_dataset=ds, environment_factory=trl_environment(EnvConfig(...)))
    make_env = actune_environment(MyTRLEnv)      # then env.name: mypkg.envs:make_env in an actune config

TRL's form (TRL 1.16, experimental there): a class whose instances have ``reset(**example)`` (the example's
columns; a returned string is appended to the prompt), one public method per tool (typed arguments, a docstring
with ``Args:``, the result a string) and optionally ``get_reward()``. :func:`trl_environment` writes that class for
an actune environment: a tool per declared action (:func:`actune.envs.actions.action_specs`), ``reset`` starting
an episode on the example's ``question`` and ``answer``, and ``get_reward`` 1.0 when the episode's finish answer
is right by the task's metric (:func:`actune.tasks.metrics.score_prediction`). :func:`actune_environment` goes the
other way: a TRL environment class as an actune plug-in environment, its tools as actions, with a ``finish``
action of actune's when the class has none (TRL ends an episode when the model stops calling tools; actune's loop
ends it on the finish action).

Hand-written: TRL reads tools from the class's own functions (``inspect.getmembers`` on the type), so an
environment whose actions are data needs its functions made, with the signature and docstring TRL's schema reader
(transformers' ``get_json_schema``) parses.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from actune.bridges.shared import ForeignTools, ScoredEpisode, env_maker, one_argument_action
from actune.envs.actions import ActionSpec, action_specs
from actune.envs.base import Environment, StepResult
from actune.envs.config import EnvConfig
from actune.records.task_record import Task

__all__ = ["actune_environment", "trl_environment"]


def _tool(spec: ActionSpec) -> Callable[..., str]:
    """The method TRL offers as the tool ``spec.name``: one string argument named as the action's."""
    def call(self: Any, *args: str, **kwargs: str) -> str:
        return self._act(spec.name, str(args[0] if args else kwargs.get(spec.argument, "")))

    call.__name__ = call.__qualname__ = spec.name
    call.__doc__ = f"{spec.help or spec.name}\n\nArgs:\n    {spec.argument}: the {spec.argument}."
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
         inspect.Parameter(spec.argument, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str)],
        return_annotation=str)
    call.__annotations__ = {spec.argument: str, "return": str}
    return call


class _TRLEnvironment:
    """The base of :func:`trl_environment`'s classes: one actune environment, one episode at a time."""

    _make: Callable[[], Environment]

    def __init__(self) -> None:
        self.episode = ScoredEpisode(self._make)
        self.env = self.episode.env

    def reset(self, **example: Any) -> str | None:
        return self.episode.reset(example) or None

    def _act(self, name: str, argument: str) -> str:
        return self.episode.step(name, argument)[0].observation

    def get_reward(self) -> float:
        """1.0 when the episode ended right by the task's metric, else 0.0."""
        return self.episode.reward


def trl_environment(cfg: EnvConfig | Callable[[], Environment]) -> type:
    """A class for TRL's ``environment_factory`` that plays the environment ``cfg`` builds (an :class:`EnvConfig`
    or a callable returning an environment), a tool per action."""
    make = env_maker(cfg)
    probe = make()
    tools = {spec.name: _tool(spec) for spec in action_specs(probe)}
    name = f"{type(probe).__name__}ForTRL"
    return type(name, (_TRLEnvironment,), {"_make": staticmethod(make), **tools, "__doc__": probe.describe_actions()})


def _spec(name: str, method: Callable[..., Any]) -> ActionSpec:
    params = [p.name for p in inspect.signature(method).parameters.values() if p.name != "self"]
    return one_argument_action(name, params, inspect.getdoc(method) or name)


class _FromTRL(ForeignTools):
    """A TRL environment class's instance as an actune environment (:func:`actune_environment`)."""

    def __init__(self, trl_env: Any, name: str, specs: tuple[ActionSpec, ...]) -> None:
        super().__init__(name, specs)
        self.trl_env = trl_env

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.answer = None
        first = self.trl_env.reset(question=task.question, answer=task.answer, id=task.id, meta=task.meta)
        return first or ""

    def call(self, spec: ActionSpec, argument: str) -> StepResult:
        said = str(getattr(self.trl_env, spec.name)(argument))
        if spec.name != self.finish_action:
            return StepResult(said)
        # TRL has no "done": its episode ends when the model stops calling tools; here, on its own finish tool
        return StepResult(said, done=True, info={"answer": argument, **self.finish_info()})

    def finish_info(self) -> dict[str, Any]:
        if callable(getattr(self.trl_env, "get_reward", None)):
            return {"reward": float(self.trl_env.get_reward())}
        return {}


def actune_environment(trl_class: type, name: str | None = None) -> Callable[[EnvConfig], Environment]:
    """An actune environment factory (a plug-in's ``make_env``) for a TRL environment class: its public methods
    but ``reset`` and ``get_reward`` as actions, one argument each, the docstring's first paragraph as help; a
    ``finish[answer]`` action added when it has none."""
    methods = {n: m for n, m in inspect.getmembers(trl_class, predicate=inspect.isfunction)
               if not n.startswith("_") and n not in ("reset", "get_reward")}
    specs = tuple(_spec(n, m) for n, m in methods.items())

    def make_env(cfg: EnvConfig | None = None) -> Environment:
        return _FromTRL(trl_class(), name or trl_class.__name__.lower(), specs)

    return make_env
