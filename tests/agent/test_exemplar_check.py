"""Exemplars checked against the environment's actions before an episode runs (issue #49 item 4)."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.exemplar_check import check_exemplar_actions, exemplar_action_names
from actune.agent.exemplars import ExemplarError, load_exemplars
from actune.config import ConfigError
from actune.envs.base import Action, Environment, StepResult
from actune.records.task_record import Task

from .fakes import FakeHousehold, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="How many claw hammers are in stock?", answer="12", env="fake_inventory")
WAYS_OUT = ("agent.exemplar_set=<name or path>", "agent.regime=zero_shot", "docs/usage.md")


@dataclass
class FakeInventory(Environment):
    """A FAKE inventory of one item with the example's lookup/shelf/finish actions, recording what it was asked."""

    name: str = "fake_inventory"
    action_names: tuple[str, ...] = ("lookup", "shelf", "finish")
    finish_action: str | None = "finish"
    resets: list[str] = field(default_factory=list)

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.resets.append(task.id)
        return ""

    def step(self, action: Action) -> StepResult:
        if action.name == "finish":
            return StepResult("Episode finished.", done=True, info={"answer": action.argument})
        return StepResult("claw hammer: 12 in stock, on shelf B1.")

    def describe_actions(self) -> str:
        return "(1) lookup[item]\n(2) shelf[location]\n(3) finish[answer]"


def inventory_set(tmp_path: Path, *actions_by_kind: tuple[str, list[str]]) -> str:
    """An exemplar file with one exemplar per ``(kind, actions)``; returns its path."""
    exemplars = [{"question": f"q {kind}", "answer": "a", "kind": kind,
                  "steps": [{"thought": "t", "action": a, "observation": "o"} for a in actions]}
                 for kind, actions in actions_by_kind]
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"env": "fake_inventory", "exemplars": exemplars}))
    return str(path)


def test_wiki_exemplars_on_an_inventory_are_refused_before_the_env_or_model_is_asked():
    env, llm = FakeInventory(), ScriptedLLM([" t\nAction 1: finish[12]"])
    with pytest.raises(ConfigError) as e:
        asyncio.run(run_episode(TASK, env, llm, AgentConfig(exemplar_set="wiki"), scorer=exact_match_scorer))
    msg = str(e.value)
    # search is missing; lookup and finish are the inventory's own too
    assert "set 'wiki' use actions environment 'fake_inventory' does not have: search (its actions: lookup, " \
           "shelf, finish)" in msg
    assert all(w in msg for w in WAYS_OUT)
    assert env.resets == [] and llm.calls == []


def test_an_unset_set_on_an_environment_without_one_names_the_ways_out():
    with pytest.raises(ExemplarError) as e:
        check_exemplar_actions(AgentConfig(), FakeInventory())
    msg = str(e.value)
    assert msg.startswith("agent.exemplar_set is unset, so environment 'fake_inventory' gets its own: ")
    assert re.search(r"prompts/fake_inventory\.json: exemplar file not found\. ", msg)
    assert all(w in msg for w in WAYS_OUT) and "wiki" in msg  # the built-in sets are listed
    assert isinstance(e.value, ConfigError)


def test_a_named_file_that_is_not_there_names_it_and_the_ways_out(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ExemplarError, match=re.escape(f"{missing}: exemplar file not found. Name a set")):
        check_exemplar_actions(AgentConfig(exemplar_set=str(missing)), FakeInventory())


def test_a_fitting_file_runs_and_is_shown(tmp_path):
    path = inventory_set(tmp_path, ("single", ["lookup[hex nut]", "finish[310]"]))
    llm = ScriptedLLM([" It is 12.\nAction 1: finish[12]"])
    traj = asyncio.run(run_episode(TASK, FakeInventory(), llm, AgentConfig(exemplar_set=path),
                                   scorer=exact_match_scorer))
    assert traj.correct and "Action 1: lookup[hex nut]" in llm.calls[0].prompt


@pytest.mark.parametrize("cfg", [AgentConfig(exemplar_set="wiki", regime="zero_shot"),
                                 AgentConfig(exemplar_set="wiki", method="cot"),
                                 AgentConfig(exemplar_set="wiki", method="cot_sc"),
                                 AgentConfig(exemplar_set="wiki", method="standard")])
def test_prompts_that_show_no_exemplar_action_pass(cfg):
    check_exemplar_actions(cfg, FakeInventory())  # zero-shot shows none; CoT and Standard show answers only


@pytest.mark.parametrize("method", ["act", "react", "reflact", "preflect", "react_cotsc", "cotsc_react"])
def test_every_method_that_acts_is_checked(method):
    with pytest.raises(ExemplarError, match="does not have: search"):
        check_exemplar_actions(AgentConfig(exemplar_set="wiki", method=method), FakeInventory())


def test_only_the_exemplars_shown_are_checked(tmp_path):
    path = inventory_set(tmp_path, ("single", ["lookup[x]", "finish[1]"]), ("bridge", ["search[y]", "finish[2]"]))
    env = FakeInventory()
    check_exemplar_actions(AgentConfig(exemplar_set=path, exemplar_kinds=["single"]), env)
    check_exemplar_actions(AgentConfig(exemplar_set=path, num_exemplars=1), env)
    for kinds in (["bridge"], ["task"]):  # [task]: a bridge task would be shown the bridge exemplar
        with pytest.raises(ExemplarError, match="does not have: search "):
            check_exemplar_actions(AgentConfig(exemplar_set=path, exemplar_kinds=kinds), env)


def test_free_text_commands_are_read_by_their_verb():
    es = load_exemplars("alfworld")
    household = FakeHousehold()  # ALFWorld's verbs: every command of the set is one
    check_exemplar_actions(AgentConfig(exemplar_set="alfworld"), household)
    assert exemplar_action_names(es.exemplars[:1], household)[0] == "go"
    fewer = FakeHousehold(action_names=("go", "take", "put", "open"))
    with pytest.raises(ExemplarError, match=r"does not have: (\w+, )*clean\b"):
        check_exemplar_actions(AgentConfig(exemplar_set="alfworld"), fewer)


def test_the_documented_format_loads_and_fits_its_environment(tmp_path):
    usage = (Path(__file__).resolve().parents[2] / "docs" / "usage.md").read_text()
    section = usage.split("## Few-shot exemplars", 1)[1].split("\n## ", 1)[0]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    (tmp_path / "doc.json").write_text(block)
    es = load_exemplars(tmp_path / "doc.json")
    assert [s.action for s in es.exemplars[0].steps] == ["lookup[hex nut M6]", "finish[310]"]
    check_exemplar_actions(AgentConfig(exemplar_set=str(tmp_path / "doc.json")), FakeInventory())
