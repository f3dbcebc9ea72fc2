"""The pieces every bridge shares (actune/bridges/shared.py): a task from fields, an episode scored once on its
finish, another side's tools as actions with actune's finish added — on the real wiki environment over the small
HotpotQA corpus. The TRL, OpenEnv and verifiers bridges' own tests play them through each library."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.bridges.shared import FINISH, ForeignTools, ScoredEpisode, task_from_fields
from actune.envs.actions import ActionSpec
from actune.envs.base import Action, StepResult
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env

CORPUS = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small" / "wiki_paragraphs.jsonl"
FIELDS = {"question": "When did the 2002–03 La Liga season start?", "answer": "31 August 2002", "id": "q1",
          "aliases": ["2002-08-31"], "meta": {"kind": "bridge"}}


def test_a_task_from_fields_keeps_every_field_and_needs_the_question() -> None:
    task = task_from_fields(FIELDS, "wiki")
    assert (task.id, task.answer, task.aliases, task.meta, task.env) == (
        "q1", "31 August 2002", ["2002-08-31"], {"kind": "bridge"}, "wiki")
    assert task_from_fields({"question": "Q", "meta": "not a dict"}, "wiki").meta == {}
    odd = task_from_fields({"question": "Q", "answer": 0, "id": 0, "aliases": "Paris"}, "wiki")
    assert (odd.answer, odd.id, odd.aliases) == ("0", "0", ["Paris"])
    with pytest.raises(ValueError, match="needs its question"):
        task_from_fields({"answer": "A"}, "wiki")


def test_an_episode_is_scored_once_on_the_step_that_finishes_it() -> None:
    episode = ScoredEpisode(lambda: make_env(EnvConfig(name="wiki", corpus=str(CORPUS))))
    with pytest.raises(RuntimeError, match="reset"):
        episode.step("search", "x")
    assert episode.reset(FIELDS) == ""  # the wiki shows nothing before a search
    result, reward = episode.step("search", "2002–03 La Liga")
    assert "La Liga" in result.observation and (result.done, reward, episode.reward) == (False, 0.0, 0.0)
    result, reward = episode.step("finish", "2002-08-31")  # an alias is right by the task's metric
    assert (result.done, reward, episode.reward, episode.answer) == (True, 1.0, 1.0, "2002-08-31")
    assert episode.step("finish", "1999")[1] == 0.0  # after the end: nothing more
    assert episode.reward == 1.0
    episode.reset(FIELDS)
    assert episode.step("finish", "1 September 2002")[1] == 0.0 and episode.reward == 0.0


class _FakeTools(ForeignTools):
    """A fake other side: each call is recorded and echoed."""

    def __init__(self, specs: tuple[ActionSpec, ...]) -> None:
        super().__init__("fake", specs)
        self.calls: list[tuple[str, str]] = []

    def reset(self, task, seed=None) -> str:
        self.answer = None
        return ""

    def call(self, spec: ActionSpec, argument: str) -> StepResult:
        self.calls.append((spec.name, argument))
        return StepResult(f"{spec.name}:{argument}", done=spec.name == "finish")

    def finish_info(self) -> dict:
        return {"reward": 0.5}


def test_foreign_tools_get_actunes_finish_only_when_they_have_none() -> None:
    env = _FakeTools((ActionSpec("probe", "thing", "probes."),))
    assert env.action_names == ("probe", "finish") and env.actions[-1] is FINISH
    env.reset(None)
    assert env.step(Action("probe", "a")).observation == "probe:a"
    done = env.step(Action("finish", "yes"))
    assert (done.done, done.info, env.answer, env.calls) == (True, {"answer": "yes", "reward": 0.5}, "yes",
                                                            [("probe", "a")])
    assert env.step(Action("probe", "b")).observation == "The episode has already finished."

    own = _FakeTools((ActionSpec("probe", "thing", "probes."), ActionSpec("finish", "answer", "ends.")))
    assert own.action_names == ("probe", "finish")
    own.reset(None)
    done = own.step(Action("finish", "no"))
    assert (done.observation, done.info, own.answer, own.calls) == ("finish:no", {"answer": "no"}, "no",
                                                                   [("finish", "no")])
