"""LLARS' event stream (AgentConfig.stream_events): exact event sequences against a scripted model, the deltas
of every step joined equal to its recorded text, and a streamed episode over a FAKE OpenAI server (httpx
MockTransport) that drops a stream halfway."""

from __future__ import annotations

import asyncio

import pytest

from actune.agent import AgentConfig, iter_episode
from actune.agent.methods.live import stable_end
from actune.llm import ClientConfig, LLMClient
from actune.records.task_record import Task

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
SONY = "Sony is a Japanese company. It was founded in 1946."
#: PreFlect's reflector passing the plan (its answer after the prefilled '{"analysis": "').
PASS = 'fine.", "verdict": "PASS", "errors": []}'


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
        ("iteration", 1, {"goal": GOAL, "max_iterations": 7, "max": 7}),
        ("thinking", 1, {}),
        ("thought_delta", 1, {"delta": "I need the maker"}),
        ("thought_delta", 1, {"delta": " of the Walkman."}),
        ("action_delta", 1, {"delta": "Search[Walkman]"}),  # once its bracket closes
        # each recorded step: actune's keys, then LLARS' (thought; action and param; result_preview)
        ("thought", 1, {"text": "I need the maker of the Walkman.", "thought": "I need the maker of the Walkman."}),
        ("action", 1, {"text": "Search[Walkman]", "action_name": "search", "action_arg": "Walkman",
                       "action": "search", "param": "Walkman"}),
        ("observation_delta", 1, {"delta": walkman}),  # the environment answers whole
        ("observation", 1, {"text": walkman, "result_preview": walkman}),
        ("iteration", 2, {"goal": GOAL, "max_iterations": 7, "max": 7}),
        ("thinking", 2, {}),
        ("thought_delta", 2, {"delta": "It is made by Sony."}),
        ("action_delta", 2, {"delta": "search[Sony]"}),
        ("thought", 2, {"text": "It is made by Sony.", "thought": "It is made by Sony."}),
        ("action", 2, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony", "action": "search",
                       "param": "Sony"}),
        ("observation_delta", 2, {"delta": sony}),
        ("observation", 2, {"text": sony, "result_preview": sony}),
        ("iteration", 3, {"goal": GOAL, "max_iterations": 7, "max": 7}),
        ("thinking", 3, {}),
        ("thought_delta", 3, {"delta": "Sony was founded in"}),
        ("thought_delta", 3, {"delta": " 1946."}),
        ("delta", 3, {"delta": "1946"}),  # the answer, once finish[...] closes
        ("thought", 3, {"text": "Sony was founded in 1946.", "thought": "Sony was founded in 1946."}),
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
        ("iteration", 1, {"goal": GOAL, "max_iterations": 7, "max": 7}),
        ("reflecting", 1, {}),
        ("reflection_delta", 1, {"delta": "The Walkman is made"}),
        ("reflection_delta", 1, {"delta": " by Sony; its founding"}),
        ("reflection_delta", 1, {"delta": " year is still missing."}),
        ("reflection", 1, {"text": "The Walkman is made by Sony; its founding year is still missing.",
                           "reflection": "The Walkman is made by Sony; its founding year is still missing."}),
        # held until the step is read: in LLARS' format a FINAL ANSWER on a later line would win over it
        ("action_delta", 1, {"delta": "search[Sony]"}),
        ("action", 1, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony", "action": "search",
                       "param": "Sony"}),
        ("observation_delta", 1, {"delta": SONY}),
        ("observation", 1, {"text": SONY, "result_preview": SONY}),
        ("iteration", 2, {"goal": GOAL, "max_iterations": 7, "max": 7}),
        ("reflecting", 2, {}),
        ("reflection_delta", 2, {"delta": "Sony was founded in 1946"}),
        ("reflection_delta", 2, {"delta": ", which answers the question."}),
        ("delta", 2, {"delta": "19"}),
        ("delta", 2, {"delta": "46 [1]"}),
        ("reflection", 2, {"text": "Sony was founded in 1946, which answers the question.",
                           "reflection": "Sony was founded in 1946, which answers the question."}),
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
    assert brief(events)[-9:-1] == [
        ("observation_delta", 1, {"delta": SONY}),
        ("observation", 1, {"text": SONY, "result_preview": SONY}),
        ("adaptive_iteration", 1, {"retrieval_score": 0.95, "reason": "high_confidence"}),
        ("delta", 2, {"delta": "19"}),
        ("delta", 2, {"delta": "46 [1]"}),
        ("answer", 2, {"text": "FINAL ANSWER: 1946 [1]", "action_name": "finish", "action_arg": "1946 [1]"}),
        ("adaptive_response", 2, {"response": "1946 [1]", "retrieval_score": 0.95, "reason": "high_confidence_results"}),
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
    """Each recorded step's text as its deltas carry it (an answer: its action_arg); empty texts stream nothing,
    nor do PreFlect's plans and critiques (LLARS has no such steps)."""
    out = {}
    for s in traj.steps:
        text = s.action_arg if s.type == "answer" else s.text
        if text and s.type not in ("plan", "critique"):
            assert (s.type, s.iteration) not in out  # one step of each type per iteration
            out[(s.type, s.iteration)] = text
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
            replies = [plan, PASS, *replies]
        llm = ScriptedLLM(replies + ["finish[1946]"] * 6)
        events = events_of(AgentConfig(method=method, stream_events=True), llm)
        traj = events[-1].data["trajectory"]
        got = joined_per_step(events)
        want = recorded(traj)
        # every recorded thought/reflection, action, observation and answer streamed, in full, and nothing else
        assert got == want, (text, size)


# Free-text commands (ALFWorld's form: no finish action, a verb and its words).
FREE_TEXT = [
    " I look around.\nAction 1: go to cabinet 1\nObservation 1: made up",
    " The key is here.\nAction: take key from drawer 2",
    " thinking about going\nAction 1: think: the key must be in a drawer",
    " The task is done.\nFINAL ANSWER: 1946 [1]",
    " go to the cabinet\nand more",
]


@pytest.mark.parametrize("method", ["react", "reflact", "act"])
@pytest.mark.parametrize("size", [1, 3])
def test_deltas_of_free_text_commands_join_to_their_steps(method, size):
    for text in FREE_TEXT + HARD:
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        llm = ScriptedLLM([pieces] + [" done\nFINAL ANSWER: 1946"] * 8)
        env = FakeEnvironment(action_names=("go", "take", "think"), finish_action=None)
        # zero-shot: the wiki exemplars' search[...] is no command of this environment (a config error)
        events = events_of(AgentConfig(method=method, regime="zero_shot", stream_events=True), llm, env)
        assert joined_per_step(events) == recorded(events[-1].data["trajectory"]), (text, size)


def test_a_free_text_command_streams_word_by_word():
    env = FakeEnvironment(action_names=("go", "take"), finish_action=None)
    llm = ScriptedLLM([[" I look.", "\nAction 1:", " go", " to", " cab", "inet", " 1 "], " done\nFINAL ANSWER: 1946"])
    events = events_of(AgentConfig(method="react", regime="zero_shot", stream_events=True), llm, env)
    assert brief(events)[2:11] == [
        ("thinking", 1, {}),
        ("thought_delta", 1, {"delta": "I look."}),
        ("action_delta", 1, {"delta": "go to"}),  # "go" alone might still grow into another command's name
        ("action_delta", 1, {"delta": " cab"}),
        ("action_delta", 1, {"delta": "inet"}),
        ("action_delta", 1, {"delta": " 1"}),
        ("thought", 1, {"text": "I look.", "thought": "I look."}),
        ("action", 1, {"text": "go to cabinet 1", "action_name": "go", "action_arg": "to cabinet 1", "action": "go",
                       "param": "to cabinet 1"}),
        ("observation_delta", 1, {"delta": "Invalid action: go[to cabinet 1]"}),
    ]


def test_an_inline_action_is_sent_when_the_step_is_read():
    # a later "Action:" line would replace an inline ACTION, so it is not streamed before the step is read
    llm = ScriptedLLM([[" The state:", " nothing yet.", " ACTION:", " search[", "Sony]", "\nObserv"],
                       " Done.\nFINAL ANSWER: 1946"])
    events = events_of(AgentConfig(method="reflact", stream_events=True), llm)
    assert brief(events)[2:9] == [
        ("reflecting", 1, {}),
        ("reflection_delta", 1, {"delta": "The state:"}),
        ("reflection_delta", 1, {"delta": " nothing yet."}),
        ("reflection", 1, {"text": "The state: nothing yet.", "reflection": "The state: nothing yet."}),
        ("action_delta", 1, {"delta": "search[Sony]"}),
        ("action", 1, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony", "action": "search",
                       "param": "Sony"}),
        ("observation_delta", 1, {"delta": SONY}),
    ]


