"""Replaying an imported trajectory in the local wiki: its observations become the corpus's own."""

from __future__ import annotations

import json
from pathlib import Path

from actune.bootstrap.importers import import_set
from actune.bootstrap.replay import replay_store
from actune.envs.config import EnvConfig
from actune.records.trajectory import read_trajectories

CORPUS = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small" / "wiki_paragraphs.jsonl"


def _record(question: str, search: str, answer: str) -> dict:
    return {"messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": f"Thought: I should search {search}.\nAction: search[{search}]"},
        {"role": "user", "content": "Observation: a snippet from another search engine ..."},
        {"role": "assistant", "content": f"Thought: So the answer is {answer}.\nAction: finish[{answer}]"},
        {"role": "user", "content": "Observation: Episode finished, reward = True"}]}


def test_a_replayed_record_sees_the_corpus_and_a_missed_search_drops_it(tmp_path: Path) -> None:
    src = tmp_path / "teacher.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in (
        _record("Who was Maria Callas?", "Maria Callas", "a soprano"),
        _record("Who won the 1931 Tour?", "best cyclist 1931", "Antonin Magne"))) + "\n")
    assert import_set(src, tmp_path / "imported.jsonl", "openai").imported == 2
    env = EnvConfig(name="wiki", corpus=str(CORPUS), index_dir=str(tmp_path / "idx"))
    summary = replay_store(tmp_path / "imported.jsonl", tmp_path / "replayed.jsonl", env)
    assert (summary.total, summary.replayed, summary.missed) == (2, 1, 1)
    assert summary.examples[0].endswith(": search[best cyclist 1931]")
    (got,) = read_trajectories(tmp_path / "replayed.jsonl")
    page = next(json.loads(line) for line in CORPUS.read_text().splitlines()
                if json.loads(line)["title"] == "Maria Callas")
    observation = next(s.text for s in got.steps if s.type == "observation")
    assert observation.startswith(page["sentences"][0].strip()[:60])
    assert got.info["env_info"]["titles"] == ["Maria Callas"] and got.info["import"]["replayed"] is True
    assert got.info["verdict"]["kept"] and got.prediction == "a soprano"
    # again: the record is already there, nothing is appended
    again = replay_store(tmp_path / "imported.jsonl", tmp_path / "replayed.jsonl", env)
    assert (again.already, again.replayed) == (1, 0)
    assert len(list(read_trajectories(tmp_path / "replayed.jsonl"))) == 1
