"""The whole stage against the real vLLM server: 3 tasks x 2 attempts on a tiny synthetic world."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from actune.cli.stages import register
from actune.judge import judge, verdict_of
from actune.records.trajectory import Trajectory
from actune.world import WorldConfig, write_world

pytestmark = pytest.mark.server


def test_bootstrap_a_tiny_world(vllm_server, tmp_path: Path, capsys) -> None:
    import argparse

    world = tmp_path / "world"
    write_world(WorldConfig(seed=0, n_people=20, n_companies=12, n_cities=8, n_train=10, n_dev=2, n_test=2), world)
    store = tmp_path / "out" / "trajectories.jsonl"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"name": "tiny", "bootstrap": {
        "store": str(store), "endpoints": [vllm_server.base_url], "model": vllm_server.model,
        "concurrency": 6, "attempts_per_task": 2, "target_correct": 100, "require_grounded": True,
        "env": {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "idx")},
        "tasks": {"format": "custom", "path": str(world / "train.jsonl"), "split": "train", "limit": 3},
        "agent": {"method": "react", "exemplar_set": "world", "num_exemplars": 2, "temperature": 0.4,
                  "max_tokens": 40, "episode_steps": 3},
    }}))
    parser = argparse.ArgumentParser(prog="actune")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bootstrap", str(cfg), "--no-progress"])
    assert args.func(args) == 0

    lines = store.read_text().splitlines()
    assert len(lines) == 6
    records = [Trajectory.from_json(line) for line in lines]
    for line, t in zip(lines, records):
        assert t.to_json() == line  # every line round-trips
        assert t.run_id.startswith("tiny-") and t.model.name == vllm_server.model
        assert t.finish_reason not in ("server_error", "context_overflow"), t.info.get("error")
        assert t.usage.requests > 0
        assert verdict_of(t) == judge(t, require_grounded=True)  # the stored verdict is the judge's
    assert sorted((t.task.id, t.attempt) for t in records) == sorted(
        (tid, a) for tid in {t.task.id for t in records} for a in (0, 1))
    assert len({t.task.id for t in records}) == 3
    # the two attempts of a task were sampled with different seeds
    assert len({t.sampling.seed for t in records}) == 6

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    verdicts = [verdict_of(t) for t in records]
    assert summary["episodes"] == 6 and summary["tasks"] == 3
    assert summary["correct"] == sum(v.correct for v in verdicts)
    assert summary["grounded"] == sum(v.grounded for v in verdicts)
    assert summary["kept"] == sum(v.kept for v in verdicts) <= summary["correct"]
    assert sum(k["attempts"] for k in summary["by_kind"].values()) == 6
    for field in ("correct", "grounded", "kept"):
        assert sum(k[field] for k in summary["by_kind"].values()) == summary[field]
    assert summary["by_kind"].keys() == {t.task.meta["kind"] for t in records}
    assert sum(summary["finish_reasons"].values()) == 6

    # a rerun has nothing left to do and leaves the store as it was
    before = store.read_bytes()
    assert args.func(args) == 0
    assert store.read_bytes() == before
    assert "nothing to do" in capsys.readouterr().err
