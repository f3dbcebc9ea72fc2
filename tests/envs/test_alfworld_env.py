from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from actune.envs.base import Action
from actune.tasks.alfworld_games import TASK_TYPES, load_games, walkthrough

HERE = Path(__file__).resolve()
SAMPLE = HERE.parents[1] / "data" / "alfworld"
SHARED_GAMES = HERE.parents[2] / ".." / "shared" / "data" / "alfworld" / "valid_unseen"
HAVE_TEXTWORLD = all(importlib.util.find_spec(m) is not None for m in ("textworld", "alfworld"))
needs_textworld = pytest.mark.skipif(
    not HAVE_TEXTWORLD,
    reason="textworld/alfworld not installed: run `bash scripts/install_alfworld.sh` (log: .venv/alfworld-install.log)")


def _react_form(command: str) -> Action:
    """A walkthrough command as ReAct's prompts write it ("move X to Y" -> "put X in/on Y"), parsed as
    the agent loop does (verb + rest)."""
    if command.startswith("move "):
        obj, recep = command[5:].split(" to ", 1)
        command = f"put {obj} in/on {recep}"
    verb, _, rest = command.partition(" ")
    return Action(verb, rest)


@needs_textworld
def test_walkthrough_wins_and_think_returns_ok() -> None:
    from actune.envs.alfworld_env import AlfWorldEnv

    task = load_games(SAMPLE)[0]
    env = AlfWorldEnv()
    obs = env.reset(task)
    assert obs.startswith("You are in the middle of a room.")
    assert obs.endswith("Your task is to: look at alarmclock under the desklamp.")
    assert "go to desk 1" in env.admissible
    r = env.step(Action("think", "To solve the task, I need to find an alarmclock and a desklamp."))
    assert (r.observation, r.done, r.info["won"]) == ("OK.", False, False)
    r = env.step(Action("dance", "wildly"))
    assert (r.observation, r.done) == ("Nothing happens.", False)
    moves = walkthrough(task.meta["gamefile"])
    assert moves == ["go to desk 1", "use desklamp 1", "take alarmclock 2 from desk 1"]
    r = env.step(_react_form(moves[0]))
    # ReAct's observation form: the "You arrive at ..." prefix is dropped
    assert r.observation.startswith("On the desk 1, you see a alarmclock 2")
    r = env.step(_react_form(moves[1]))
    assert (r.observation, r.done) == ("You turn on the desklamp 1.", False)
    r = env.step(_react_form(moves[2]))
    assert r.done and r.info["won"] is True
    assert env.step(Action("look", "")).observation == "The game is over."
    env.close()


@needs_textworld
@pytest.mark.shared
@pytest.mark.skipif(
    not SHARED_GAMES.is_dir(),
    reason="../shared/data/alfworld/valid_unseen (the 134 evaluation games) is absent; the other ALFWorld tests "
           "play the sample game in tests/data/alfworld")
def test_one_game_of_each_type_is_won_by_its_walkthrough_in_react_form() -> None:
    from actune.envs.alfworld_env import AlfWorldEnv

    tasks = load_games(SHARED_GAMES)
    assert len(tasks) == 134
    first = {}
    for t in tasks:
        first.setdefault(t.meta["task_type"], t)
    assert sorted(first) == sorted(TASK_TYPES.values())
    env = AlfWorldEnv()
    for kind, task in sorted(first.items()):
        env.reset(task)
        results = [env.step(_react_form(c)) for c in walkthrough(task.meta["gamefile"])]
        assert results[-1].info["won"], (kind, task.id, [r.observation for r in results])
        assert not any(r.info["won"] for r in results[:-1])
        puts = [r.observation for c, r in zip(walkthrough(task.meta["gamefile"]), results) if c.startswith("move ")]
        assert all(o.startswith("You put the ") and " in/on the " in o for o in puts), puts
    env.close()


class ScriptedLLM:
    """A fake model: returns the given step texts in order."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    async def complete(self, prompt, *, sampling, stop=None):
        from actune.llm import Completion, Usage

        self.prompts.append(prompt)
        return Completion(text=self.replies.pop(0), finish_reason="stop", usage=Usage(1, 1))

    async def chat(self, messages, *, sampling, stop=None, extra_body=None):
        raise AssertionError("text wire only")


@needs_textworld
def test_the_agent_loop_wins_a_game_and_scores_it() -> None:
    import asyncio

    from actune.agent import AgentConfig, run_episode
    from actune.envs.alfworld_env import AlfWorldEnv

    task = load_games(SAMPLE)[0]
    llm = ScriptedLLM([
        " To solve the task, I need to find an alarmclock, then a desklamp.\nAction 1: think: The desk may hold both.",
        " I will check the desk first.\nAction 2: go to desk 1",
        " The desk has a desklamp 1.\nAction 3: use desklamp 1",
        " Now I take the alarmclock.\nAction 4: take alarmclock 2 from desk 1",
    ])
    traj = asyncio.run(run_episode(task, AlfWorldEnv(), llm, AgentConfig(method="react", regime="zero_shot")))
    assert traj.correct and traj.scores == {"won": 1.0}
    observations = [s.text for s in traj.steps if s.type == "observation"]
    assert observations[0] == "OK."
    assert observations[1].startswith("On the desk 1, you see a alarmclock 2")
    assert "Your task is to: look at alarmclock under the desklamp." in llm.prompts[0]
    assert llm.replies == []
