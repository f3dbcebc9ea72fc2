"""Live Wikipedia (any MediaWiki ``api.php``), like the ReAct paper's environment, with an on-disk cache.

A page is its TextExtracts plain text (missing and disambiguation pages count as "not found", as in the paper);
similar titles come from MediaWiki's search, and a same-titled result stands in for Wikipedia's "Go" near-match.
Every response is cached on disk, so reruns and evaluations repeat exactly and need no network.
``find_page``/``search`` block the calling thread; ``afind_page``/``asearch`` do the same work from an event
loop without stalling it.

The rules in full: docs/modules.md, actune.envs.mediawiki.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import httpx

from actune.config import actune_home
from actune.envs.corpus import WikiPage
from actune.envs.titles import normalize_title
from actune.records.atomic_write import atomic_write_text
from actune.text import split_sentences

__all__ = ["MediaWikiError", "MediaWikiClient", "default_cache_dir"]

_HEADING = re.compile(r"^=+[^=].*=+$")


class MediaWikiError(RuntimeError):
    """The API could not be reached or answered with an error (after retries)."""


def default_cache_dir(url: str) -> Path:
    host = urlparse(url).netloc.replace(":", "_") or "mediawiki"
    return actune_home() / "mediawiki-cache" / host


def extract_sentences(extract: str) -> list[str]:
    """Plain-text extract -> sentences, dropping ``== Section ==`` headings."""
    lines = [ln for ln in extract.split("\n") if ln.strip() and not _HEADING.match(ln.strip())]
    return split_sentences("\n".join(lines))


T = TypeVar("T")


class _Blocking:
    """How the shared coroutines wait when a synchronous method runs them: by blocking the thread.

    The client's logic (cache, request, retries with backoff, near-match) is written once, as coroutines
    that wait only through this object. Run with :class:`_OffLoop` they suspend; run with this one they
    never do, so :func:`_run_blocking` completes them without an event loop."""

    async def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)


class _OffLoop:
    """How the shared coroutines wait on an event loop: blocking calls go to the client's threads."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)


_BLOCKING = _Blocking()
_Waits = _Blocking | _OffLoop


def _run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (it waits through ``_BLOCKING``)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a blocking MediaWiki call suspended; it must wait through _BLOCKING")


class MediaWikiClient:
    """A wiki backend (``find_page`` / ``search``, and ``afind_page`` / ``asearch`` for an event loop) over
    a MediaWiki API, cached on disk."""

    def __init__(self, url: str, cache_dir: str | Path | None = None, timeout_s: float = 20.0,
                 user_agent: str = "actune/0.1", retries: int = 3, backoff_s: float = 0.5,
                 parallel_requests: int = 4) -> None:
        self.url = url
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(url)
        self.retries = retries
        self.backoff_s = backoff_s
        self._http = httpx.Client(timeout=timeout_s, headers={"User-Agent": user_agent})
        # A pool of its own: a loop's default executor is shared and small (cores + 4), and slow pages
        # must not hold up other work's threads
        self._pool = ThreadPoolExecutor(max_workers=parallel_requests, thread_name_prefix="mediawiki")
        self._off_loop = _OffLoop(self._pool)
        self.requests_sent = 0

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._http.close()

    # --- cache + HTTP ---
    def _cache_path(self, params: dict[str, Any]) -> Path:
        key = hashlib.sha256(json.dumps([self.url, params], sort_keys=True).encode()).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    async def _get(self, params: dict[str, Any], waits: _Waits) -> dict[str, Any]:
        params = {"format": "json", "formatversion": "2", **params}
        path = self._cache_path(params)
        if path.exists():  # a small local file: read in place, never queued behind slow requests
            return json.loads(path.read_text(encoding="utf-8"))
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await waits.sleep(self.backoff_s * 2 ** (attempt - 1))
            self.requests_sent += 1
            data, last = await waits.call(self._request, params, path)
            if data is not None:
                return data
        raise MediaWikiError(f"{self.url}: no answer after {self.retries + 1} tries ({last})")

    def _request(self, params: dict[str, Any], path: Path) -> tuple[dict[str, Any] | None, str]:
        """One blocking request: (answer, "") once cached at ``path``; (None, why) when worth a retry."""
        try:
            r = self._http.get(self.url, params=params)
        except httpx.TransportError as e:
            return None, f"{type(e).__name__}: {e}"
        if r.status_code == 429 or r.status_code >= 500:
            return None, f"HTTP {r.status_code}"
        if r.status_code != 200:
            raise MediaWikiError(f"{self.url}: HTTP {r.status_code} for {params}")
        try:
            data = r.json()
        except ValueError:
            raise MediaWikiError(f"{self.url}: response is not JSON for {params}") from None
        if "error" in data:
            err = data["error"]
            raise MediaWikiError(f"{self.url}: API error {err.get('code')}: {err.get('info')}")
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data, ensure_ascii=False))
        return data, ""

    # --- backend API ---
    async def _page(self, title: str, waits: _Waits) -> WikiPage | None:
        data = await self._get({"action": "query", "prop": "extracts|pageprops", "explaintext": "1",
                                "exsectionformat": "wiki", "ppprop": "disambiguation", "redirects": "1",
                                "titles": title}, waits)
        pages = data.get("query", {}).get("pages", [])
        if not pages:
            return None
        page = pages[0]
        if page.get("missing") or page.get("invalid") or "disambiguation" in page.get("pageprops", {}):
            return None
        sentences = extract_sentences(page.get("extract") or "")
        if not sentences:
            return None
        return WikiPage(page["title"], sentences)

    async def _search_titles(self, query: str, k: int, waits: _Waits) -> list[str]:
        data = await self._get({"action": "query", "list": "search", "srsearch": query,
                                "srlimit": str(k), "srprop": ""}, waits)
        return [hit["title"] for hit in data.get("query", {}).get("search", [])]

    async def _find_page(self, entity: str, waits: _Waits) -> WikiPage | None:
        entity = " ".join(entity.split())
        if not normalize_title(entity):
            return None
        page = await self._page(entity, waits)
        if page is not None:
            return page
        norm = normalize_title(entity)
        for title in await self._search_titles(entity, 5, waits):
            if normalize_title(title) == norm and title != entity:
                return await self._page(title, waits)
        return None

    async def _search(self, query: str, k: int, waits: _Waits) -> list[tuple[str, float]]:
        return [(t, 0.0) for t in (await self._search_titles(query, k, waits))[:k]]

    def find_page(self, entity: str) -> WikiPage | None:
        return _run_blocking(self._find_page(entity, _BLOCKING))

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        return _run_blocking(self._search(query, k, _BLOCKING))

    async def afind_page(self, entity: str) -> WikiPage | None:
        """:meth:`find_page` without blocking the event loop."""
        return await self._find_page(entity, self._off_loop)

    async def asearch(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        """:meth:`search` without blocking the event loop."""
        return await self._search(query, k, self._off_loop)
