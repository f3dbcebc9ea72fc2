"""ALFWorld prompts: ReAct's sparse think form as the paper evaluated it, beside today's thought-every-step
exemplars, and ReflAct exemplars with reflections (issue #9). No TextWorld needed: a scripted household."""

from __future__ import annotations

import asyncio
import logging

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.exemplars import EVERY_STEP, SPARSE_THINK, ExemplarError, load_exemplars
from actune.agent.render import build_prompt_context, render_exemplar, trajectory_prompt_context
from actune.agent.validate import step_order_problems
from actune.envs.alfworld_env import VERBS
from actune.records.task_record import Task

from .fakes import HOUSEHOLD_ROOM, FakeHousehold, ScriptedLLM

KINDS = ["put", "clean", "heat", "cool", "examine", "puttwo"]
ROOM = HOUSEHOLD_ROOM
ACTIONS = FakeHousehold().describe_actions()


Household = FakeHousehold


def won(task: Task, prediction: str | None, info: dict) -> tuple[bool, dict[str, float]]:
    return bool(info.get("won")), {"won": float(bool(info.get("won")))}


def test_sparse_set_is_the_papers_two_trajectories_per_task_type():
    sparse = load_exemplars("alfworld_sparse")
    assert sparse.style == SPARSE_THINK and load_exemplars("alfworld").style == EVERY_STEP
    assert [e.kind for e in sparse.exemplars] == [k for k in KINDS for _ in (1, 0)]
    for e in sparse.exemplars:
        assert e.initial_observation.endswith(f"Your task is to: {e.question}.")
        assert all(not s.thought and not s.reflection and s.action and s.observation for s in e.steps)
        thinks = [s for s in e.steps if s.action.startswith("think:")]
        # sparse: a few thoughts, each answered OK., between actions the game knows
        assert thinks and len(thinks) < len(e.steps) / 2 and all(s.observation == "OK." for s in thinks)
        assert {s.action.split()[0] for s in e.steps} <= set(VERBS) | {"think:"}


def test_sparse_exemplar_renders_actions_only_and_dense_keeps_a_thought_each():
    ex = load_exemplars("alfworld_sparse").exemplars[1]  # react_put_0: the paper's first put trajectory
    lines = render_exemplar(ex, "react", "alfworld", None, SPARSE_THINK).splitlines()
    assert lines[:6] == [
        ex.initial_observation.split("\n")[0], "Your task is to: put some spraybottle on toilet.",
        "Action 1: think: First I need to find a spraybottle. A spraybottle is more likely to appear in cabinet "
        "(1-4), countertop (1), toilet (1), sinkbasin (1-2), garbagecan (1). I can check one by one, starting with "
        "cabinet 1.",
        "Observation 1: OK.", "Action 2: go to cabinet 1",
        "Observation 2: On the cabinet 1, you see a cloth 1, a soapbar 1, a soapbottle 1."]
    assert not any(line.startswith("Thought") for line in lines) and len(lines) == 2 + 2 * len(ex.steps)
    dense = render_exemplar(load_exemplars("alfworld").exemplars[0], "react", "alfworld", None).splitlines()
    assert [line.split(":")[0] for line in dense[2:5]] == ["Thought 1", "Action 1", "Observation 1"]


def test_alfworld_reflact_exemplars_reflect_on_every_step():
    ex = load_exemplars("alfworld").exemplars[0]
    lines = render_exemplar(ex, "reflact", "alfworld", None).splitlines()
    assert lines[2] == ("Reflection 1: Current state: I am in the middle of the room and hold nothing. Latest "
                        "discovery: the room has cabinets 1-4, a countertop, a toilet, two sinkbasins and a "
                        "garbagecan. Goal relation: I need a spraybottle, then the toilet; a spraybottle is most "
                        "likely in a cabinet, so I start with cabinet 1.")
    assert [line.split(" ")[0] for line in lines[2:]] == ["Reflection", "Action", "Observation"] * len(ex.steps)


