from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.envs.base import Action
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.fever_env import FeverEnv
from actune.records.task_record import Task
from actune.tasks.fever import write_wiki_from_observation_cache

CACHE = Path(__file__).parents[1] / "data" / "wiki" / "fever_observation_cache_sample.json"


@pytest.fixture()
def env(tmp_path: Path) -> FeverEnv:
    corpus = tmp_path / "fever_wiki.jsonl"
    assert write_wiki_from_observation_cache(CACHE, corpus) == 2
    e = make_env(EnvConfig(name="fever", corpus=str(corpus), index_dir=str(tmp_path / "idx")))
    e.reset(Task(id="143807", question="Paramore is not from Tennessee.", answer="REFUTES", env="fever"))
    return e


def test_observation_cache_becomes_a_small_wiki(tmp_path: Path) -> None:
    corpus = tmp_path / "w.jsonl"
    write_wiki_from_observation_cache(CACHE, corpus)
    pages = [json.loads(line) for line in corpus.read_text().splitlines()]
    assert [p["title"] for p in pages] == ["Paramore", "Eric Church"]
    assert pages[0]["sentences"][0] == "Paramore is an American rock band from Franklin, Tennessee, formed in 2004."
    assert len(pages[0]["sentences"]) == 4
    # ".." from the paper's scraper is undone
    assert pages[1]["sentences"][2].endswith('"Guys Like Me".')


def test_fever_env_searches_and_validates_the_label(env: FeverEnv) -> None:
    assert env.name == "fever" and "SUPPORTS, REFUTES or NOT ENOUGH INFO" in env.describe_actions()
    r = env.step(Action("search", "paramore"))
    assert r.observation.startswith("Paramore is an American rock band from Franklin, Tennessee")
    assert r.info["titles"] == ["Paramore"]
    bad = env.step(Action("finish", "maybe"))
    assert not bad.done
    assert bad.observation == "finish takes one of SUPPORTS, REFUTES, NOT ENOUGH INFO; got 'maybe'."
    r = env.step(Action("finish", " not_enough  info. "))
    assert r.done and r.info["answer"] == "NOT ENOUGH INFO"


@pytest.mark.parametrize("text, label", [("refutes", "REFUTES"), ("Supports.", "SUPPORTS"),
                                         ("NOT ENOUGH INFO", "NOT ENOUGH INFO")])
def test_fever_labels_are_forgiving_about_case_and_spacing(env: FeverEnv, text: str, label: str) -> None:
    assert env.step(Action("finish", text)).info["answer"] == label
