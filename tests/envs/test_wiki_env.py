from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from actune.envs.base import Action, Environment
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.wiki_env import AsyncWikiBackend, WikiEnv
from actune.records.task_record import Task

DATA = Path(__file__).parents[1] / "data" / "wiki" / "hotpotqa_pages.jsonl"
SHARED = Path(__file__).parents[2] / ".." / "shared"


@pytest.fixture()
def env(tmp_path: Path) -> WikiEnv:
    e = make_env(EnvConfig(name="wiki", corpus=str(DATA), index_dir=str(tmp_path)))
    assert e.reset(Task(id="t", question="Were Scott Derrickson and Ed Wood of the same nationality?")) == ""
    return e


def test_env_satisfies_the_protocol(env: WikiEnv) -> None:
    assert isinstance(env, Environment)
    assert env.action_names == ("search", "lookup", "finish") and env.finish_action == "finish"
    assert env.describe_actions().count("\n") == 2


def test_search_hit_shows_the_first_five_sentences(env: WikiEnv) -> None:
    r = env.step(Action("search", "Scott Derrickson"))
    assert r.observation == (
        "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer. "
        "He lives in Los Angeles, California. He is best known for directing horror films such as "
        '"Sinister", "The Exorcism of Emily Rose", and "Deliver Us From Evil", as well as the 2016 Marvel '
        'Cinematic Universe installment, "Doctor Strange."'
    )
    # confidence: the question's content words the page covers (scott, derrickson of scott, derrickson, ed,
    # wood, nationality), not 1.0 for any page found
    assert not r.done and r.info == {"titles": ["Scott Derrickson"], "retrieval_score": 0.4}
    r = env.step(Action("search", "Gesellschaft mit beschränkter Haftung"))
    assert r.observation.startswith("A Gesellschaft mit") and r.observation.endswith("for non-profit companies.")
    r = env.step(Action("search", "Paris"))  # 5 of its sentences, not more
    assert r.observation.count(". ") >= 4 and "Talkback" in r.observation


def test_search_miss_lists_similar_titles_like_the_paper(env: WikiEnv) -> None:
    r = env.step(Action("search", "Ed Wood director"))
    assert r.observation.startswith("Could not find Ed Wood director. Similar: ['Ed Wood', 'Ed Wood (film)'")
    assert r.observation.endswith("'].")
    assert r.info["titles"] == [] and r.info["similar"][:2] == ["Ed Wood", "Ed Wood (film)"]
    assert r.info["retrieval_score"] == 0.0  # a list of similar titles answers nothing
    r = env.step(Action("search", "Qwxz Blorp"))
    assert r.observation == "Could not find Qwxz Blorp. Similar: []."
    assert r.info["retrieval_score"] == 0.0


def test_lookup_walks_through_matching_sentences(env: WikiEnv) -> None:
    env.step(Action("search", "Doctor Strange (2016 film)"))
    first = env.step(Action("lookup", "Film"))
    assert first.observation == ("(Result 1 / 3) Doctor Strange is a 2016 American superhero film based on the Marvel "
                                 "Comics character of the same name, produced by Marvel Studios and distributed by "
                                 "Walt Disney Studios Motion Pictures.")
    assert first.info["titles"] == ["Doctor Strange (2016 film)"]
    assert env.step(Action("lookup", "Film")).observation == (
        "(Result 2 / 3) It is the fourteenth film of the Marvel Cinematic Universe (MCU).")
    assert env.step(Action("lookup", "Film")).observation.startswith("(Result 3 / 3) The film was directed by")
    assert env.step(Action("lookup", "Film")).observation == "No more results."
    # a new keyword starts over; a new search forgets the old keyword
    assert env.step(Action("lookup", "surgeon")).observation.startswith("(Result 1 / 1) In \"Doctor Strange\"")
    env.step(Action("search", "Ed Wood (film)"))
    assert env.step(Action("lookup", "film")).observation.startswith("(Result 1 / 2) Ed Wood is a 1994")


def test_bad_arguments_are_observations_not_crashes(env: WikiEnv) -> None:
    assert env.step(Action("lookup", "born")).observation.startswith("No page is open")
    assert env.step(Action("search", "  ")).observation == "search needs an entity, e.g. search[Paris]."
    assert env.step(Action("lookup", "")).observation.startswith("lookup needs a keyword")
    assert env.step(Action("finish", "")).done is False
    r = env.step(Action("jump", "x"))
    assert r.observation.startswith("Invalid action: jump[x].") and not r.done


