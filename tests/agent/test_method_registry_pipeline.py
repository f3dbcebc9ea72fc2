"""A method added from a test module, touching no package file, through the real chain: ``actune bootstrap`` on the
real vLLM server with the embedded model -> ``actune export`` in its own step format -> ``actune train`` (two tiny
steps) -> ``actune eval`` with the adapter loaded into the server. The toy method ("idea": one line of idea, then
the answer) is one :class:`MethodSpec` registered for the test; everything else reads it from the registry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from actune.agent.episode import Episode, Event
from actune.agent.method_registry import MethodSpec, StepFormat, registered_method
from actune.agent.prompt_spec import load_prompt_spec
from actune.cli import main
from actune.records.trajectory import Step, read_trajectories
from actune.world import WorldConfig, write_world

pytestmark = pytest.mark.server

QUESTIONS = [("What is the capital of France?", "Paris"), ("What is the capital of Italy?", "Rome"),
             ("What is the capital of Germany?", "Berlin"), ("What is the capital of Spain?", "Madrid")]
HELD_OUT = [("What is the capital of Portugal?", "Lisbon"), ("What is the capital of Japan?", "Tokyo")]


async def run_idea(ep: Episode) -> AsyncIterator[Event]:
    """Two completions: a line of idea, then the answer's line."""
    yield Event("iteration", 1, {"goal": ep.traj.task.question, "max_iterations": 1})
    prompt = ep.prompt_for("idea")
    c = await ep.generate([], "Idea:", ["\n"], prompt=prompt)
    yield ep.add(Step("thought", c.text.strip(), 1, tokens=c.usage.completion_tokens, latency_s=c.latency_s))
    c = await ep.generate(ep.traj.steps, "Answer:", ["\n"], prompt=prompt)
    answer = c.text.strip().rstrip(".") or None
    if answer is None:
        ep.traj.finish_reason = "parse_errors"
        return
    yield ep.add(Step("answer", answer, 1, action_name="answer", action_arg=answer,
                      tokens=c.usage.completion_tokens, latency_s=c.latency_s))
    ep.traj.prediction = answer
    ep.traj.finish_reason = "answered"


IDEA = MethodSpec("idea", run_idea, StepFormat(
    "idea", "Idea", "Idea", "thought", acting=False, accepts=lambda s: False,
    instruction=lambda task, actions, style, hint: f"{task}. Write one idea, then the answer in a word or "
                                                   f"two.{hint}"), reads_pages=False)


def test_a_method_from_a_test_module_runs_bootstrap_export_train_and_eval(vllm_server, tmp_path: Path,
                                                                         capsys) -> None:
    world = tmp_path / "world"
    write_world(WorldConfig(seed=0, n_people=20, n_companies=12, n_cities=8, n_train=10, n_dev=2, n_test=3), world)
    tasks, test = tmp_path / "tasks.jsonl", tmp_path / "test.jsonl"
    for path, pairs, prefix in ((tasks, QUESTIONS, "q"), (test, HELD_OUT, "t")):
        path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "question": q, "answer": a}) + "\n"
                                for i, (q, a) in enumerate(pairs)))
    env = {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "idx")}
    store, adapter, out = tmp_path / "store" / "trajectories.jsonl", tmp_path / "adapter", tmp_path / "eval"
    # the prompted model answers with the wiki exemplars shown (in the toy's format); the tuned one zero-shot
    agent = {"method": "idea", "regime": "few_shot", "temperature": 0.0, "max_tokens": 32}
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "toy-method",
        "bootstrap": {"store": str(store), "endpoints": [vllm_server.base_url], "model": vllm_server.model,
                      "concurrency": 1, "attempts_per_task": 1, "env": env, "agent": agent,
                      "tasks": {"format": "custom", "path": str(tasks), "split": "train"},
                      "export": {"steps_method": "idea"}},
        "train": {"base_model": str(vllm_server.model_path), "dataset": str(tmp_path / "ds"),
                  "output_dir": str(adapter), "lora": {"r": 4, "alpha": 8, "dropout": 0.0},
                  "learning_rate": 2e-3, "warmup_ratio": 0.0, "max_steps": 2, "per_device_train_batch_size": 2,
                  "max_length": 128, "dtype": "float32", "eval_fraction": 0, "save_steps": 1000},
        "eval": {"out_dir": str(out), "endpoints": [vllm_server.base_url], "concurrency": 1,
                 "bootstrap_samples": 100, "env": env, "agent": {**agent, "regime": "zero_shot"},
                 "models": [{"label": "idea-tuned", "model": vllm_server.model, "adapter": str(adapter)}],
                 "tasks": {"format": "custom", "path": str(test), "split": "test"}},
    }))
    with registered_method(IDEA):
        assert main(["bootstrap", str(cfg), "--no-progress"]) == 0, capsys.readouterr().err
        records = list(read_trajectories(store))
        assert len(records) == len(QUESTIONS) and {t.method for t in records} == {"idea"}
        kept = [t for t in records if t.scores.get("kept")]
        assert kept, [(t.task.question, [s.text for s in t.steps]) for t in records]  # the judge's no-page rule: correctness
        assert all([s.type for s in t.steps] == ["thought", "answer"] for t in kept)

        assert main(["export", str(cfg)]) == 0, capsys.readouterr().err
        from datasets import load_from_disk

        rows = load_from_disk(str(tmp_path / "ds"))
        assert len(rows) == len(kept) and set(rows["steps_method"]) == {"idea"}
        assert "Write one idea, then the answer in a word" in rows[0]["text"] and "\nIdea: " in rows[0]["text"]

        assert main(["train", str(cfg)]) == 0, capsys.readouterr().err
        assert load_prompt_spec(adapter).method == "idea"
        assert json.loads((adapter / "training_meta.json").read_text())["steps"] == 2

        assert main(["eval", str(cfg), "--no-progress"]) == 0, capsys.readouterr().err
    episodes = list(read_trajectories(out / "idea-tuned" / "trajectories.jsonl"))
    assert len(episodes) == len(HELD_OUT)
    assert {(t.method, t.info["prompt"]["method"], t.model.regime) for t in episodes} == {
        ("idea", "idea", "zero_shot")}
    assert all(t.steps and t.steps[0].type == "thought" for t in episodes)
