"""The whole stage against the real vLLM server: a prompted model and the same base with a random LoRA
(loaded into the running server by eval itself) on 3 tasks of a tiny synthetic world."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
import yaml

from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.cli.stages import register
from actune.eval.run import adapter_name
from actune.eval.stats import model_stats
from actune.records.trajectory import read_trajectories
from actune.serve.adapters import served_models
from actune.world import WorldConfig, write_world

pytestmark = pytest.mark.server


def test_eval_prompted_and_adapter_side_by_side(vllm_server, random_lora, tmp_path: Path, capsys) -> None:
    world = tmp_path / "world"
    write_world(WorldConfig(seed=0, n_people=20, n_companies=12, n_cities=8, n_train=10, n_dev=2, n_test=2), world)
    adapter = tmp_path / "adapter"
    shutil.copytree(random_lora, adapter)  # the fixture's folder is shared: the spec goes into a copy
    save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), adapter)
    out = tmp_path / "eval"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"name": "tiny", "eval": {
        "out_dir": str(out), "endpoints": [vllm_server.base_url], "concurrency": 3, "bootstrap_samples": 200,
        "models": [{"label": "prompted", "model": vllm_server.model},
                   {"label": "tuned", "model": vllm_server.model, "adapter": str(adapter)}],
        "env": {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "idx")},
        "tasks": {"format": "custom", "path": str(world / "train.jsonl"), "split": "train", "limit": 3},
        "agent": {"method": "react", "exemplar_set": "world", "num_exemplars": 2, "temperature": 0.0,
                  "max_tokens": 40, "episode_steps": 3},
    }}))
    parser = argparse.ArgumentParser(prog="actune")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", str(cfg), "--no-progress"])
    assert args.func(args) == 0

    name = adapter_name("tuned", adapter)
    assert name in served_models(vllm_server.base_url)  # eval loaded it into the given server
    for f in ("report.json", "report.md", "scores.png"):
        assert (out / f).is_file()
    report = json.loads((out / "report.json").read_text())
    assert [m["label"] for m in report["models"]] == ["prompted", "tuned"]
    for m in report["models"]:
        assert m["episodes"] == 3 and m["tasks"] == 3
        assert sum(m["failures"].values()) == 3
    prompted = list(read_trajectories(out / "prompted" / "trajectories.jsonl"))
    tuned = list(read_trajectories(out / "tuned" / "trajectories.jsonl"))
    assert {t.task.id for t in prompted} == {t.task.id for t in tuned} and len(prompted) == len(tuned) == 3
    for t in prompted:
        assert t.model.name == vllm_server.model and t.model.adapter is None and t.model.regime == "few_shot"
        assert t.finish_reason not in ("server_error", "context_overflow"), t.info.get("error")
    for t in tuned:
        assert t.model.adapter == name and t.model.regime == "zero_shot"
        assert t.finish_reason not in ("server_error", "context_overflow"), t.info.get("error")
    assert report["models"][1]["metrics"] == model_stats(tuned, samples=200, confidence=0.95, seed=0,
                                                         metrics=report["metrics"])["metrics"]
    assert report["metrics"][:2] == ["correct_grounded", "correct"]
    for metric in ("correct_grounded", "correct"):  # every record judged: each pairs with its task
        assert report["models"][1]["vs_first"][metric]["pairs"] == 3
    for m in report["models"]:
        assert m["cost"]["episodes"] == 3 and m["cost"]["prompt_tokens"] > 0 and m["cost"]["wall_s"] > 0
        assert m["model"] == vllm_server.model
    assert all(t.info["prompt_spec"]["source"] == "adapter" for t in tuned)
    assert all("prompt_spec" not in t.info for t in prompted)

    # a rerun runs nothing and leaves the stores as they were
    before = [(out / m / "trajectories.jsonl").read_bytes() for m in ("prompted", "tuned")]
    assert args.func(args) == 0
    assert [(out / m / "trajectories.jsonl").read_bytes() for m in ("prompted", "tuned")] == before
    assert "nothing to run" in capsys.readouterr().err

    # a model the given server does not serve is named before any episode runs (issue #49 item 3)
    other = tmp_path / "other"
    capsys.readouterr()
    wrong = parser.parse_args(["eval", str(cfg), "eval.served_model=SmolLM2-135M-Instruct", f"eval.out_dir={other}",
                               "eval.models=[{label: prompted}]", "--no-progress"])
    assert wrong.func(wrong) == 1
    err = capsys.readouterr().err
    assert f"{vllm_server.base_url} serves '{vllm_server.model}'" in err and "not 'SmolLM2-135M-Instruct'" in err
    assert not (other / "prompted" / "trajectories.jsonl").exists() or \
        not (other / "prompted" / "trajectories.jsonl").read_text()


def test_a_quick_score_without_a_config(vllm_server, tmp_path: Path, capsys) -> None:
    """``actune eval --model M --tasks FILE`` (issue #49 item 7) on the real server: no config written."""
    from actune.cli import main

    world = tmp_path / "world"
    write_world(WorldConfig(seed=1, n_people=20, n_companies=12, n_cities=8, n_train=4, n_dev=2, n_test=2), world)
    out = tmp_path / "quick"
    assert main(["eval", "--model", vllm_server.model, "--tasks", str(world / "test.jsonl"), "--no-progress",
                 f"eval.endpoints=[{vllm_server.base_url}]", f"eval.env.corpus={world / 'corpus.jsonl'}",
                 f"eval.env.index_dir={tmp_path / 'idx'}", "eval.agent.exemplar_set=world", "eval.agent.max_tokens=40",
                 "eval.agent.episode_steps=2", "eval.bootstrap_samples=100", f"eval.out_dir={out}"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert [(m["label"], m["episodes"]) for m in report["models"]] == [("prompted", 2)]
    assert {t.task.id for t in read_trajectories(out / "prompted" / "trajectories.jsonl")} == \
        {json.loads(x)["id"] for x in (world / "test.jsonl").read_text().splitlines()}
