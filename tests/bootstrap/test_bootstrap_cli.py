"""``actune bootstrap CONFIG [key=value ...]`` without a server: overrides, errors, a finished store."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
import yaml
from agent.fakes import FakeEnvironment
from collect_fakes import walkman_llm, walkman_tasks

from actune.agent import AgentConfig
from actune.cli.stages import QUALIFY, register
from actune.collect import collect, pending_episodes
from actune.config import ConfigError
from actune.store import TrajectoryStore


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="actune")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_overrides_may_omit_the_bootstrap_prefix() -> None:
    assert QUALIFY["bootstrap"](["concurrency=4", "bootstrap.attempts_per_task=2", "serve.port=8001", "name=x",
                              "agent.temperature=0.7"]) == [
        "bootstrap.concurrency=4", "bootstrap.attempts_per_task=2", "serve.port=8001", "name=x",
        "bootstrap.agent.temperature=0.7"]


def test_a_bad_key_names_its_path(tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text("name: t\nbootstrap:\n  concurrency: 2\n")
    args = parse(["bootstrap", str(cfg), "bootstrap.nope=1"])
    with pytest.raises(ConfigError, match=r"bootstrap\.nope: unknown key"):
        args.func(args)


def test_a_finished_store_needs_no_server_and_gets_its_summary(tmp_path: Path, capsys) -> None:
    tasks_file = tmp_path / "tasks.jsonl"
    tasks = walkman_tasks()
    tasks_file.write_text("".join(json.dumps({"id": t.id, "question": t.question, "answer": t.answer,
                                              "meta": t.meta}) + "\n" for t in tasks))
    store_path = tmp_path / "out" / "trajectories.jsonl"

    async def fill() -> None:
        with TrajectoryStore.open(store_path) as store:
            # AgentConfig(): the method run_bootstrap's default config runs, so its resume finds them all
            await collect(pending_episodes(tasks, 2, store, AgentConfig().method), FakeEnvironment, walkman_llm(),
                          AgentConfig(), store, concurrency=2, target_correct=100, run_id="earlier")

    asyncio.run(fill())
    before = store_path.read_bytes()
    cfg = tmp_path / "run.yaml"
    # a model that cannot be served: starting a server would fail the command
    cfg.write_text(yaml.safe_dump({"name": "t", "serve": {"model": str(tmp_path / "no-such-model")},
                                   "bootstrap": {"store": str(store_path), "attempts_per_task": 2,
                                                 "tasks": {"format": "custom", "path": str(tasks_file),
                                                           "split": "train"}}}))
    args = parse(["bootstrap", str(cfg), "concurrency=3", "--no-progress"])
    assert args.func(args) == 0
    out = capsys.readouterr()
    assert "nothing to do" in out.err and "resuming" in out.err
    assert store_path.read_bytes() == before
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["episodes"], summary["kept"], summary["tasks"], summary["run_ids"]) == (8, 4, 4, ["earlier"])
    assert "total" in out.out and "single" in out.out
