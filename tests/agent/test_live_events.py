"""LLARS' event stream (AgentConfig.stream_events): exact event sequences against a scripted model, the deltas
of every step joined equal to its recorded text, and a streamed episode over a FAKE OpenAI server (httpx
MockTransport) that drops a stream halfway."""

from __future__ import annotations

import asyncio

import pytest

from actune.agent import AgentConfig, iter_episode
from actune.agent.methods.live import stable_end
from actune.llm import ClientConfig, LLMClient
from actune.task_record import Task

from .fakes import Dropped, FakeEnvironment, FakeStreamingAPI, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")


def events_of(cfg: AgentConfig, llm, env=None) -> list:
    async def collect():
        return [e async for e in iter_episode(TASK, env or FakeEnvironment(), llm, cfg, scorer=exact_match_scorer)]

    return asyncio.run(collect())


def brief(events) -> list[tuple]:
    """(type, iteration, payload) with the record left out of ``done``."""
    out = []
    for e in events:
        data = {k: v for k, v in e.data.items() if k != "trajectory"}
        out.append((e.type, e.iteration, data))
    return out


GOAL = TASK.question


def test_react_event_sequence():
    llm = ScriptedLLM([
        [" I need the maker", " of the Walkman.", "\nAction", " 1: Search[Walk", "man]"],
        [" It is made by Sony.\nAction 2: search[Sony]"],
        [" Sony was founded in ", "1946.", "\nAction 3: fin", "ish[19", "46]"],
    ])
    events = events_of(AgentConfig(method="react", stream_events=True), llm)
    walkman = "Walkman is a brand of portable audio players made by Sony."
    sony = "Sony is a Japanese company. It was founded in 1946."
    assert brief(events) == [
        ("starting", 0, {"task_id": "t1", "goal": GOAL, "method": "react", "max_iterations": 7}),
        ("iteration", 1, {"goal": GOAL, "max_iterations": 7}),
        ("thinking", 1, {}),
        ("thought_delta", 1, {"delta": "I need the maker"}),
        ("thought_delta", 1, {"delta": " of the Walkman."}),
        ("thought", 1, {"text": "I need the maker of the Walkman."}),
        ("action", 1, {"text": "Search[Walkman]", "action_name": "search", "action_arg": "Walkman"}),
        ("observation", 1, {"text": walkman}),
        ("iteration", 2, {"goal": GOAL, "max_iterations": 7}),
        ("thinking", 2, {}),
        ("thought_delta", 2, {"delta": "It is made by Sony."}),
        ("thought", 2, {"text": "It is made by Sony."}),
        ("action", 2, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony"}),
        ("observation", 2, {"text": sony}),
        ("iteration", 3, {"goal": GOAL, "max_iterations": 7}),
        ("thinking", 3, {}),
        ("thought_delta", 3, {"delta": "Sony was founded in"}),
        ("thought_delta", 3, {"delta": " 1946."}),
        ("delta", 3, {"delta": "1946"}),  # the answer, once finish[...] closes
        ("thought", 3, {"text": "Sony was founded in 1946."}),
        ("answer", 3, {"text": "finish[1946]", "action_name": "finish", "action_arg": "1946"}),
        ("final_answer", 0, {"answer": "1946", "correct": True}),
        ("done", 0, {"finish_reason": "answered", "sources": None, "goal": GOAL, "full_response": "1946"}),
    ]
    assert llm.streamed == [True, True, True]


def test_reflact_event_sequence():
    llm = ScriptedLLM([
        [" The Walkman is made", " by Sony; its founding", " year is still missing.", "\nACTION: search[Sony]"],
        [" Sony was founded in 1946", ", which answers the question.\nFINAL", " ANSWER: 19", "46 [1]"],
    ])
    events = events_of(AgentConfig(method="reflact", stream_events=True), llm)
    assert brief(events)[1:] == [
        ("iteration", 1, {"goal": GOAL, "max_iterations": 7}),
        ("reflecting", 1, {}),
        ("reflection_delta", 1, {"delta": "The Walkman is made"}),
        ("reflection_delta", 1, {"delta": " by Sony; its founding"}),
        ("reflection_delta", 1, {"delta": " year is still missing."}),
        ("reflection", 1, {"text": "The Walkman is made by Sony; its founding year is still missing."}),
        ("action", 1, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony"}),
        ("observation", 1, {"text": "Sony is a Japanese company. It was founded in 1946."}),
        ("iteration", 2, {"goal": GOAL, "max_iterations": 7}),
        ("reflecting", 2, {}),
        ("reflection_delta", 2, {"delta": "Sony was founded in 1946"}),
        ("reflection_delta", 2, {"delta": ", which answers the question."}),
        ("delta", 2, {"delta": "19"}),
        ("delta", 2, {"delta": "46 [1]"}),
        ("reflection", 2, {"text": "Sony was founded in 1946, which answers the question."}),
        ("answer", 2, {"text": "FINAL ANSWER: 1946 [1]", "action_name": "finish", "action_arg": "1946 [1]"}),
        ("final_answer", 0, {"answer": "1946 [1]", "correct": False}),
        ("done", 0, {"finish_reason": "answered", "sources": None, "goal": GOAL, "full_response": "1946 [1]"}),
    ]


def test_off_by_default_nothing_streams_and_the_events_are_todays():
    replies = [" t\nAction 1: search[Sony]", " t2\nAction 2: finish[1946]"]
    off = ScriptedLLM(list(replies))
    events = events_of(AgentConfig(), off)
    assert off.streamed == [False, False]
    assert [e.type for e in events] == ["starting", "iteration", "thought", "action", "observation",
                                        "iteration", "thought", "answer", "final_answer", "done"]
    on = ScriptedLLM(list(replies))
    streamed = events_of(AgentConfig(stream_events=True), on)
    # the same record either way
    assert events[-1].data["trajectory"].steps == streamed[-1].data["trajectory"].steps


def test_adaptive_response_after_the_early_exit_answer():
    env = FakeEnvironment(retrieval_scores={"Sony": 0.95})
    llm = ScriptedLLM([" Sony makes it.\nACTION: search[Sony]", [" 19", "46 [1]"]])
    events = events_of(AgentConfig(method="reflact", early_exit=True, stream_events=True), llm, env)
    assert brief(events)[-8:-1] == [
        ("observation", 1, {"text": "Sony is a Japanese company. It was founded in 1946."}),
        ("adaptive_iteration", 1, {"retrieval_score": 0.95}),
        ("delta", 2, {"delta": "19"}),
        ("delta", 2, {"delta": "46 [1]"}),
        ("answer", 2, {"text": "FINAL ANSWER: 1946 [1]", "action_name": "finish", "action_arg": "1946 [1]"}),
        ("adaptive_response", 2, {"response": "1946 [1]", "retrieval_score": 0.95}),
        ("final_answer", 0, {"answer": "1946 [1]", "correct": False}),
    ]
    assert events[-1].type == "done" and events[-1].data["full_response"] == "1946 [1]"


def joined_per_step(events) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for e in events:
        if e.type.endswith("delta"):
            part = "answer" if e.type == "delta" else e.type.removesuffix("_delta")
            out[(part, e.iteration)] = out.get((part, e.iteration), "") + e.data["delta"]
    return out


def recorded(traj) -> dict[tuple[str, int], str]:
    out = {}
    for s in traj.steps:
        if s.type in ("thought", "reflection") and s.text:
            out[(s.type, s.iteration)] = s.text
        if s.type == "answer":
            out[("answer", s.iteration)] = s.action_arg
    return out


# Completions a small model writes, the parser's hard cases among them: labels split across pieces, inline
# labels, a GOAL line, a bare call inside the thought, an unclosed bracket across lines, a made-up observation.
HARD = [
    " I need the maker.\nAction 1: search[Walkman]\nObservation 1: made up",
    " Thought 1: I repeat my label.\nAction 1: search[Sony]",
    " The state: nothing yet. ACTION: search[Sony]",
    " GOAL: find the year\nThe year is missing.\nGOAL: again\nAction: lookup[founded]",
    " I will search[Sony] now",
    " I will search[Sony\nand more] text\nAction 2: search[Rhine]",
    " Sony, so the final answer: 1946 [1]\nthat is all",
    " first line only\nsecond line without an action",
    " The answer is known.\n\nFINAL ANSWER: 1946\nsee [1]\nREFLECTION: extra",
    " my next action: think more\nAction 3: search[Danube]",
    " thinking about finish and finishing\nAction: finish[1946]",
    " rag_search(\"Sony founding\") is what I call",
    "\nObserv",
    " Action",
]


@pytest.mark.parametrize("method", ["react", "reflact", "act", "preflect_reflact", "preflect"])
@pytest.mark.parametrize("size", [1, 2, 5])
def test_deltas_of_every_step_join_to_its_recorded_text(method, size):
    for text in HARD:
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        replies = [pieces, " and then\nAction 2: finish[1946]", " x\nAction 3: finish[1946]"]
        if method.startswith("preflect"):
            plan = " Search the maker, then its founding year."
            replies = [plan, '"analysis": "fine", "verdict": "PASS", "errors": []}', *replies]
        llm = ScriptedLLM(replies + ["finish[1946]"] * 6)
        events = events_of(AgentConfig(method=method, stream_events=True), llm)
        traj = events[-1].data["trajectory"]
        got = joined_per_step(events)
        want = recorded(traj)
        # every recorded thought/reflection and answer streamed, in full, and nothing else did
        assert got == want, (text, size)


def test_stable_end_holds_what_may_still_change():
    names = ("search", "lookup", "finish")
    assert stable_end("I need\nAct", names) == len("I need")
    assert stable_end("I need\nAction 1", names) == len("I need")
    assert stable_end("I will search[Son", names) == len("I will ")
    assert stable_end("I will sear", names) == len("I will ")
    assert stable_end("so the final ans", names) == len("so the ")
    assert stable_end("so the final", names) == len("so the ")
    assert stable_end("the maker of the Walkman.", names) == len("the maker of the Walkman.")
    assert stable_end(" T", names) == 0  # may be a repeated "Thought 1:"


# --- a real client, streaming from a FAKE OpenAI server (httpx.MockTransport) ---------------------------------

def client_episode(fake: FakeStreamingAPI, cfg: AgentConfig):
    async def collect():
        async with LLMClient(ClientConfig(endpoints=["http://fake/v1"], model="m", backoff_s=0.0),
                             transport=fake.transport) as llm:
            return [e async for e in iter_episode(TASK, FakeEnvironment(), llm, cfg, scorer=exact_match_scorer)]

    return asyncio.run(collect())


@pytest.mark.parametrize("wire", ["text", "chat"])
def test_a_streamed_episode_records_what_the_plain_one_does(wire):
    answers = [" The Walkman is made by Sony.\nACTION: search[Sony]",
               " Sony was founded in 1946.\nFINAL ANSWER: 1946"]
    plain = client_episode(FakeStreamingAPI(list(answers)), AgentConfig(method="reflact", wire=wire))
    fake = FakeStreamingAPI(list(answers))
    streamed = client_episode(fake, AgentConfig(method="reflact", wire=wire, stream_events=True))
    a, b = plain[-1].data["trajectory"], streamed[-1].data["trajectory"]
    assert [(s.type, s.text, s.tokens) for s in a.steps] == [(s.type, s.text, s.tokens) for s in b.steps]
    assert (a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.cached_prompt_tokens) == \
        (b.usage.prompt_tokens, b.usage.completion_tokens, b.usage.cached_prompt_tokens)
    assert b.correct and all(body.get("stream") for _, body in fake.requests)
    assert joined_per_step(streamed) == {("reflection", 1): "The Walkman is made by Sony.",
                                         ("reflection", 2): "Sony was founded in 1946.", ("answer", 2): "1946"}


def test_a_dropped_stream_ends_the_episode_as_server_error_without_half_a_step():
    fake = FakeStreamingAPI([" The Walkman is made by Sony.\nACTION: search[Sony]",
                             Dropped(" Sony was founded in 1946.\nFINAL ANSWER: 1946", after=3)])
    events = client_episode(fake, AgentConfig(method="reflact", stream_events=True))
    traj = events[-1].data["trajectory"]
    assert traj.finish_reason == "server_error" and "broke off" in traj.info["error"]
    assert traj.prediction is None and not traj.correct
    # step 2's text streamed, but nothing of step 2 was recorded: the record ends with step 1's observation
    assert [(s.type, s.iteration) for s in traj.steps] == [("reflection", 1), ("action", 1), ("observation", 1)]
    types = [e.type for e in events]
    assert types[-5:] == ["reflecting", "reflection_delta", "reflection_delta", "reflection_delta", "done"]
    assert "".join(e.data["delta"] for e in events if e.iteration == 2 and e.type == "reflection_delta") == \
        "Sony was founded"
    assert len(fake.requests) == 2  # not retried after text was shown
