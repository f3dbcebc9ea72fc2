"""What every bridge to another library's environment form shares (TRL, OpenEnv, verifiers).

Served out (:class:`ScoredEpisode`): one actune environment played one episode at a time for a trainer or server
that hands over a task as fields and wants a reward; the task is built the same way and scored by the same metric
(:func:`actune.tasks.metrics.score_prediction`) whichever library asks. Brought in (:class:`ForeignTools`): another
library's tools as actune actions, each tool call one step, with actune's ``finish`` action added when the other
side has none (actune's loop ends an episode on its finish action).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actune.envs.actions import ActionSpec, ToolEnvironment
from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.records.task_record import Task
from actune.tasks.metrics import score_prediction

__all__ = ["FINISH", "ForeignTools", "ScoredEpisode", "env_maker", "one_argument_action", "task_from_fields"]

FINISH = ActionSpec("finish", "answer", "returns the answer and finishes the task.")


def env_maker(cfg: EnvConfig | Callable[[], Environment]) -> Callable[[], Environment]:
    """What builds one environment: ``cfg``'s (an :class:`EnvConfig`), or ``cfg`` itself (a callable)."""
    return (lambda: make_env(cfg)) if isinstance(cfg, EnvConfig) else cfg


def one_argument_action(name: str, arguments: list[str], doc: str) -> ActionSpec:
    """Another side's tool as an actune action, which takes one argument; its help the doc's first paragraph."""
    if len(arguments) != 1:
        raise ValueError(f"tool {name!r} takes {len(arguments)} arguments: an actune action takes one")
    return ActionSpec(name.lower(), arguments[0], doc.split("\n\n")[0].strip())


def task_from_fields(fields: dict[str, Any], env: str) -> Task:
    """The task a trainer or client hands over as fields (``question`` required; ``answer``, ``id``, ``meta``,
    ``aliases``): a dataset row's columns, an OpenEnv ``reset``'s keywords, a verifiers task's data."""
    if "question" not in fields:
        raise ValueError("the task needs its question: reset(question=..., answer=..., id=..., meta=...)")
    meta = fields.get("meta") if isinstance(fields.get("meta"), dict) else {}
    aliases = fields.get("aliases")
    aliases = [aliases] if isinstance(aliases, str) else list(aliases or [])  # one alias given as a string
    return Task(id=_text(fields.get("id")), question=str(fields["question"]), answer=_text(fields.get("answer")),
                env=env, aliases=[str(a) for a in aliases], meta=meta)


def _text(value: Any) -> str:
    return "" if value is None else str(value)  # an answer 0 or False is "0", "False", never ""


class ScoredEpisode:
    """One actune environment, one episode at a time, its finish scored once by the task's metric."""

    def __init__(self, make: Callable[[], Environment]) -> None:
        self.env = make()
        self.task: Task | None = None
        self.answer: str | None = None
        self.info: dict[str, Any] = {}
        self.finished = False

    def reset(self, fields: dict[str, Any], seed: int | None = None) -> str:
        """Starts an episode on the task ``fields`` give; the environment's first observation ("" when none)."""
        self.task = task_from_fields(fields, self.env.name)
        self.answer, self.info, self.finished = None, {}, False
        return self.env.reset(self.task, seed) or ""

    def step(self, name: str, argument: str) -> tuple[StepResult, float]:
        """The step's result and its reward: the task's score on the step that ends the episode, 0.0 on any other
        (a step after the end is worth nothing more)."""
        if self.task is None:
            raise RuntimeError("no episode: reset(question=..., answer=...) first")
        result = self.env.step(Action(name, argument))
        self.info.update(result.info)
        if not result.done or self.finished:
            return result, 0.0
        finished_by_answer = name.strip().lower() == self.env.finish_action
        self.answer = result.info.get("answer", argument if finished_by_answer else None)
        self.finished = True
        return result, self.reward

    @property
    def reward(self) -> float:
        """1.0 when the episode ended right by the task's metric, else 0.0 (also before it ends)."""
        if self.task is None or not self.finished:
            return 0.0
        return float(score_prediction(self.task, self.answer, self.info)[0])


class ForeignTools(ToolEnvironment):
    """Another library's tools as actune actions: :meth:`call` makes one tool call; ``finish`` is the other side's
    own tool when it has one (``own_finish``), else actune's, which ends the episode here."""

    def __init__(self, name: str, specs: tuple[ActionSpec, ...]) -> None:
        self.name = name
        self.own_finish = any(s.name == FINISH.name for s in specs)
        self.actions = specs if self.own_finish else (*specs, FINISH)
        self._tools = {s.name: s for s in self.actions if s.name != FINISH.name}

    def call(self, spec: ActionSpec, argument: str) -> StepResult:
        """One call of the tool ``spec`` names with its one argument."""
        raise NotImplementedError

    def finish_info(self) -> dict[str, Any]:
        """What the step that finishes adds to its info when actune's own finish ends it (a reward, say)."""
        return {}

    def __getattr__(self, attr: str) -> Any:
        # ToolEnvironment.step calls act_<name>(argument): each of the other side's tools, by its name
        tools = self.__dict__.get("_tools", {})
        if attr.startswith("act_") and attr[4:] in tools:
            return lambda argument: self.call(tools[attr[4:]], argument)
        raise AttributeError(attr)

    def act_finish(self, answer: str) -> StepResult:
        if self.own_finish:
            result = self.call(next(s for s in self.actions if s.name == FINISH.name), answer)
            if result.done:
                self.answer = str(result.info.setdefault("answer", answer))
            return result
        self.answer = answer
        return StepResult(f"Episode finished, answer: {answer}", done=True,
                          info={"answer": answer, **self.finish_info()})
