from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from actune.envs.base import Action
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.mediawiki import MediaWikiClient, MediaWikiError, extract_sentences
from actune.envs.wiki_env import AsyncWikiBackend
from actune.records.task_record import Task

from .fake_mediawiki import FakeMediaWikiServer

PAGES = {
    "Scott Derrickson": (
        "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer. "
        "He lives in Los Angeles, California.\n\n== Career ==\nDerrickson directed Sinister in 2012. "
        "He directed Doctor Strange in 2016. Another film followed. He was born in Denver. A sixth sentence."
    ),
    "Ed Wood": "Edward Davis Wood Jr. was an American filmmaker. He was born in 1924.",
    "Mercury": "Mercury may refer to: a planet, an element.",
    "Mercury (planet)": "Mercury is the smallest planet.",
    "IPhone": "The iPhone is a smartphone.",
}


@pytest.fixture()
def server():
    with FakeMediaWikiServer(PAGES, redirects={"Edward Wood": "Ed Wood"}, disambiguation={"Mercury"}) as s:
        yield s


def test_extract_sentences_drops_headings() -> None:
    assert extract_sentences("One. Two.\n\n== History ==\n=== Early ===\nThree.") == ["One.", "Two.", "Three."]


def test_env_over_the_api_like_the_paper(server: FakeMediaWikiServer, tmp_path: Path) -> None:
    env = make_env(EnvConfig(name="wiki", backend="mediawiki", mediawiki_url=server.url,
                             mediawiki_cache_dir=str(tmp_path / "cache")))
    env.reset(Task(id="t", question="q"))
    r = env.step(Action("search", "Scott Derrickson"))
    assert r.observation == ("Scott Derrickson (born July 16, 1966) is an American director, screenwriter and "
                             "producer. He lives in Los Angeles, California. Derrickson directed Sinister in 2012. "
                             "He directed Doctor Strange in 2016. Another film followed.")
    # the question "q" has no content word, so no page bears on it
    assert r.info["titles"] == ["Scott Derrickson"] and r.info["retrieval_score"] == 0.0
    sent = server.requests[-1]
    assert sent["action"] == "query" and sent["titles"] == "Scott Derrickson"
    assert sent["prop"] == "extracts|pageprops" and sent["explaintext"] == "1" and sent["formatversion"] == "2"
    # lookup reads the whole page, past the first five sentences
    assert env.step(Action("lookup", "born")).observation.startswith("(Result 1 / 2) Scott Derrickson (born")
    assert env.step(Action("lookup", "born")).observation == "(Result 2 / 2) He was born in Denver."
    # redirects are followed; the page's own title is reported
    assert env.step(Action("search", "Edward Wood")).info["titles"] == ["Ed Wood"]


@pytest.mark.parametrize("name", ["wiki", "fever"])
def test_astep_over_the_api_gives_what_step_gives(server: FakeMediaWikiServer, tmp_path: Path, name: str) -> None:
    """astep (what the agent loop awaits) asks the API with the client's async lookups, each env its own cache
    here so both really go to the server: the same results and the same requests."""
    envs = [make_env(EnvConfig(name=name, backend="mediawiki", mediawiki_url=server.url,
                               mediawiki_cache_dir=str(tmp_path / f"cache{i}"))) for i in (1, 2)]
    sync_env, async_env = envs
    assert isinstance(async_env.backend, AsyncWikiBackend)
    for env in envs:
        env.reset(Task(id="t", question="Where was Scott Derrickson born?"))
    actions = [Action("search", "Scott Derrickson"), Action("lookup", "born"), Action("search", "Edward Wood"),
               Action("search", "Mercury"), Action("search", "iPhone"), Action("search", ""),
               Action("finish", "SUPPORTS" if name == "fever" else "Denver"), Action("search", "Ed Wood")]
    expected = [sync_env.step(a) for a in actions]
    sent = list(server.requests)

    async def stepped():
        return [await async_env.astep(a) for a in actions]

    assert asyncio.run(stepped()) == expected
    assert server.requests[len(sent):] == sent
    assert expected[3].info["similar"] == ["Mercury", "Mercury (planet)"] and expected[4].info["titles"] == ["IPhone"]
    assert expected[-1].done and expected[-2].done
    for env in envs:
        env.backend.close()


def test_missing_and_disambiguation_pages_list_similar_titles(server: FakeMediaWikiServer, tmp_path: Path) -> None:
    client = MediaWikiClient(server.url, tmp_path / "cache")
    assert client.find_page("Mercury") is None
    assert client.search("Mercury", 5) == [("Mercury", 0.0), ("Mercury (planet)", 0.0)]
    assert client.find_page("Nothing Here") is None
    env = make_env(EnvConfig(name="wiki", backend="mediawiki", mediawiki_url=server.url,
                             mediawiki_cache_dir=str(tmp_path / "cache2")))
    r = env.step(Action("search", "Mercury"))
    assert r.observation == "Could not find Mercury. Similar: ['Mercury', 'Mercury (planet)']."
    assert r.info["retrieval_score"] == 0.0


def test_near_match_opens_a_page_whose_title_differs_only_in_case(server: FakeMediaWikiServer, tmp_path: Path) -> None:
    client = MediaWikiClient(server.url, tmp_path / "cache")
    # MediaWiki only upper-cases the first letter: "Scott derrickson" is missing, search finds the page
    page = client.find_page("scott derrickson")
    assert page is not None and page.title == "Scott Derrickson"
    assert client.find_page("iPhone").title == "IPhone"


def test_responses_are_cached_on_disk_and_reused(server: FakeMediaWikiServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    client = MediaWikiClient(server.url, cache)
    first = client.find_page("Ed Wood")
    n = len(server.requests)
    files = sorted(cache.rglob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["query"]["pages"][0]["title"] == "Ed Wood"
    assert not list(cache.rglob(".tmp-*"))  # written atomically: no temp files remain
    again = MediaWikiClient(server.url, cache).find_page("Ed Wood")
    assert again == first and len(server.requests) == n  # served from the cache


def test_server_errors_are_retried_then_reported(server: FakeMediaWikiServer, tmp_path: Path) -> None:
    client = MediaWikiClient(server.url, tmp_path / "cache", retries=2, backoff_s=0.0)
    server.fail_next = 2
    assert client.find_page("Ed Wood").title == "Ed Wood"  # third try succeeds
    assert len(server.requests) == 3
    server.fail_next = 3
    with pytest.raises(MediaWikiError, match="no answer after 3 tries"):
        client.search("planet", 5)
    bad = MediaWikiClient(server.url.replace("/w/api.php", "/nope"), tmp_path / "c2", retries=0)
    with pytest.raises(MediaWikiError, match="HTTP 404"):
        bad.find_page("Ed Wood")
