"""A slow MediaWiki API must not stall the event loop (issue #12).

The client did blocking HTTP with ``time.sleep`` between retries: called from the agent loop, one slow
page held up every episode in flight. ``afind_page`` / ``asearch`` run each request in a worker thread
and wait for retries with ``asyncio.sleep``; the on-disk cache is the same for both forms. The wiki and
FEVER envs' ``astep``, which the agent loop awaits, use them: with one page slow, the other episodes finish
while it is still on its way.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from agent.fakes import ScriptedLLM, exact_match_scorer
from envs.fake_mediawiki import FakeMediaWikiServer  # tests/ is on sys.path via conftest

from actune.agent import AgentConfig, run_episode
from actune.envs.base import Action
from actune.envs.fever_env import FeverEnv
from actune.envs.mediawiki import MediaWikiClient, MediaWikiError
from actune.envs.wiki_env import WikiEnv
from actune.records.task_record import Task

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


SLOW_PAGE, SLOW_S = "Ed Wood", 2.0


@pytest.fixture()
def one_slow_page():
    """The fake API, taking ``SLOW_S`` to answer for ``SLOW_PAGE`` only; ``slow_served_at`` is when it did."""
    with FakeMediaWikiServer(PAGES) as server:
        answer = server.answer

        def slow_answer(params):
            if params.get("titles") == SLOW_PAGE:
                time.sleep(SLOW_S)
                server.slow_served_at = time.perf_counter()
            return answer(params)

        server.answer = slow_answer
        yield server


async def _finished_at(coro):
    """(result, ``time.perf_counter()`` when ``coro`` finished)."""
    result = await coro
    return result, time.perf_counter()


def _assert_fast_ones_did_not_wait(server: FakeMediaWikiServer, t0: float, slow_end: float,
                                   fast_ends: list[float]) -> None:
    fast_s = max(fast_ends) - t0
    assert max(fast_ends) < server.slow_served_at, "the fast ones finished only after the slow page was served"
    assert fast_s < 0.5 * SLOW_S, f"the fast ones took {fast_s:.2f} s: they waited for the slow page"
    assert slow_end - t0 >= SLOW_S


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


def test_env_steps_on_other_pages_finish_while_one_page_is_slow(one_slow_page, tmp_path: Path) -> None:
    client = MediaWikiClient(one_slow_page.url, tmp_path / "cache")
    envs = [WikiEnv(client), WikiEnv(client), FeverEnv(client), WikiEnv(client)]
    for env in envs:
        env.reset(Task(id="t", question="Who was Ed Wood?"))
    actions = [Action("search", SLOW_PAGE), Action("search", "IPhone"), Action("search", "Mercury (planet)"),
               Action("search", "smallest planet")]  # no such page: the wiki's search lists similar titles

    async def all_at_once():
        return await asyncio.gather(*(_finished_at(env.astep(a)) for env, a in zip(envs, actions)))

    t0 = time.perf_counter()
    ((slow, slow_end), *fast), longest_pause = asyncio.run(_with_ticker(all_at_once()))
    client.close()
    assert slow.info["titles"] == ["Ed Wood"] and slow.observation.startswith("Edward Davis Wood Jr.")
    assert [r.info.get("titles") or r.info["similar"] for r, _ in fast] == [
        ["IPhone"], ["Mercury (planet)"], ["Mercury (planet)"]]
    _assert_fast_ones_did_not_wait(one_slow_page, t0, slow_end, [end for _, end in fast])
    assert longest_pause < 0.5 * SLOW_S, f"the event loop was blocked for {longest_pause:.2f} s"


def test_episodes_on_one_loop_are_not_held_up_by_a_slow_page(one_slow_page, tmp_path: Path) -> None:
    """The agent loop steps through astep: whole episodes on fast pages end before the slow page arrives."""
    client = MediaWikiClient(one_slow_page.url, tmp_path / "cache")
    titles = [SLOW_PAGE, "IPhone", "Mercury (planet)"]

    def episode(title: str):
        llm = ScriptedLLM([f" I look it up.\nAction 1: search[{title}]", " Found.\nAction 2: finish[yes]"])
        task = Task(id=title, question=f"What is {title}?", answer="yes")
        return _finished_at(run_episode(task, WikiEnv(client), llm, AgentConfig(method="react"),
                                        scorer=exact_match_scorer))

    async def all_at_once():
        return await asyncio.gather(*(episode(t) for t in titles))

    t0 = time.perf_counter()
    (slow, slow_end), *fast = asyncio.run(all_at_once())
    client.close()
    for traj, title in zip([slow] + [t for t, _ in fast], titles):
        assert traj.finish_reason == "answered" and traj.correct
        assert traj.info["env_info"]["titles"] == [title]
    assert slow.steps[2].text.startswith("Edward Davis Wood Jr.") and slow.timings.env_s >= SLOW_S
    _assert_fast_ones_did_not_wait(one_slow_page, t0, slow_end, [end for _, end in fast])
