"""Fakes for unit-testing the agent loop's logic: a scripted model and a tiny environment.

``ScriptedLLM`` returns fixed texts in order (or raises the exceptions it is given) and records
every request, so tests can check exactly what the loop sent; asked to stream (``on_delta``), it hands over
a reply in the pieces it was scripted in (a list of strings) or word by word. ``FakeStreamingAPI`` is a
FAKE OpenAI-compatible server on an ``httpx.MockTransport`` that answers scripted texts as vLLM does, as one
JSON answer or streamed as server-sent events, and can drop a stream halfway. ``FakeEnvironment`` is a four-page
encyclopedia with the ReAct paper's search/lookup/finish actions; ``FakeWikiBackend`` serves the same
pages to the real ``WikiEnv``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import httpx

from actune.envs.alfworld_env import VERBS
from actune.envs.base import Action, Environment, StepResult
from actune.envs.corpus import WikiPage
from actune.llm import Completion, Sampling, Usage
from actune.records.task_record import Task


@dataclass
class Call:
    kind: str  # "complete" | "chat"
    prompt: str | list[dict[str, Any]]
    sampling: Sampling
    stop: list[str] | None
    extra_body: dict[str, Any] | None = None


Reply = str | list[str] | Exception | Callable[[Call], str]


class ScriptedLLM:
    """A fake LLM client: each request takes the next scripted reply (str, pieces as a list of str, Exception
    or callable). Streamed (``on_delta``): the pieces of a list in turn, a str word by word."""

    def __init__(self, replies: list[Reply]):
        self.replies = list(replies)
        self.calls: list[Call] = []
        self.streamed: list[bool] = []

    def _stream(self, call: Call, on_delta: Callable[[str], None] | None) -> Completion:
        self.streamed.append(on_delta is not None)
        r = self.replies[0] if self.replies else None
        pieces = r if isinstance(r, list) else None
        if isinstance(r, list):
            self.replies[0] = "".join(r)
        c = self._next(call)
        if on_delta is not None:
            for piece in pieces or re.findall(r"\s*\S+|\s+", c.text):
                on_delta(piece)
        return c

    def _next(self, call: Call) -> Completion:
        self.calls.append(call)
        # vLLM's OpenAI server rejects more than 4 stop strings (HTTP 400): so does this fake
        assert call.stop is None or len(call.stop) <= 4, f"too many stop strings: {call.stop}"
        if not self.replies:
            raise AssertionError(f"ScriptedLLM ran out of replies at call {len(self.calls)}")
        r = self.replies.pop(0)
        if isinstance(r, Exception):
            raise r
        text = r(call) if callable(r) else r
        prompt_len = len(call.prompt) if isinstance(call.prompt, str) else sum(len(m["content"]) for m in call.prompt)
        return Completion(text=text, finish_reason="stop",
                          usage=Usage(prompt_tokens=prompt_len // 4, completion_tokens=max(1, len(text.split()))),
                          latency_s=0.001)

    async def complete(self, prompt: str, *, sampling: Sampling, stop: list[str] | None = None,
                       on_delta: Callable[[str], None] | None = None) -> Completion:
        return self._stream(Call("complete", prompt, sampling, stop), on_delta)

    async def chat(self, messages: list[dict[str, Any]], *, sampling: Sampling, stop: list[str] | None = None,
                   extra_body: dict[str, Any] | None = None,
                   on_delta: Callable[[str], None] | None = None) -> Completion:
        return self._stream(Call("chat", [dict(m) for m in messages], sampling, stop, extra_body), on_delta)


@dataclass
class Dropped:
    """A scripted answer whose stream breaks off (the connection is lost) after ``after`` pieces."""

    text: str
    after: int


class FakeStreamingAPI:
    """A FAKE OpenAI-compatible server (``httpx.MockTransport``; pass ``transport=fake.transport`` to LLMClient).

    Each request takes the next scripted answer: a str (its text), :class:`Dropped`, or ``(status, message)``
    for an error. A plain request gets vLLM's JSON; ``stream: true`` gets server-sent events as vLLM sends
    them: a first chunk (chat: the assistant role), the text in pieces of ``piece`` words, a chunk with the
    finish reason, with ``stream_options.include_usage`` a chunk with no choices and the usage, then
    ``[DONE]``. Usage: prompt tokens = characters / 4, completion tokens = words, 2 of the prompt cached."""

    def __init__(self, answers: list[str | Dropped | tuple[int, str]], piece: int = 1, finish: str = "stop"):
        self.answers = list(answers)
        self.piece = piece
        self.finish = finish
        self.requests: list[tuple[str, dict]] = []
        self.transport = httpx.MockTransport(self._handle)

    def pieces(self, text: str) -> list[str]:
        words = re.findall(r"\s*\S+|\s+", text)
        return ["".join(words[i:i + self.piece]) for i in range(0, len(words), self.piece)]

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        path = request.url.path.rsplit("/v1", 1)[-1]
        self.requests.append((path, body))
        answer = self.answers.pop(0)
        if isinstance(answer, tuple):
            status, message = answer
            return httpx.Response(status, json={"error": {"message": message, "code": status}})
        chat = path == "/chat/completions"
        text = answer.text if isinstance(answer, Dropped) else answer
        prompt = body["messages"] if chat else body["prompt"]
        prompt_chars = len(prompt) if isinstance(prompt, str) else sum(len(m["content"]) for m in prompt)
        usage = {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text.split()),
                 "total_tokens": prompt_chars // 4 + len(text.split()), "prompt_tokens_details": {"cached_tokens": 2}}
        head = {"id": "cmpl-fake", "object": "chat.completion" if chat else "text_completion", "created": 1,
                "model": body["model"]}
        if not body.get("stream"):
            choice: dict[str, Any] = {"index": 0, "finish_reason": self.finish, "logprobs": None}
            choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
            return httpx.Response(200, json={**head, "choices": [choice], "usage": usage})
        pieces = self.pieces(text)
        drop = answer.after if isinstance(answer, Dropped) else None

        def chunk(content: str | None, finish: str | None = None) -> bytes:
            if chat:
                part = {"index": 0, "delta": {} if content is None else {"content": content}, "finish_reason": finish}
            else:
                part = {"index": 0, "text": content or "", "finish_reason": finish}
            return b"data: " + json.dumps({**head, "choices": [part]}).encode() + b"\n\n"

        async def events() -> AsyncIterator[bytes]:
            if chat:
                yield b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {
                    "role": "assistant", "content": ""}, "finish_reason": None}]}).encode() + b"\n\n"
            for n, p in enumerate(pieces):
                if n == drop:
                    raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
                yield chunk(p)
            if drop is not None:
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
            yield chunk(None if chat else "", self.finish)
            if (body.get("stream_options") or {}).get("include_usage"):
                yield b"data: " + json.dumps({**head, "choices": [], "usage": usage}).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=events())


PAGES = {
    "Walkman": "Walkman is a brand of portable audio players made by Sony.",
    "Sony": "Sony is a Japanese company. It was founded in 1946.",
    "Danube": "The Danube is about 2,850 km long.",
    "Rhine": "The Rhine is about 1,230 km long.",
}


@dataclass
class FakeEnvironment(Environment):
    """A tiny search/lookup/finish encyclopedia implementing the Environment protocol."""

    pages: dict[str, str] = field(default_factory=lambda: dict(PAGES))
    retrieval_scores: dict[str, float] = field(default_factory=dict)
    name: str = "wiki"
    action_names: tuple[str, ...] = ("search", "lookup", "finish")
    finish_action: str | None = "finish"
    actions: list[Action] = field(default_factory=list)
    resets: list[tuple[str, int | None]] = field(default_factory=list)

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.resets.append((task.id, seed))
        self.current: str | None = None
        return ""

    def step(self, action: Action) -> StepResult:
        self.actions.append(action)
        if action.name == "search":
            if action.argument in self.pages:
                self.current = action.argument
                info: dict[str, Any] = {"titles": [action.argument]}
                if action.argument in self.retrieval_scores:
                    info["retrieval_score"] = self.retrieval_scores[action.argument]
                return StepResult(self.pages[action.argument], info=info)
            return StepResult(f"Could not find [{action.argument}]. Similar: {sorted(self.pages)[:2]}.")
        if action.name == "lookup":
            return StepResult("No more results.")
        if action.name == "finish":
            return StepResult("Episode finished.", done=True, info={"answer": action.argument})
        return StepResult(f"Invalid action: {action}")

    def describe_actions(self) -> str:
        return ("(1) search[entity], which returns the first paragraph of the entity's page.\n"
                "(2) lookup[keyword], which returns the next sentence containing the keyword.\n"
                "(3) finish[answer], which returns the answer and finishes the task.")


class FakeWikiBackend:
    """The same four pages as a backend of the real ``WikiEnv`` (one sentence each), for tests of what the
    env computes (its goal confidence) inside the loop. A miss lists the titles with score 0.5."""

    def find_page(self, entity: str) -> WikiPage | None:
        return WikiPage(entity, [PAGES[entity]]) if entity in PAGES else None

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        return [(t, 0.5) for t in sorted(PAGES)[:k]]


def exact_match_scorer(task: Task, prediction: str | None, info: dict) -> tuple[bool, dict[str, float]]:
    """A stand-in for actune.tasks.metrics.score_prediction with the same signature."""
    ok = prediction is not None and prediction.strip().lower() == task.answer.strip().lower()
    return ok, {"em": float(ok)}


HOUSEHOLD_ROOM = ("You are in the middle of a room. Looking quickly around you, you see a cabinet 1, and a toilet 1.\n"
                  "Your task is to: put some spraybottle on toilet.")
_HOUSEHOLD_ANSWERS = {"go": "On the cabinet 1, you see a spraybottle 2.",
                      "take": "You pick up the spraybottle 2 from the cabinet 1.",
                      "put": "You put the spraybottle 2 in/on the toilet 1."}


def household_step(command: str) -> tuple[str, bool]:
    """What :class:`FakeHousehold` answers a command (by its verb) and whether the game is won (a put)."""
    verb = command.split(" ", 1)[0]
    return _HOUSEHOLD_ANSWERS.get(verb, "Nothing happens."), verb == "put"


@dataclass
class FakeHousehold(Environment):
    """A FAKE ALFWorld game without TextWorld: free-text commands, a fixed first observation, think answered OK.,
    every other command answered by :func:`household_step`."""

    name: str = "alfworld"
    action_names: tuple[str, ...] = VERBS
    finish_action: str | None = None
    commands: list[str] = field(default_factory=list)

    def reset(self, task: Task, seed: int | None = None) -> str:
        return HOUSEHOLD_ROOM

    def step(self, action: Action) -> StepResult:
        self.commands.append(str(action))
        if action.name == "think":
            return StepResult("OK.")
        obs, won = household_step(f"{action.name} {action.argument}")
        return StepResult(obs, done=won, info={"won": won})

    def describe_actions(self) -> str:
        return "go to {recep}, take {obj} from {recep}, put {obj} in/on {recep}.\nthink: {reasoning} writes a thought."
