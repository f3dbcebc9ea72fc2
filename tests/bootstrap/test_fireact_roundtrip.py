"""FireAct's released ReAct set through the whole chain, with the real commands: ``actune import`` (every
record accounted for) -> ``actune export`` -> ``actune train`` (two tiny steps on the embedded model) ->
``actune eval``, which loads the adapter into the real vLLM server and runs agent-loop episodes with it on a
small generated world. The adapter is prompted the way it was trained: FireAct's ``Thought:``/``Action:``
turns were read into actune's text steps, so its prompt spec is ReAct, zero-shot, text wire, and the loop's
prompt head is the one its training examples start with. Two steps cannot promise a right answer: each episode
only has to run on the adapter and record steps it wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from actune.agent.prompt_spec import PromptSpec, load_prompt_spec
from actune.bootstrap.export import kept_records
from actune.cli import main
from actune.records.trajectory import read_trajectories
from actune.serve.adapters import adapter_name, served_models
from actune.world import WorldConfig, write_world

REACT_SET = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "peer" / "fireact" / "gpt_format" / \
    "hotpotqa.jsonl"

pytestmark = [pytest.mark.shared, pytest.mark.server,
              pytest.mark.skipif(not REACT_SET.exists(), reason="../shared is absent")]


def test_a_lora_trained_on_fireact_react_runs_in_the_loop_on_vllm(vllm_server, tmp_path, capsys):
    from datasets import load_from_disk

    store = tmp_path / "fireact.jsonl"
    assert main(["import", str(REACT_SET), "--format", "openai", "--store", str(store)]) == 0
    counts = re.search(r": (\d+) records, (\d+) imported, (\d+) rejected -> ", capsys.readouterr().out)
    total, imported, rejected = map(int, counts.groups())
    assert total == sum(1 for line in REACT_SET.read_text().splitlines() if line.strip())
    assert imported + rejected == total and imported > 0 and len(kept_records(store)) == imported

    world = tmp_path / "world"
    write_world(WorldConfig(seed=0, n_people=20, n_companies=12, n_cities=8, n_train=10, n_dev=2, n_test=3), world)
    adapter, out = tmp_path / "adapter", tmp_path / "eval"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "fireact-tiny",
        "bootstrap": {"store": str(store)},
        # a few steps on short sequences: the head, the question and the first steps of each trajectory
        "train": {"base_model": str(vllm_server.model_path), "dataset": str(tmp_path / "ds"),
                  "output_dir": str(adapter), "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
                  "learning_rate": 2e-3, "warmup_ratio": 0.0, "max_steps": 2, "per_device_train_batch_size": 2,
                  "max_length": 320, "dtype": "float32", "eval_fraction": 0, "save_steps": 1000},
        "eval": {"out_dir": str(out), "endpoints": [vllm_server.base_url], "concurrency": 3,
                 "bootstrap_samples": 100,
                 "models": [{"label": "fireact", "model": vllm_server.model, "adapter": str(adapter)}],
                 "env": {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "idx")},
                 "tasks": {"format": "custom", "path": str(world / "test.jsonl"), "split": "test", "limit": 3},
                 "agent": {"method": "react", "temperature": 0.0, "max_tokens": 48, "episode_steps": 2}},
    }))
    assert main(["export", str(cfg)]) == 0
    assert main(["train", str(cfg)]) == 0, capsys.readouterr().err

    # the adapter folder vLLM loads, with the spec that tells the loop how it was trained
    assert (adapter / "adapter_config.json").is_file()
    spec = load_prompt_spec(adapter)
    assert spec == PromptSpec(method="react", regime="zero_shot", wire="text")
    assert json.loads((adapter / "training_meta.json").read_text())["steps"] == 2

    assert main(["eval", str(cfg), "--no-progress"]) == 0, capsys.readouterr().err
    name = adapter_name("fireact", adapter)
    assert name in served_models(vllm_server.base_url)
    episodes = list(read_trajectories(out / "fireact" / "trajectories.jsonl"))
    assert len(episodes) == 3
    trained_head = kept_records(store)[0].info["prompt"]["instruction"]
    first_example = load_from_disk(str(tmp_path / "ds"))[0]["text"]
    assert first_example.startswith(trained_head)
    for t in episodes:
        assert (t.model.name, t.model.adapter) == (vllm_server.model, name)
        assert (t.model.regime, t.model.wire, t.model.exemplar_set) == ("zero_shot", "text", None)
        assert t.info["prompt"]["instruction"] == trained_head  # the head it was trained on
        assert t.finish_reason not in ("server_error", "context_overflow"), t.info.get("error")
        assert t.usage.requests >= 1 and t.usage.completion_tokens > 0
        # ReAct's first step, read from the adapter's own completion
        written = [s for s in t.steps if s.type in ("thought", "action", "answer") and s.text.strip()]
        assert written and t.steps[0].type == "thought" and t.steps[0].iteration == 1, [s.text for s in t.steps]
