"""Event payloads as LLARS' production code sends them (issue #37), beside actune's own keys: exact events from the
helpers and from episodes of a ScriptedLLM, streamed or not; a FINAL ANSWER winning over an action in one output;
a ``GOAL:`` kept in the step's meta."""

from __future__ import annotations

import asyncio

import pytest

from actune.agent import AgentConfig, iter_episode
from actune.agent.episode import Event
from actune.agent.methods.live import (
    PREVIEW_CHARS,
    adaptive_iteration_event,
    adaptive_response_event,
    iteration_event,
    llars_keys,
)
from actune.records.task_record import Task
from actune.records.trajectory import Step

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")
PLAN = " 1. search[Walkman]. 2. search its maker. 3. finish."
PASS = 'fine.", "verdict": "PASS", "errors": []}'
SONY = "Sony is a Japanese company. It was founded in 1946."
R = "Current state: Sony makes the Walkman. Latest discovery: Sony. Goal relation: I need its year."


def events_of(cfg: AgentConfig, replies, env=None) -> list[Event]:
    async def collect():
        llm = ScriptedLLM(replies)
        got = [e async for e in iter_episode(TASK, env or FakeEnvironment(), llm, cfg, scorer=exact_match_scorer)]
        assert not llm.replies
        return got

    return asyncio.run(collect())


def steps_of(events) -> list[tuple]:
    """(type, iteration, payload) of the recorded steps' events."""
    kinds = ("thought", "reflection", "action", "observation", "answer", "plan", "critique")
    return [(e.type, e.iteration, e.data) for e in events if e.type in kinds]


def test_the_event_helpers_carry_both_sets_of_keys():
    assert iteration_event(2, "the goal", 7) == Event("iteration", 2, {"goal": "the goal", "max_iterations": 7,
                                                                       "max": 7})
    assert adaptive_iteration_event(1, 0.95) == Event("adaptive_iteration", 1, {"retrieval_score": 0.95,
                                                                                "reason": "high_confidence"})
    assert adaptive_response_event(2, "1946 [1]", 0.95) == Event("adaptive_response", 2, {
        "response": "1946 [1]", "retrieval_score": 0.95, "reason": "high_confidence_results"})


def test_llars_keys_of_each_step():
    long = "x" * 250 + " y" * 100
    assert PREVIEW_CHARS == 300
    assert llars_keys(Step("thought", "t", 1)) == {"thought": "t"}
    assert llars_keys(Step("reflection", "r", 1)) == {"reflection": "r"}
    assert llars_keys(Step("action", 'rag_search("a")', 1, action_name="rag_search", action_arg="a")) == {
        "action": "rag_search", "param": "a"}
    assert llars_keys(Step("action", "fly", 1)) == {"action": None, "param": None}  # unusable, as recorded
    assert llars_keys(Step("observation", long, 1)) == {"result_preview": "x" * 250 + " y" * 25}
    for kind in ("answer", "plan", "critique"):  # LLARS has no such event (its answer comes as deltas)
        assert llars_keys(Step(kind, "z", 1, action_name="finish", action_arg="z")) == {}


@pytest.mark.parametrize("stream", [False, True])
def test_react_step_events_carry_llars_keys_streamed_or_not(stream):
    page = "Sony is a Japanese company." + " It makes many things." * 20
    env = FakeEnvironment(pages={"Sony": page})
    events = events_of(AgentConfig(method="react", stream_events=stream),
                       [" I need Sony.\nAction 1: search[Sony]", " Done.\nAction 2: finish[1946]"], env)
    assert steps_of(events) == [
        ("thought", 1, {"text": "I need Sony.", "thought": "I need Sony."}),
        ("action", 1, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony", "action": "search",
                       "param": "Sony"}),
        ("observation", 1, {"text": page, "result_preview": page[:300]}),  # the whole text and its preview
        ("thought", 2, {"text": "Done.", "thought": "Done."}),
        ("answer", 2, {"text": "finish[1946]", "action_name": "finish", "action_arg": "1946"})]
    assert len(page) == 467


def test_preflect_iterations_carry_max_and_a_goal_is_kept_in_the_step_meta():
    reply = f" GOAL: the founding year of Sony\nREFLECTION: {R}\nACTION: search[Sony]"
    events = events_of(AgentConfig(method="preflect_reflact"), [PLAN, PASS, reply, f" {R}\nFINAL ANSWER: 1946"])
    assert [(e.type, e.iteration, e.data) for e in events if e.type == "iteration"] == [
        ("iteration", 1, {"goal": TASK.question, "max_iterations": 20, "max": 20}),
        ("iteration", 2, {"goal": TASK.question, "max_iterations": 20, "max": 20})]
    traj = events[-1].data["trajectory"]
    assert [(s.type, s.text, s.meta) for s in traj.steps if s.type == "reflection"] == [
        ("reflection", R, {"goal": "the founding year of Sony"}), ("reflection", R, {})]
    assert steps_of(events)[2] == ("reflection", 1, {"text": R, "reflection": R})


@pytest.mark.parametrize("method", ["reflact", "preflect_reflact"])
def test_a_final_answer_wins_over_an_action_in_the_same_output(method):
    head = [PLAN, PASS] if method == "preflect_reflact" else []
    env = FakeEnvironment()
    events = events_of(AgentConfig(method=method), head + [f" {R}\nACTION: search[Sony]\nFINAL ANSWER: 1946"], env)
    assert steps_of(events)[-2:] == [
        ("reflection", 1, {"text": R, "reflection": R}),
        ("answer", 1, {"text": "FINAL ANSWER: 1946", "action_name": "finish", "action_arg": "1946"})]
    assert [str(a) for a in env.actions] == ["finish[1946]"]  # the action never ran
    assert events[-1].data["trajectory"].correct


def test_a_streamed_action_waits_for_a_final_answer_that_would_win():
    events = events_of(AgentConfig(method="reflact", stream_events=True),
                       [[" Sony makes it.", "\nACTION: search[Sony]", "\nFINAL ANSWER: 19", "46"]])
    assert [(e.type, e.iteration, {k: v for k, v in e.data.items() if k != "trajectory"}) for e in events][2:] == [
        ("reflecting", 1, {}),
        ("reflection_delta", 1, {"delta": "Sony makes it."}),
        # no action_delta: in LLARS' reading a later FINAL ANSWER replaces the action, so it was held back
        ("delta", 1, {"delta": "19"}),
        ("delta", 1, {"delta": "46"}),
        ("reflection", 1, {"text": "Sony makes it.", "reflection": "Sony makes it."}),
        ("answer", 1, {"text": "FINAL ANSWER: 1946", "action_name": "finish", "action_arg": "1946"}),
        ("final_answer", 0, {"answer": "1946", "correct": True}),
        ("done", 0, {"finish_reason": "answered", "sources": None, "goal": TASK.question, "full_response": "1946"})]
