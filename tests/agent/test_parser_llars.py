"""The step parser on LLARS' forms (issue #9): labels REFLECTION / ACTION / FINAL ANSWER / GOAL, each up to the
next label, and tool calls written as calls."""

from __future__ import annotations

import asyncio
import time

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.parser import ParsedStep, parse_action, parse_step
from actune.envs.base import Action
from actune.records.task_record import Task

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

LLARS = ("rag_search", "lexical_search", "finish")
NAMES = ("search", "lookup", "finish")


@pytest.mark.parametrize("text, expected", [
    # FINAL ANSWER keeps every line up to the next label
    ("REFLECTION: Both facts are known [1][2].\nFINAL ANSWER: Sony was founded in 1946 [2].\nSony makes the "
     "Walkman [1].\nREFLECTION: running ahead",
     ParsedStep(thought="Both facts are known [1][2].",
                action_text="FINAL ANSWER: Sony was founded in 1946 [2].\nSony makes the Walkman [1].",
                answer="Sony was founded in 1946 [2].\nSony makes the Walkman [1].")),
    ("REFLECTION: done.\nFINAL ANSWER: 1946\nGOAL: the year", ParsedStep(
        thought="done.", action_text="FINAL ANSWER: 1946", answer="1946", goal="the year")),
    # GOAL is a label: its text is the goal, never part of the reflection
    ("GOAL: the founding year of the Walkman's maker\nREFLECTION: Nothing is known yet.\n"
     'ACTION: rag_search("Walkman maker")',
     ParsedStep(thought="Nothing is known yet.", action_text='rag_search("Walkman maker")',
                action=Action("rag_search", "Walkman maker"), goal="the founding year of the Walkman's maker")),
    (" The maker is Sony [1].\nGOAL: Sony's founding\nyear\nACTION: lexical_search('Sony founded')",
     ParsedStep(thought="The maker is Sony [1].", action_text="lexical_search('Sony founded')",
                action=Action("lexical_search", "Sony founded"), goal="Sony's founding year")),
    # an inline ACTION ends the reflection
    ('REFLECTION: The maker is Sony [1]; its founding year is missing. ACTION: rag_search("Sony founded") now',
     ParsedStep(thought="The maker is Sony [1]; its founding year is missing.", action_text='rag_search("Sony founded")',
                action=Action("rag_search", "Sony founded"))),
    ("THOUGHT: Sony [1]. Action 2: finish[1946]",
     ParsedStep(thought="Sony [1].", action_text="finish[1946]", action=Action("finish", "1946"), answer="1946")),
    # the call form, quotes escaped inside
    ('REFLECTION: t\nACTION: rag_search("the \\"Walkman\\" brand")',
     ParsedStep(thought="t", action_text='rag_search("the \\"Walkman\\" brand")',
                action=Action("rag_search", 'the "Walkman" brand'))),
    # a bare call inside the reflection, no ACTION label at all
    ('REFLECTION: I will look. finish("1946")',
     ParsedStep(thought="I will look.", action_text='finish("1946")',
                action=Action("finish", "1946"), answer="1946")),
])
def test_llars_forms_parse_to_exact_steps(text, expected):
    assert parse_step(text, LLARS, "finish", answer_to_label=True) == expected


@pytest.mark.parametrize("text, action", [
    (' t\nAction 1: search("Colorado orogeny")', Action("search", "Colorado orogeny")),
    (" t\nAction 1: search('x') and more", Action("search", "x")),
    (" t\nAction 1: Lookup ( 'eastern sector' )", Action("lookup", "eastern sector")),
    (' t\nAction 1: search("a [b] (c)")', Action("search", "a [b] (c)")),
])
def test_call_form_is_an_action_for_any_name(text, action):
    p = parse_step(text, NAMES)
    assert (p.thought, p.action, p.error) == ("t", action, None)


def test_call_form_errors_name_the_problem():
    assert parse_action('fly("moon")', NAMES)[1].startswith("Invalid action: unknown action 'fly'")
    for unclosed in ('search("x', 'search("x"', "search(x)"):
        action, error = parse_action(unclosed, NAMES)
        assert action is None and "is not of the form name[argument]" in error, unclosed


