from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from actune.cli import world as world_cli
from actune.config import ConfigError
from actune.envs.base import Action
from actune.envs.config import EnvConfig
from actune.envs.wiki_env import from_config
from actune.records.task_record import Task
from actune.world import WorldConfig, write_world


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="actune")
    world_cli.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_generate_writes_the_same_world_as_the_library(tmp_path: Path, capsys) -> None:
    sizes = ["n_people=20", "n_companies=12", "n_cities=8", "n_train=20", "n_dev=10", "n_test=10"]
    assert _run(["world", "generate", *sizes, "--seed", "5", "--out", str(tmp_path / "cli")]) == 0
    assert "40 pages (20 people, 12 companies, 8 cities)" in capsys.readouterr().out
    write_world(WorldConfig(seed=5, n_people=20, n_companies=12, n_cities=8, n_train=20, n_dev=10, n_test=10),
                tmp_path / "lib")
    for name in ("corpus.jsonl", "train.jsonl", "dev.jsonl", "test.jsonl", "world.json"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "lib" / name).read_bytes()
    manifest = json.loads((tmp_path / "cli" / "world.json").read_text())
    assert manifest["config"]["mix"] == {"single": 0.4, "bridge": 0.4, "comparison": 0.2}
    config = tmp_path / "fam.yaml"
    config.write_text("phrasings: families\nseed: 5\n")
    assert _run(["world", "generate", str(config), *sizes, "--out", str(tmp_path / "fam")]) == 0
    write_world(WorldConfig(seed=5, n_people=20, n_companies=12, n_cities=8, n_train=20, n_dev=10, n_test=10,
                            phrasings="families"), tmp_path / "fam-lib")
    assert (tmp_path / "fam" / "test.jsonl").read_bytes() == (tmp_path / "fam-lib" / "test.jsonl").read_bytes()
    # 10 questions: kinds 4/4/2; 40% new phrasings rounds to 2, 2 and 1, 10% new relations to none
    assert json.loads((tmp_path / "fam" / "world.json").read_text())["phrasing_groups"]["test"] == {
        "new_phrasing": 5, "seen": 5}


def test_cli_bad_keys_mix_and_too_small_world_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="n_peple: unknown key"):
        _run(["world", "generate", "n_peple=3", "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="add up to 1"):
        _run(["world", "generate", "mix.single=0.5", "mix.bridge=0.5", "mix.comparison=0.5", "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="nope.yaml: no such config file"):
        _run(["world", "generate", str(tmp_path / "nope.yaml"), "--out", str(tmp_path)])
    with pytest.raises(ConfigError, match="too small"):
        _run(["world", "generate", "n_people=3", "n_companies=2", "n_cities=2", "--out", str(tmp_path / "x")])
    assert not (tmp_path / "x" / "world.json").exists()


def test_an_oracle_searcher_finds_every_answer_through_the_wiki_env(tmp_path: Path) -> None:
    """Search each supporting page, look up the fact when search misses it: the answer is always seen."""
    gen = write_world(WorldConfig(seed=11, n_people=20, n_companies=12, n_cities=8, n_train=24, n_dev=8,
                                  n_test=8, late_fact_prob=0.5), tmp_path / "w")
    env = from_config(EnvConfig(name="wiki", corpus=str(tmp_path / "w" / "corpus.jsonl"),
                                index_dir=str(tmp_path / "idx")))
    lookups = 0
    for records in gen.splits.values():
        for r in records:
            env.reset(Task(id=r["id"], question=r["question"], answer=r["answer"]))
            seen = []
            for title in r["meta"]["supporting_titles"]:
                res = env.step(Action("search", title))
                assert res.info["titles"] == [title]
                seen.append(res.observation)
            answer_fact_page = r["meta"]["supporting_titles"][-1]
            if r["meta"]["kind"] != "comparison" and r["answer"] not in " ".join(seen):
                # the fact sits after sentence five: a lookup on the last page finds it
                res = env.step(Action("search", answer_fact_page))
                for keyword in ("born in", "founded", "province", "river"):
                    res = env.step(Action("lookup", keyword))
                    while r["answer"] not in res.observation and res.observation.startswith("(Result"):
                        res = env.step(Action("lookup", keyword))  # the next sentence with the keyword
                    if r["answer"] in res.observation:
                        break
                lookups += 1
                seen.append(res.observation)
                assert r["meta"]["lookup_needed"]
            if r["meta"]["kind"] != "comparison":
                assert r["answer"] in " ".join(seen), r
            res = env.step(Action("finish", r["answer"]))
            assert res.done and res.info["answer"] == r["answer"]
    assert lookups > 0