def test_sparse_react_episode_acts_and_thinks_through_actions():
    env = Household()
    task = Task(id="g1", question="put a spraybottle in/on the toilet", answer="", env="alfworld",
                meta={"task_type": "put"})
    llm = ScriptedLLM([" think: First I need to find a spraybottle.", " go to cabinet 1",
                       " take spraybottle 2 from cabinet 1", " think: Now I put it on the toilet.",
                       " put spraybottle 2 in/on toilet 1"])
    cfg = AgentConfig(method="react", exemplar_set="alfworld_sparse", exemplar_kinds=["task"])
    traj = asyncio.run(run_episode(task, env, llm, cfg, scorer=won))
    assert traj.correct and traj.finish_reason == "env_done"
    assert [(s.type, s.iteration, s.text) for s in traj.steps[:4]] == [
        ("action", 1, "think: First I need to find a spraybottle."), ("observation", 1, "OK."),
        ("action", 2, "go to cabinet 1"), ("observation", 2, "On the cabinet 1, you see a spraybottle 2.")]
    assert [s.type for s in traj.steps] == ["action", "observation"] * 5
    assert env.commands[0] == "think[First I need to find a spraybottle.]"
    prompt = llm.calls[0].prompt
    assert prompt.startswith("Interact with a household to solve a task with interleaving Action, Observation "
                             "steps. Think only where it helps, with the action 'think: ...'.")
    assert prompt.endswith(ROOM + "\nAction 1:") and "Thought" not in prompt
    # the game's task type picks the paper's two trajectories of that type, as ReAct prompted each game
    assert prompt.count("Your task is to: ") == 3 and prompt.count("Your task is to: put some") == 2
    assert llm.calls[0].stop == ["\nObservation", "\n\n", "\n"]
    assert traj.info["prompt"]["style"] == SPARSE_THINK and step_order_problems(traj) == []
    assert trajectory_prompt_context(traj).style == SPARSE_THINK


def test_dense_react_on_the_same_household_still_writes_a_thought_each_step():
    llm = ScriptedLLM([" I look in the cabinet.\nAction 1: go to cabinet 1",
                       " I take it.\nAction 2: take spraybottle 2 from cabinet 1",
                       " I put it.\nAction 3: put spraybottle 2 in/on toilet 1"])
    traj = asyncio.run(run_episode(Task(id="g1", question="q", answer="", env="alfworld"), Household(), llm,
                                   AgentConfig(method="react"), scorer=won))
    assert traj.correct and [s.type for s in traj.steps[:3]] == ["thought", "action", "observation"]
    assert "style" not in traj.info["prompt"] and llm.calls[0].prompt.endswith("\nThought 1:")


def test_the_sparse_style_holds_zero_shot_and_only_for_react(caplog):
    ctx = build_prompt_context("react", "alfworld", ACTIONS, "q", regime="zero_shot", exemplar_set="alfworld_sparse",
                               finish_action=None, initial_observation=ROOM)
    assert ctx.style == SPARSE_THINK and ctx.examples == "" and "Think only where it helps" in ctx.instruction
    with caplog.at_level(logging.WARNING, logger="actune.agent.render"):
        ctx = build_prompt_context("react", "alfworld", ACTIONS, "q", regime="zero_shot",
                                   exemplar_set="/nowhere/sparse.json", finish_action=None)
    assert ctx.style == EVERY_STEP and "exemplar file not found: the steps get a thought each" in caplog.text
    for method in ("reflact", "act", "preflect"):
        with pytest.raises(ExemplarError, match=f"'alfworld_sparse' is in ReAct's sparse think form; {method} needs"):
            build_prompt_context(method, "alfworld", ACTIONS, "q", exemplar_set="alfworld_sparse", finish_action=None)


def test_a_folder_named_like_a_set_does_not_shadow_it(tmp_path, monkeypatch) -> None:
    # Run from a folder holding runs/alfworld/ (an eval's out_dir): the name still means the built-in set.
    (tmp_path / "alfworld").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_exemplars("alfworld").style == EVERY_STEP
    assert len(load_exemplars("alfworld").exemplars) == 6