@pytest.mark.parametrize("text, llars, react", [
    # a FINAL ANSWER after an action on a later line: LLARS answers, ReAct's reading keeps the first
    ("REFLECTION: Sony makes it [1].\nACTION: search[Sony]\nFINAL ANSWER: 1946 [1]",
     ParsedStep(thought="Sony makes it [1].", action_text="FINAL ANSWER: 1946 [1]", answer="1946 [1]"),
     ParsedStep(thought="Sony makes it [1].", action_text="search[Sony]", action=Action("search", "Sony"))),
    ('REFLECTION: Sony makes it. ACTION: rag_search("Sony")\nFINAL ANSWER: 1946\nGOAL: the year',
     ParsedStep(thought="Sony makes it.", action_text="FINAL ANSWER: 1946", answer="1946", goal="the year"),
     ParsedStep(thought="Sony makes it.", action_text='rag_search("Sony")', action=Action("rag_search", "Sony"),
                goal="the year")),
    # "final answer:" among the words after an action on its own line is never read
    ("REFLECTION: r\nACTION: search[Sony] to reach the final answer: the year",
     ParsedStep(thought="r", action_text="search[Sony]", action=Action("search", "Sony")),
     ParsedStep(thought="r", action_text="search[Sony]", action=Action("search", "Sony"))),
    # a FINAL ANSWER first wins in both readings
    ("REFLECTION: done.\nFINAL ANSWER: 1946\nACTION: search[Sony]",
     ParsedStep(thought="done.", action_text="FINAL ANSWER: 1946", answer="1946"),
     ParsedStep(thought="done.", action_text="FINAL ANSWER: 1946", answer="1946")),
])
def test_final_answer_wins_over_an_action_in_llars_reading(text, llars, react):
    assert parse_step(text, LLARS + ("search",), "finish", answer_to_label=True) == llars
    assert parse_step(text, LLARS + ("search",), "finish") == react


def test_goal_goes_to_the_steps_meta():
    p = parse_step("GOAL: the founding year\nREFLECTION: r\nACTION: search[Sony]", NAMES, answer_to_label=True)
    assert p.goal_meta() == {"goal": "the founding year"}
    assert parse_step("REFLECTION: r\nACTION: search[Sony]", NAMES).goal_meta() == {}


def test_final_answer_keeps_its_first_line_outside_llars():
    text = "REFLECTION: done.\nFINAL ANSWER: 1946\nSony makes the Walkman."
    assert parse_step(text, LLARS).answer == "1946"
    assert parse_step(text, LLARS, answer_to_label=True).answer == "1946\nSony makes the Walkman."


def test_prose_goal_relation_and_action_words_stay_in_the_reflection():
    p = parse_step(" Current state: x. Goal relation: y.\nAction 1: search[z]", NAMES)
    assert (p.thought, p.goal, p.action) == ("Current state: x. Goal relation: y.", None, Action("search", "z"))
    # a label on its own line wins over an inline "action:" in prose
    p = parse_step(" The best action: read it.\nAction 1: lookup[year]", NAMES)
    assert (p.thought, p.action) == ("The best action: read it.", Action("lookup", "year"))


def test_reflact_episode_keeps_goal_out_and_a_multi_line_answer_whole():
    task = Task(id="t1", question="In which year was the company that makes the Walkman founded?",
                answer="1946\nby Sony")
    llm = ScriptedLLM([
        ' GOAL: the founding year of the Walkman\'s maker\nREFLECTION: Nothing is known. ACTION: search("Walkman")',
        " Walkman is by Sony; need the year.\nFINAL ANSWER: 1946\nby Sony",
    ])
    traj = asyncio.run(run_episode(task, FakeEnvironment(), llm, AgentConfig(method="reflact"),
                                   scorer=exact_match_scorer))
    assert [(s.type, s.text) for s in traj.steps] == [
        ("reflection", "Nothing is known."), ("action", 'search("Walkman")'),
        ("observation", "Walkman is a brand of portable audio players made by Sony."),
        ("reflection", "Walkman is by Sony; need the year."), ("answer", "FINAL ANSWER: 1946\nby Sony")]
    assert traj.prediction == "1946\nby Sony" and traj.correct


@pytest.mark.parametrize("text", [
    "\nGOAL:" * 3000,
    "GOAL: x" + " " * 19_000 + "\nACTION:",
    'search("' + "\\" * 19_990,
    "REFLECTION: a" + " action:" * 2000,
    "FINAL ANSWER: a" + "\nb" * 9000,
], ids=["goal-lines", "goal-spaces", "open-call-escapes", "inline-actions", "answer-lines"])
def test_llars_forms_parse_in_linear_time(text):
    # A guard against a quadratic scan, not a speed goal: each takes milliseconds when linear.
    t0 = time.perf_counter()
    for to_label in (False, True):
        parse_step(text, LLARS, answer_to_label=to_label)
        parse_step(text, None, None, True, answer_to_label=to_label)
    assert time.perf_counter() - t0 < 0.5
