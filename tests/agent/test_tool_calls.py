"""The tools wire: actions offered as OpenAI tools, each step one assistant turn with one call."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.render import PromptContext
from actune.agent.tool_calls import read_tool_call, render_tool_messages, tools_for
from actune.envs.actions import ActionSpec, action_specs, parse_described
from actune.llm import Completion, Sampling, Usage
from actune.records.task_record import Task

from .fakes import FakeEnvironment, exact_match_scorer

SPECS = (ActionSpec("search", "entity", "searches the exact entity."),
         ActionSpec("lookup", "keyword", "returns the next sentence containing keyword."),
         ActionSpec("finish", "answer", "returns the answer and finishes the task."))


class DescribedFakeEnvironment(FakeEnvironment):
    """The FAKE encyclopedia, its actions described as the built-in environments describe theirs."""

    def describe_actions(self) -> str:
        return "\n".join(s.line() for s in SPECS)


def call(name: str, **args: str) -> dict[str, Any]:
    return {"id": "chatcmpl-tool-x", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


@dataclass
class ToolCallingLLM:
    """A FAKE chat model that answers each request with the next scripted (content, tool calls) and records the
    messages and tools it was sent."""

    replies: list[tuple[str, list[dict[str, Any]] | None]]

    def __post_init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def chat(self, messages: list[dict[str, Any]], *, sampling: Sampling, stop: list[str] | None = None,
                   tools: list[dict[str, Any]] | None = None, **kw: Any) -> Completion:
        self.requests.append({"messages": messages, "tools": tools, "stop": stop})
        content, calls = self.replies.pop(0)
        return Completion(text=content, finish_reason="tool_calls" if calls else "stop",
                          usage=Usage(prompt_tokens=10, completion_tokens=5), tool_calls=calls)

    async def complete(self, prompt: str, **kw: Any) -> Completion:
        raise AssertionError("the tools wire never asks for a text completion")


TASK = Task(id="t1", question="Which company makes the Walkman?", answer="Sony", env="wiki")


def test_parse_described_reads_action_lines_of_an_instruction():
    text = ("Solve a question answering task with interleaving Thought, Action, Observation steps. Action can be "
            "one of:\n" + "\n".join(s.line() for s in SPECS))
    assert parse_described(text) == SPECS


def test_action_specs_refuses_free_text_commands():
    env = DescribedFakeEnvironment(finish_action=None)
    with pytest.raises(ValueError, match="free-text commands"):
        action_specs(env)


def test_tool_schema_of_an_action():
    assert tools_for(SPECS[:1]) == [{"type": "function", "function": {
        "name": "search", "description": "searches the exact entity.",
        "parameters": {"type": "object", "properties": {"entity": {"type": "string"}}, "required": ["entity"]}}}]


def test_a_react_episode_in_the_tools_wire():
    llm = ToolCallingLLM([
        ("I should search Walkman.", [call("search", entity="Walkman")]),
        ("Sony makes it.\n", [call("finish", answer="Sony")]),
    ])
    env = DescribedFakeEnvironment()
    traj = asyncio.run(run_episode(TASK, env, llm, AgentConfig(wire="tools", regime="zero_shot"),
                                   scorer=exact_match_scorer))
    assert traj.prediction == "Sony" and traj.finish_reason == "answered"
    assert [(s.type, s.text, s.action_name, s.action_arg) for s in traj.steps] == [
        ("thought", "I should search Walkman.", None, None),
        ("action", "search[Walkman]", "search", "Walkman"),
        ("observation", env.pages["Walkman"], None, None),
        ("thought", "Sony makes it.", None, None),
        ("answer", "finish[Sony]", "finish", "Sony"),
    ]
    second = llm.requests[1]
    assert second["tools"] == tools_for(SPECS) and second["stop"] is None
    assert second["messages"][1:] == [
        {"role": "user", "content": "Question: Which company makes the Walkman?"},
        {"role": "assistant", "content": "I should search Walkman.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "search", "arguments": '{"entity": "Walkman"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": env.pages["Walkman"]},
    ]
    assert second["messages"][0]["role"] == "system" and "search[entity]" in second["messages"][0]["content"]


def test_a_turn_without_a_call_gets_a_hint_as_a_user_turn():
    llm = ToolCallingLLM([
        ("I think it is Sony.", None),
        ("", [call("finish", answer="Sony")]),
    ])
    traj = asyncio.run(run_episode(TASK, DescribedFakeEnvironment(), llm,
                                   AgentConfig(wire="tools", regime="zero_shot"), scorer=exact_match_scorer))
    assert traj.info["parse_errors"] == 1 and traj.prediction == "Sony"
    hint = "Invalid action: no tool was called. Call exactly one tool per step, one of: search, lookup, finish."
    assert llm.requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": "I think it is Sony."},
        {"role": "user", "content": hint},
    ]


def test_reading_a_call_whose_argument_is_named_otherwise_and_a_bad_json():
    assert read_tool_call("t", [call("search", query="Paris")], SPECS, "react", "finish").action.argument == "Paris"
    bad = {"type": "function", "function": {"name": "search", "arguments": "{not json"}}
    parsed = read_tool_call("t", [bad], SPECS, "react", "finish")
    assert parsed.action is None and parsed.error == "Invalid action: the arguments of search are not a JSON object."
    assert read_tool_call("t", [call("finish", answer="x")], SPECS, "reflact", "finish").action_text == \
        "FINAL ANSWER: x"
    assert read_tool_call("ignored", [call("search", entity="a")], SPECS, "act", "finish").thought == ""


def test_an_unknown_tool_is_an_unusable_action():
    llm = ToolCallingLLM([("", [call("browse", url="x")]), ("", [call("finish", answer="Sony")])])
    traj = asyncio.run(run_episode(TASK, DescribedFakeEnvironment(), llm,
                                   AgentConfig(wire="tools", method="act", regime="zero_shot"),
                                   scorer=exact_match_scorer))
    assert traj.info["parse_errors"] == 1
    assert traj.steps[1].text.startswith("Invalid action: browse is not a tool here.")


def test_render_marks_turns_with_an_unreadable_action_untrained():
    ctx = PromptContext(method="react", env="wiki", instruction="Do it.", examples="", question="Question: q")
    from actune.records.trajectory import Step
    steps = [Step("thought", "hmm", 1), Step("action", "", 1), Step("observation", "hint", 1, meta={}),
             Step("thought", "ok", 2), Step("answer", "finish[a]", 2, action_name="finish", action_arg="a")]
    msgs = render_tool_messages(ctx, steps, SPECS)
    assert [(m["role"], m["train"]) for m in msgs] == [("system", False), ("user", False), ("assistant", False),
                                                        ("user", False), ("assistant", True)]
    assert msgs[-1]["tool_calls"][0]["function"] == {"name": "finish", "arguments": '{"answer": "a"}'}


def test_tools_wire_refuses_methods_that_do_not_act_in_single_calls():
    with pytest.raises(ValueError, match="wire tools runs act, react, reflact"):
        AgentConfig(wire="tools", method="cot")
