"""Fakes for unit-testing the agent loop's logic: a scripted model and a tiny environment.

``ScriptedLLM`` returns fixed texts in order (or raises the exceptions it is given) and records
every request, so tests can check exactly what the loop sent. ``FakeEnvironment`` is a four-page
encyclopedia with the ReAct paper's search/lookup/finish actions; ``FakeWikiBackend`` serves the same
pages to the real ``WikiEnv``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from actune.envs.base import Action, StepResult
from actune.envs.corpus import WikiPage
from actune.llm import Completion, Sampling, Usage
from actune.task import Task


@dataclass
class Call:
    kind: str  # "complete" | "chat"
    prompt: str | list[dict[str, Any]]
    sampling: Sampling
    stop: list[str] | None
    extra_body: dict[str, Any] | None = None


class ScriptedLLM:
    """A fake LLM client: each request takes the next scripted reply (str, Exception or callable)."""

    def __init__(self, replies: list[str | Exception | Callable[[Call], str]]):
        self.replies = list(replies)
        self.calls: list[Call] = []

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

    async def complete(self, prompt: str, *, sampling: Sampling, stop: list[str] | None = None) -> Completion:
        return self._next(Call("complete", prompt, sampling, stop))

    async def chat(self, messages: list[dict[str, Any]], *, sampling: Sampling, stop: list[str] | None = None,
                   extra_body: dict[str, Any] | None = None) -> Completion:
        return self._next(Call("chat", [dict(m) for m in messages], sampling, stop, extra_body))


PAGES = {
    "Walkman": "Walkman is a brand of portable audio players made by Sony.",
    "Sony": "Sony is a Japanese company. It was founded in 1946.",
    "Danube": "The Danube is about 2,850 km long.",
    "Rhine": "The Rhine is about 1,230 km long.",
}


@dataclass
class FakeEnvironment:
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
