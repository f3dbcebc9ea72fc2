"""Live Wikipedia (any MediaWiki ``api.php``), like the ReAct paper's environment, with an on-disk cache.

Two requests, both standard MediaWiki API:

- a page: ``action=query&prop=extracts|pageprops&explaintext=1&redirects=1&titles=...`` (the
  TextExtracts extension gives the plain text of the whole page, so ``lookup`` sees all of it);
  missing pages and disambiguation pages count as "not found", as in the paper (it re-searched
  "may refer to:" pages).
- similar titles: ``action=query&list=search&srsearch=...&srlimit=k``. When the exact title is
  missing but a search result has the same normalised title (case, underscores...), that page is
  opened: this stands in for Wikipedia's "Go" near-match the paper's search box relied on.

Every response is cached as JSON under ``cache_dir`` (keyed by URL and parameters, written to a temp
file and renamed), so reruns and evaluations repeat exactly and need no network.
MediaWiki's search returns no comparable score: similar titles get score 0.0.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx

from actune.atomic_write import atomic_write_text
from actune.config import actune_home
from actune.envs.corpus import WikiPage
from actune.envs.titles import normalize_title
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


class MediaWikiClient:
    """A wiki backend (``find_page`` / ``search``) over a MediaWiki API, cached on disk."""

    def __init__(self, url: str, cache_dir: str | Path | None = None, timeout_s: float = 20.0,
                 user_agent: str = "actune/0.1", retries: int = 3, backoff_s: float = 0.5) -> None:
        self.url = url
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir(url)
        self.retries = retries
        self.backoff_s = backoff_s
        self._http = httpx.Client(timeout=timeout_s, headers={"User-Agent": user_agent})
        self.requests_sent = 0

    def close(self) -> None:
        self._http.close()

    # --- cache + HTTP ---
    def _cache_path(self, params: dict[str, Any]) -> Path:
        key = hashlib.sha256(json.dumps([self.url, params], sort_keys=True).encode()).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    def _get(self, params: dict[str, Any]) -> dict[str, Any]:
        params = {"format": "json", "formatversion": "2", **params}
        path = self._cache_path(params)
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
        data = self._fetch(params)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data, ensure_ascii=False))
        return data

    def _fetch(self, params: dict[str, Any]) -> dict[str, Any]:
        last: str = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                self.requests_sent += 1
                r = self._http.get(self.url, params=params)
            except httpx.TransportError as e:
                last = f"{type(e).__name__}: {e}"
                continue
            if r.status_code == 429 or r.status_code >= 500:
                last = f"HTTP {r.status_code}"
                continue
            if r.status_code != 200:
                raise MediaWikiError(f"{self.url}: HTTP {r.status_code} for {params}")
            try:
                data = r.json()
            except ValueError:
                raise MediaWikiError(f"{self.url}: response is not JSON for {params}") from None
            if "error" in data:
                err = data["error"]
                raise MediaWikiError(f"{self.url}: API error {err.get('code')}: {err.get('info')}")
            return data
        raise MediaWikiError(f"{self.url}: no answer after {self.retries + 1} tries ({last})")

    # --- backend API ---
    def _page(self, title: str) -> WikiPage | None:
        data = self._get({"action": "query", "prop": "extracts|pageprops", "explaintext": "1",
                          "exsectionformat": "wiki", "ppprop": "disambiguation", "redirects": "1",
                          "titles": title})
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

    def _search_titles(self, query: str, k: int) -> list[str]:
        data = self._get({"action": "query", "list": "search", "srsearch": query,
                          "srlimit": str(k), "srprop": ""})
        return [hit["title"] for hit in data.get("query", {}).get("search", [])]

    def find_page(self, entity: str) -> WikiPage | None:
        entity = " ".join(entity.split())
        if not normalize_title(entity):
            return None
        page = self._page(entity)
        if page is not None:
            return page
        norm = normalize_title(entity)
        for title in self._search_titles(entity, 5):
            if normalize_title(title) == norm and title != entity:
                return self._page(title)
        return None

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        return [(t, 0.0) for t in self._search_titles(query, k)[:k]]