def test_finish_ends_the_episode_with_the_answer(env: WikiEnv) -> None:
    r = env.step(Action("finish", " yes "))
    assert r.done and r.info["answer"] == "yes" and r.observation == "Episode finished."
    again = env.step(Action("search", "Ed Wood"))
    assert again.done and again.info["answer"] == "yes"
    env.reset(Task(id="u", question="q"))
    assert not env.step(Action("search", "Ed Wood")).done


def test_reset_clears_the_page_and_runs_repeat_exactly(env: WikiEnv) -> None:
    actions = [Action("search", "Ed Wood film"), Action("search", "Ed Wood (film)"), Action("lookup", "wood"),
               Action("lookup", "wood")]
    first = [env.step(a) for a in actions]
    question = env.task.question  # the same question: retrieval_score relates the pages read to it
    env.reset(Task(id="t2", question=question))
    assert env.step(Action("lookup", "wood")).observation.startswith("No page is open")
    env.reset(Task(id="t3", question=question))
    second = [env.step(a) for a in actions]
    assert [(r.observation, r.info) for r in first] == [(r.observation, r.info) for r in second]


#: one of each outcome: page, miss with similar titles, lookups, bad arguments, finish, a step after it
EVERY_OUTCOME = [Action("search", "Ed Wood film"), Action("search", "Ed Wood (film)"), Action("lookup", "wood"),
                 Action("lookup", "wood"), Action("lookup", "zzz"), Action("search", " "), Action("jump", "x"),
                 Action("finish", "yes"), Action("search", "Paris")]


def test_astep_on_the_local_corpus_is_step(env: WikiEnv, tmp_path: Path) -> None:
    """What the agent loop awaits gives what step gives; a local corpus is read in place, not off the loop."""
    assert not isinstance(env.backend, AsyncWikiBackend)
    other = make_env(EnvConfig(name="wiki", corpus=str(DATA), index_dir=str(tmp_path)))
    other.reset(env.task)

    async def stepped():
        return [await other.astep(a) for a in EVERY_OUTCOME]

    assert asyncio.run(stepped()) == [env.step(a) for a in EVERY_OUTCOME]


def test_long_observations_are_cut_with_a_note(tmp_path: Path) -> None:
    e = make_env(EnvConfig(name="wiki", corpus=str(DATA), index_dir=str(tmp_path), max_observation_chars=60))
    obs = e.step(Action("search", "Scott Derrickson")).observation
    assert len(obs) <= 60 and obs.endswith(" [...observation cut]") and obs.startswith("Scott Derrickson (born")


def test_envs_on_one_corpus_share_one_opened_index(tmp_path: Path) -> None:
    cfg = EnvConfig(name="wiki", corpus=str(DATA), index_dir=str(tmp_path))
    a, b = make_env(cfg), make_env(cfg)
    assert a is not b and a.backend is b.backend
    a.step(Action("search", "Ed Wood (film)"))
    assert b.step(Action("lookup", "film")).observation.startswith("No page is open")


@pytest.mark.shared
@pytest.mark.skipif(not SHARED.exists(), reason="../shared is absent")
def test_the_17k_paragraph_hotpotqa_wiki_answers_a_dev_question(tmp_path: Path) -> None:
    corpus = SHARED / "data" / "hotpotqa" / "wiki_paragraphs.jsonl"
    e = make_env(EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path)))
    assert e.backend.num_pages == 17440
    r = e.step(Action("search", "Corliss Archer"))
    assert r.observation.startswith("Could not find Corliss Archer. Similar: [")
    assert "Meet Corliss Archer" in r.info["similar"]
    r = e.step(Action("search", "Shirley Temple"))
    assert "Shirley Temple" in r.info["titles"]
    assert e.step(Action("lookup", "Chief of Protocol")).observation.startswith("(Result 1 / 1)")


def test_a_page_without_text_says_so(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"title": "Blank", "sentences": []}\n{"title": "Full", "text": "Some text."}\n')
    e = make_env(EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "i")))
    r = e.step(Action("search", "blank"))
    assert r.observation == "The page Blank has no text." and r.info["titles"] == ["Blank"]
    assert e.step(Action("lookup", "text")).observation == "No more results."
