"""The example's own tool environment (examples/inventory): its tools' exact observations, and a scripted episode
through the real agent loop, prompted with its actions and exemplars, judged correct and grounded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent.fakes import ScriptedLLM

from actune.agent import AgentConfig, run_episode
from actune.envs.actions import ActionSpec, ToolEnvironment, describe, valid_actions
from actune.envs.base import Action
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.judge import judge
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inventory"
INVENTORY = "examples.inventory.inventory_env:make_env"


@pytest.fixture
def env():
    return make_env(EnvConfig(name=INVENTORY, options={"data": str(EXAMPLE / "inventory.jsonl")}))


def step(env, name: str, argument: str):
    r = env.step(Action(name, argument))
    return r.observation, r.done, r.info


def test_lookup_by_name_sku_or_a_word_only_one_item_has(env) -> None:
    hammer = ("claw hammer (SKU CH-16): 12 in stock, 14.90 EUR each, on shelf B1, supplied by Hartmann Tools.",
              False, {"titles": ["claw hammer"]})
    assert step(env, "lookup", "claw hammer") == hammer
    assert step(env, "Lookup", " Claw Hammer. ") == hammer
    assert step(env, "lookup", "ch-16") == hammer
    assert step(env, "lookup", "hammer") == hammer
    assert step(env, "lookup", "drill") == (
        "Several items match 'drill': cordless drill, drill bit set. Look one up by its full name.", False,
        {"titles": []})
    obs, done, info = step(env, "lookup", "anvil")
    assert obs.startswith("There is no item 'anvil'. Items: hex bolt M6, hex nut M6, wood screw 4x40,")
    assert (done, info) == (False, {"titles": []})


def test_shelf_lists_its_items(env) -> None:
    assert step(env, "shelf", "B1") == ("Shelf B1 holds: claw hammer, rubber mallet.", False,
                                        {"titles": ["shelf B1"]})
    assert step(env, "shelf", "shelf c2") == ("Shelf C2 holds: drill bit set.", False, {"titles": ["shelf C2"]})
    assert step(env, "shelf", "Z9") == (
        "There is no shelf 'Z9'. Shelves: A1, A2, A3, B1, B2, B3, C1, C2, C3, D1, D2, D3.", False, {"titles": []})


def test_finish_ends_the_episode_and_bad_actions_are_explained(env) -> None:
    assert step(env, "search", "bolts") == (
        "Invalid action: search[bolts]. Valid actions are lookup[item], shelf[location] and finish[answer].",
        False, {})
    assert step(env, "lookup", "") == ("lookup needs its item: write lookup[item].", False, {})
    assert step(env, "finish", "Voltra") == ("Episode finished.", True, {"titles": [], "answer": "Voltra"})
    assert step(env, "lookup", "claw hammer") == ("The episode has already finished.", True, {"answer": "Voltra"})
    env.reset(load_tasks(TaskConfig(format="custom", path=str(EXAMPLE / "train.jsonl")))[0])
    assert step(env, "shelf", "A1")[1:] == (False, {"titles": ["shelf A1"]})


def test_the_actions_are_declared_once(env) -> None:
    assert env.describe_actions() == (
        "lookup[item]: returns the item's SKU, stock, price, shelf and supplier; give its name or SKU, e.g. "
        "lookup[claw hammer].\n"
        "shelf[location]: lists the items stored on a shelf, e.g. shelf[B1].\n"
        "finish[answer]: returns the answer and finishes the task.")
    assert env.describe_actions() == describe(env.actions)
    assert (env.action_names, env.finish_action) == (("lookup", "shelf", "finish"), "finish")
    one = (ActionSpec("finish", "answer", "ends it."),)
    assert (valid_actions(one), describe(one)) == ("finish[answer]", "finish[answer]: ends it.")
    assert isinstance(env, ToolEnvironment)


SCRIPT = [
    " I need to find the item on shelf C2, then its supplier.\nAction 1: shelf[C2]",
    " Shelf C2 holds the drill bit set. I need its supplier.\nAction 2: lookup[drill bit set]",
    " The drill bit set is supplied by Voltra. So the answer is Voltra.\nAction 3: finish[Voltra]",
]


def test_a_scripted_episode_in_the_real_loop_is_correct_and_grounded(env) -> None:
    task = next(t for t in load_tasks(TaskConfig(format="custom", path=str(EXAMPLE / "train.jsonl"), env="inventory"))
                if t.id == "inv-tr7")
    llm = ScriptedLLM(list(SCRIPT))
    cfg = AgentConfig(method="react", exemplar_set=str(EXAMPLE / "exemplars.json"))
    traj = asyncio.run(run_episode(task, env, llm, cfg))  # the default scorer: the task metrics' own
    assert [(s.type, s.action_name, s.action_arg) for s in traj.steps if s.type in ("action", "answer")] == [
        ("action", "shelf", "C2"), ("action", "lookup", "drill bit set"), ("answer", "finish", "Voltra")]
    assert [s.text for s in traj.steps if s.type == "observation"] == [
        "Shelf C2 holds: drill bit set.",
        "drill bit set (SKU DB-10): 15 in stock, 12.40 EUR each, on shelf C2, supplied by Voltra."]
    assert (traj.prediction, traj.correct, traj.finish_reason, traj.task.env) == ("Voltra", True, "answered",
                                                                                   "inventory")
    assert traj.info["env_info"]["titles"] == ["shelf C2", "drill bit set"]
    verdict = judge(traj)
    assert (verdict.correct, verdict.grounded, verdict.grounding_checked, verdict.kept) == (True, True, True, True)
    # the prompt: the inventory's actions in the instruction, its exemplars, its question
    prompt = llm.calls[0].prompt
    assert prompt.startswith("Solve a question answering task with interleaving Thought, Action, Observation steps. "
                             "Thought can reason about the current situation, and Action can be one of:\n"
                             + env.describe_actions() + "\nHere are some examples.\n")
    assert "Action 1: shelf[C3]\nObservation 1: Shelf C3 holds: extension cord 10m.\n" in prompt
    assert prompt.endswith("Question: Who supplies the item stored on shelf C2?\nThought 1:")
    assert traj.info["prompt"]["instruction"].endswith("Action can be one of:\n" + env.describe_actions())


def test_an_answer_without_reading_the_shelf_is_not_grounded(env) -> None:
    task = next(t for t in load_tasks(TaskConfig(format="custom", path=str(EXAMPLE / "train.jsonl"), env="inventory"))
                if t.id == "inv-tr7")
    llm = ScriptedLLM([" I guess.\nAction 1: lookup[drill bit set]", " Voltra.\nAction 2: finish[Voltra]"])
    traj = asyncio.run(run_episode(task, env, llm, AgentConfig(method="react", regime="zero_shot")))
    verdict = judge(traj)
    assert (verdict.correct, verdict.grounded, verdict.kept, verdict.missing_titles) == (True, False, False,
                                                                                         ["shelf C2"])
    assert "Here are some examples." not in llm.calls[0].prompt and env.describe_actions() in llm.calls[0].prompt
