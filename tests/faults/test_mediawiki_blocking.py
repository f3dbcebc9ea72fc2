"""A slow MediaWiki API must not stall the event loop (issue #12).

The client did blocking HTTP with ``time.sleep`` between retries: called from the agent loop, one slow
page held up every episode in flight. ``afind_page`` / ``asearch`` run each request in a worker thread
and wait for retries with ``asyncio.sleep``; the on-disk cache is the same for both forms.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from envs.fake_mediawiki import FakeMediaWikiServer  # tests/ is on sys.path via conftest

from actune.envs.mediawiki import MediaWikiClient, MediaWikiError

PAGES = {"Ed Wood": "Edward Davis Wood Jr. was an American filmmaker. He was born in 1924.",
         "IPhone": "The iPhone is a smartphone.", "Mercury (planet)": "Mercury is the smallest planet."}
DELAY_S = 1.0


@pytest.fixture()
def slow_server():
    with FakeMediaWikiServer(PAGES) as server:
        answer = server.answer

        def slow_answer(params):
            time.sleep(DELAY_S)  # the fake serves each request in its own thread
            return answer(params)

        server.answer = slow_answer
        yield server


async def _with_ticker(coro):
    """(result, longest pause of the event loop) while ``coro`` runs: a blocked loop cannot tick."""
    gaps: list[float] = []

    async def tick():
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.02)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        result = await coro
    finally:
        ticker.cancel()
    return result, max(gaps, default=0.0)


def test_two_slow_requests_overlap_and_the_loop_keeps_running(slow_server, tmp_path: Path) -> None:
    client = MediaWikiClient(slow_server.url, tmp_path / "cache")

    async def both():
        return await asyncio.gather(client.afind_page("Ed Wood"), client.afind_page("IPhone"))

    t0 = time.perf_counter()
    (ed, iphone), longest_pause = asyncio.run(_with_ticker(both()))
    elapsed = time.perf_counter() - t0
    client.close()
    assert (ed.title, iphone.title) == ("Ed Wood", "IPhone")
    assert elapsed < 1.8 * DELAY_S, f"two {DELAY_S} s requests took {elapsed:.2f} s: they ran one after the other"
    assert longest_pause < 0.5 * DELAY_S, f"the event loop was blocked for {longest_pause:.2f} s"


def test_retries_wait_without_blocking_the_loop(tmp_path: Path) -> None:
    with FakeMediaWikiServer(PAGES) as server:
        client = MediaWikiClient(server.url, tmp_path / "cache", retries=2, backoff_s=0.4)
        server.fail_next = 2
        t0 = time.perf_counter()
        hits, longest_pause = asyncio.run(_with_ticker(client.asearch("planet", 5)))
        assert hits == [("Mercury (planet)", 0.0)]
        assert time.perf_counter() - t0 >= 0.4 + 0.8  # it did back off...
        assert longest_pause < 0.3  # ...while the loop ran on
        assert len(server.requests) == 3 and client.requests_sent == 3
        server.fail_next = 3
        with pytest.raises(MediaWikiError, match="no answer after 3 tries"):
            asyncio.run(client.asearch("smartphone", 5))
        client.close()


def test_both_forms_share_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with FakeMediaWikiServer(PAGES) as server:
        writer, reader = MediaWikiClient(server.url, cache), MediaWikiClient(server.url, cache)
        first = asyncio.run(writer.afind_page("Ed Wood"))
        n = len(server.requests)
        files = sorted(cache.rglob("*.json"))
        assert len(files) == 1 and json.loads(files[0].read_text())["query"]["pages"][0]["title"] == "Ed Wood"
        assert not list(cache.rglob("*.tmp"))  # written atomically
        assert reader.find_page("Ed Wood") == first  # the blocking form, from the cache
        assert asyncio.run(reader.afind_page("Ed Wood")) == first
        assert len(server.requests) == n and reader.requests_sent == 0
        # a near match (search, then the page) works the same in both forms
        assert asyncio.run(reader.afind_page("iPhone")).title == reader.find_page("iPhone").title == "IPhone"
        writer.close()
        reader.close()