@pytest.mark.parametrize("method", ["react", "preflect"])
def test_a_reprompted_action_streams(method):
    head = []
    if method == "preflect":
        head = [" Search the maker.", PASS]
    llm = ScriptedLLM([*head, " I should look.", [" search", "[Son", "y]"], " Done.\nAction 2: finish[1946]"])
    events = brief(events_of(AgentConfig(method=method, stream_events=True), llm))
    at = events.index(("reprompt", 1, {"prefix": "Action 1:"}))
    assert events[at - 1:at + 5] == [
        ("thought", 1, {"text": "I should look.", "thought": "I should look."}),
        ("reprompt", 1, {"prefix": "Action 1:"}),
        ("action_delta", 1, {"delta": "search[Sony]"}),
        ("action", 1, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony", "action": "search",
                       "param": "Sony"}),
        ("observation_delta", 1, {"delta": SONY}),
        ("observation", 1, {"text": SONY, "result_preview": SONY}),
    ]
    assert llm.streamed[-3:] == [True, True, True]


def test_a_format_hint_streams_as_the_observation():
    llm = ScriptedLLM([" I think.\nAction 1: think more", " Done.\nAction 2: finish[1946]"])
    events = brief(events_of(AgentConfig(method="react", stream_events=True), llm))
    error = ("Invalid action: 'think more' is not of the form name[argument]. Valid actions: search[...], "
             "lookup[...], finish[...].")
    hint = error + (" Write exactly one action per step as 'Action i: name[argument]' with name one of: "
                    "search[...], lookup[...], finish[...].")
    assert events[2:12] == [
        ("thinking", 1, {}),
        ("thought_delta", 1, {"delta": "I"}),
        ("thought_delta", 1, {"delta": " think."}),
        ("action_delta", 1, {"delta": "think"}),
        ("action_delta", 1, {"delta": " more"}),
        ("thought", 1, {"text": "I think.", "thought": "I think."}),
        ("action", 1, {"text": "think more", "action_name": None, "action_arg": None, "action": None,
                       "param": None}),  # unusable, recorded
        ("parse_error", 1, {"error": error, "consecutive": 1}),
        ("observation_delta", 1, {"delta": hint}),
        ("observation", 1, {"text": hint, "result_preview": hint[:300]}),
    ]


def _record_bytes(traj) -> str:
    traj.timings.started_at = traj.timings.wall_s = traj.timings.llm_s = traj.timings.env_s = 0.0  # the clock's
    return traj.to_json()


@pytest.mark.parametrize("method", ["react", "reflact", "act", "preflect", "preflect_reflact"])
def test_the_record_is_the_same_bytes_with_and_without_the_stream(method):
    for text in HARD:
        replies = [[text[i:i + 3] for i in range(0, len(text), 3)], " and then\nAction 2: finish[1946]",
                   " x\nAction 3: finish[1946]"]
        if method.startswith("preflect"):
            replies = [" Search the maker.", PASS, *replies]
        records = []
        for stream in (False, True):
            llm = ScriptedLLM([r if isinstance(r, str) else list(r) for r in replies] + ["finish[1946]"] * 6)
            events = events_of(AgentConfig(method=method, stream_events=stream), llm)
            records.append(_record_bytes(events[-1].data["trajectory"]))
        assert records[0] == records[1], text


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
                                         ("action", 1): "search[Sony]",
                                         ("observation", 1): "Sony is a Japanese company. It was founded in 1946.",
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
