"""The ReAct Wikipedia environment (§3.1): ``search[entity]``, ``lookup[keyword]``, ``finish[answer]``.

- ``search[entity]``: when a page's title matches (see :mod:`actune.envs.titles`), the first five
  sentences of the page; otherwise ``Could not find X. Similar: ['A', 'B', ...].`` with the five
  best titles by BM25 (local corpus) or the wiki's own search (MediaWiki).
- ``lookup[keyword]``: the next sentence of the current page containing the keyword (case-insensitive),
  prefixed ``(Result i / n)``; ``No more results.`` when they run out. A new keyword restarts.
- ``finish[answer]``: ends the episode, ``info["answer"]`` holds the answer.

``StepResult.info``: ``titles`` (pages read by this step), ``retrieval_score`` (0..1, for LLARS' adaptive
early exit: on a page opened or a sentence looked up, how far the pages read so far bear on the question,
see :mod:`actune.envs.goal_confidence`; 0.0 when a search opened no page: a list of similar titles answers
nothing), ``similar`` (the titles listed), ``answer`` (finish).
The text follows the paper's ``wikienv.py`` so prompts written for it read the same.

``astep`` (what the agent loop awaits) asks a network backend (MediaWiki) with its async lookups, so a slow
page holds up only the episode that asked for it; a local corpus answers in place. Both forms fetch what a
search needs and then run the same step (``_apply``).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.envs.corpus import LocalCorpus, WikiPage, index_dir_for
from actune.envs.goal_confidence import GoalEvidence
from actune.envs.mediawiki import MediaWikiClient
from actune.envs.observation import page_result
from actune.records.task_record import Task

LOOKUP_PREFIX = re.compile(r"^\(Result \d+ / \d+\) ")
"""What ``lookup`` puts before the sentence it shows; readers of an observation strip it with ``.sub("", obs)``."""

__all__ = ["LOOKUP_PREFIX", "AsyncWikiBackend", "WikiBackend", "WikiEnv", "from_config", "make_backend"]


class WikiBackend(Protocol):
    def find_page(self, entity: str) -> WikiPage | None: ...

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]: ...


@runtime_checkable
class AsyncWikiBackend(WikiBackend, Protocol):
    """A backend that waits on the network (MediaWiki): the same lookups, awaitable without blocking the loop."""

    async def afind_page(self, entity: str) -> WikiPage | None: ...

    async def asearch(self, query: str, k: int = 5) -> list[tuple[str, float]]: ...


class WikiEnv(Environment):
    """Search/lookup/finish over a wiki backend. Deterministic: no randomness anywhere."""

    name = "wiki"
    action_names = ("search", "lookup", "finish")
    finish_action = "finish"
    _result = page_result

    def __init__(self, backend: WikiBackend, page_sentences: int = 5, similar_titles: int = 5,
                 max_observation_chars: int | None = 2000) -> None:
        self.backend = backend
        self.page_sentences = page_sentences
        self.similar_titles = similar_titles
        self.max_observation_chars = max_observation_chars
        self.reset(Task(id="", question=""))

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.task = task
        self.page: WikiPage | None = None
        self.lookup_keyword: str | None = None
        self.lookup_hits: list[str] = []
        self.lookup_next = 0
        self.answer: str | None = None
        self.evidence = GoalEvidence(task.question)
        return ""

    def describe_actions(self) -> str:
        return (
            "search[entity]: searches the exact entity on Wikipedia and returns the first paragraph "
            "if it exists; if not, returns some similar entities to search.\n"
            "lookup[keyword]: returns the next sentence containing keyword in the current passage.\n"
            "finish[answer]: returns the answer and finishes the task."
        )

    def step(self, action: Action) -> StepResult:
        entity = self._entity_to_find(action)
        if entity is None:
            return self._apply(action)
        page = self.backend.find_page(entity)
        similar = None if page is not None else self.backend.search(entity, self.similar_titles)
        return self._apply(action, page, similar)

    async def astep(self, action: Action) -> StepResult:
        entity = self._entity_to_find(action)
        if entity is None or not isinstance(self.backend, AsyncWikiBackend):
            return self.step(action)
        page = await self.backend.afind_page(entity)
        similar = None if page is not None else await self.backend.asearch(entity, self.similar_titles)
        return self._apply(action, page, similar)

    @staticmethod
    def _parts(action: Action) -> tuple[str, str]:
        return action.name.strip().lower(), action.argument.strip()

    def _entity_to_find(self, action: Action) -> str | None:
        """The entity this step looks up in the backend; None when it reads none (lookup, finish, an empty
        search, a finished episode). Must agree with :meth:`_apply`, which then gets what was found."""
        name, arg = self._parts(action)
        return arg if name == "search" and arg and self.answer is None else None

    def _apply(self, action: Action, page: WikiPage | None = None,
               similar: list[tuple[str, float]] | None = None) -> StepResult:
        """The step itself, given what the backend found for a search: the ``page`` (None: missing) and,
        when there was none, the ``similar`` titles."""
        name, arg = self._parts(action)
        if self.answer is not None:
            return self._result("The episode has already finished.", done=True, answer=self.answer)
        if name == "search":
            return self._search(arg, page, similar or [])
        if name == "lookup":
            return self._lookup(arg)
        if name == self.finish_action:
            return self._finish(arg)
        return self._result(
            f"Invalid action: {action}. Valid actions are search[entity], lookup[keyword] and finish[answer]."
        )

    def _search(self, entity: str, page: WikiPage | None, similar: list[tuple[str, float]]) -> StepResult:
        if not entity:
            return self._result("search needs an entity, e.g. search[Paris].", retrieval_score=0.0)
        if page is not None:
            self.page = page
            self.lookup_keyword, self.lookup_hits, self.lookup_next = None, [], 0
            obs = " ".join(page.sentences[: self.page_sentences]) or f"The page {page.title} has no text."
            return self._result(obs, titles=[page.title], retrieval_score=self.evidence.score(obs, page.title))
        titles = [t for t, _ in similar]
        return self._result(f"Could not find {entity}. Similar: {titles}.", retrieval_score=0.0, similar=titles)

    def _lookup(self, keyword: str) -> StepResult:
        if not keyword:
            return self._result("lookup needs a keyword, e.g. lookup[born].")
        if self.page is None:
            return self._result("No page is open: search[entity] first, then lookup[keyword].")
        if keyword != self.lookup_keyword:
            self.lookup_keyword = keyword
            needle = keyword.lower()
            self.lookup_hits = [s for s in self.page.sentences if needle in s.lower()]
            self.lookup_next = 0
        if self.lookup_next >= len(self.lookup_hits):
            return self._result("No more results.", titles=[self.page.title])
        i = self.lookup_next
        self.lookup_next += 1
        obs = f"(Result {i + 1} / {len(self.lookup_hits)}) {self.lookup_hits[i]}"  # LOOKUP_PREFIX reads it back
        return self._result(obs, titles=[self.page.title],
                            retrieval_score=self.evidence.score(self.lookup_hits[i], self.page.title))

    def _finish(self, answer: str) -> StepResult:
        if not answer:
            return self._result("finish needs an answer, e.g. finish[Paris].")
        self.answer = answer
        return self._result("Episode finished.", done=True, answer=answer)


_backends: dict[tuple, WikiBackend] = {}
_backends_lock = threading.Lock()


def make_backend(cfg: EnvConfig) -> WikiBackend:
    """The local corpus or the MediaWiki client ``cfg`` asks for, shared by every env in the process
    (an opened corpus holds its vocabulary in memory; episodes only differ in their own state)."""
    if cfg.backend == "local" and cfg.corpus and Path(cfg.corpus).is_file():
        # the index folder name changes when the corpus file does: an edited corpus is reopened
        key: tuple = ("local", str(index_dir_for(cfg.corpus, cfg.index_dir)))
    else:
        key = (cfg.backend, cfg.corpus, cfg.index_dir, cfg.mediawiki_url, cfg.mediawiki_cache_dir)
    with _backends_lock:
        if key not in _backends:  # rebuild_index applies once per process
            _backends[key] = _open_backend(cfg)
        return _backends[key]


def _open_backend(cfg: EnvConfig) -> WikiBackend:
    if cfg.backend == "mediawiki":
        return MediaWikiClient(cfg.mediawiki_url, cfg.mediawiki_cache_dir, cfg.mediawiki_timeout_s,
                               cfg.user_agent)
    if not cfg.corpus:
        raise ValueError("backend 'local' needs a corpus, a JSONL file of pages (env.corpus; actune run: --corpus)")

    return LocalCorpus.open(cfg.corpus, cfg.index_dir, rebuild=cfg.rebuild_index)


def from_config(cfg: EnvConfig) -> WikiEnv:
    return WikiEnv(make_backend(cfg), cfg.page_sentences, cfg.similar_titles, cfg.max_observation_chars)
