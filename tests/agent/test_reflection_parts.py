"""The check that a ReflAct reflection has its three parts (current state, latest discovery, goal relation)."""

from __future__ import annotations

import asyncio

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.exemplars import load_exemplars
from actune.agent.reflection_parts import REFLECTION_PARTS, missing_reflection_parts, reflection_part_problems
from actune.records.task_record import Task

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer


@pytest.mark.parametrize("name", ["wiki", "fever", "docqa", "world", "alfworld"])
def test_every_builtin_reflection_has_its_three_parts(name):
    steps = [s for e in load_exemplars(name).exemplars for s in e.steps]
    assert steps and all(s.reflection for s in steps), name
    assert [(s.reflection, missing_reflection_parts(s.reflection)) for s in steps
            if missing_reflection_parts(s.reflection)] == []


@pytest.mark.parametrize("text, missing", [
    ("Current state: I hold nothing. Latest discovery: none. Goal relation: I need a mug.", []),
    ("goal relation: close.  CURRENT STATE : a mug. latest discovery: it is clean", []),  # any order and case
    ("State so far: x. New discovery: y. Relation to the goal: z.", []),
    ("Current state: x. Latest discovery: . Goal relation: z.", ["latest discovery"]),  # a label with no text
    ("Current state: Sony makes it. Goal relation: the year is missing.", ["latest discovery"]),
    ("I need the year Sony was founded, so I search Sony.", list(REFLECTION_PARTS)),  # a ReAct thought
    ("The understate: x. Latest discovery: y. Goal relation: z.", ["current state"]),
    ("", list(REFLECTION_PARTS)),
])
def test_missing_reflection_parts(text, missing):
    assert missing_reflection_parts(text) == missing


def test_reflection_part_problems_name_each_incomplete_reflection():
    task = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")
    llm = ScriptedLLM([
        " Current state: nothing. Latest discovery: none. Goal relation: I need the maker.\nAction 1: search[Walkman]",
        " I should search Sony next.\nAction 2: search[Sony]",
        " Current state: Sony, 1946. Goal relation: reached.\nFINAL ANSWER: 1946",
    ])
    traj = asyncio.run(run_episode(task, FakeEnvironment(), llm, AgentConfig(method="reflact"),
                                   scorer=exact_match_scorer))
    assert traj.correct
    assert reflection_part_problems(traj) == [
        "steps[3]: reflection 2 lacks current state, latest discovery, goal relation",
        "steps[6]: reflection 3 lacks latest discovery"]
    traj.method = "react"  # other methods have no reflections to check
    assert reflection_part_problems(traj) == []
