"""Every method, one episode each, against the real vLLM server with the embedded model and a tiny
local wiki corpus: the records must be complete and consistent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from actune.agent import AgentConfig, PromptSpec, run_episode, save_prompt_spec
from actune.agent.method_registry import method_names
from actune.agent.validate import step_order_problems
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.llm import ClientConfig, LLMClient
from actune.records.task_record import Task
from actune.records.trajectory import FINISH_REASONS, ModelRecord, Trajectory

METHODS = method_names()

CORPUS = Path(__file__).resolve().parents[1] / "data" / "agent" / "corpus.jsonl"
TASK = Task(id="walkman", question="In which year was the company that makes the Walkman founded?",
            answer="1946", env="wiki", split="test")

pytestmark = pytest.mark.server


def _check(traj: Trajectory, method: str) -> None:
    assert traj.method == method
    assert traj.finish_reason in FINISH_REASONS
    assert traj.finish_reason not in ("server_error", "context_overflow"), traj.info.get("error")
    assert step_order_problems(traj) == []
    assert traj.usage.requests > 0 and traj.usage.completion_tokens > 0 and traj.usage.prompt_tokens > 0
    assert traj.timings.wall_s > 0 and traj.timings.llm_s > 0
    assert set(traj.scores) >= {"em", "f1"}
    assert traj.correct == (traj.scores["em"] == 1.0)
    assert Trajectory.from_json(traj.to_json()) == traj
    if traj.finish_reason == "answered":
        assert traj.prediction is not None


def test_every_method_runs_one_real_episode(vllm_server, tmp_path):
    env_cfg = EnvConfig(name="wiki", corpus=str(CORPUS), index_dir=str(tmp_path / "index"))

    async def main() -> list[Trajectory]:
        # all at once (the client's 16 slots), as bootstrap runs episodes: the server batches them; one after
        # another they took 100 s on an AVX2-only CPU
        async with LLMClient(ClientConfig(endpoints=[vllm_server.base_url], model=vllm_server.model)) as llm:
            episodes = [
                run_episode(TASK, make_env(env_cfg), llm,
                            AgentConfig(method=method, episode_steps=3, preflect_episode_steps=3, max_tokens=48,
                                        cot_sc_n=3, temperature=0.0, exemplar_kinds=["bridge"]),
                            model=ModelRecord(name=vllm_server.model), run_id="it")
                for method in METHODS]
            # chat wire with the Thought-i prefill (vLLM continue_final_message), zero-shot
            cfg = AgentConfig(method="react", wire="chat", regime="zero_shot", episode_steps=2, max_tokens=48)
            episodes.append(run_episode(TASK, make_env(env_cfg), llm, cfg, run_id="it"))
            return list(await asyncio.gather(*episodes))

    trajs = asyncio.run(main())
    for traj, method in zip(trajs, list(METHODS) + ["react"]):
        _check(traj, method)
    by_method = {t.method: t for t in trajs[: len(METHODS)]}
    assert len(by_method["cot_sc"].info["cot_sc"]["samples"]) == 3
    react = by_method["react"]
    # the text wire really talked to the wiki env: every executed action got the env's observation
    acts = [s for s in react.steps if s.type == "action" and s.action_name]
    assert acts, [s.text for s in react.steps]
    preflect = by_method["preflect"]  # plan, reflector critique (a verdict even from unreadable JSON), acting
    assert [s.type for s in preflect.steps[:2]] == ["plan", "critique"]
    assert preflect.steps[1].meta["verdict"] in ("PASS", "FAIL") and preflect.info["preflect"]["critiques"] >= 1
    chat = trajs[-1]
    assert chat.model.wire == "chat" and chat.model.regime == "zero_shot" and chat.model.exemplar_set is None
    assert chat.steps and chat.steps[0].type == "thought"
    # same run seed, task and attempt -> same episode seed
    assert len({t.sampling.seed for t in trajs if t.method != "cot_sc"}) == 1


def test_cli_run_prints_record(vllm_server, tmp_path, capsys):
    from actune.cli import main

    spec_dir = tmp_path / "adapter"
    save_prompt_spec(PromptSpec(method="act", regime="few_shot", wire="text"), spec_dir)
    rc = main(["run", "--endpoint", vllm_server.base_url, "--model", vllm_server.model, "--env", "wiki",
               "--corpus", str(CORPUS), "--question", TASK.question, "--answer", "1946",
               "--prompt-spec", str(spec_dir), "--set", "episode_steps=2", "--set", "max_tokens=32",
               "--set", "exemplar_set=wiki", "--json"])
    assert rc == 0
    record = Trajectory.from_dict(json.loads(capsys.readouterr().out))
    assert record.method == "act" and record.task.answer == "1946"
    assert record.usage.requests >= 1 and step_order_problems(record) == []


def test_cli_run_adapter_uses_its_prompt_spec(vllm_server, random_lora, capsys):
    from actune.cli import main
    from actune.serve.adapters import load_adapter, unload_adapter

    name = "cli-adapter"
    save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="chat"), random_lora)
    load_adapter(vllm_server.base_url, name, random_lora)
    try:
        rc = main(["run", "--endpoint", vllm_server.base_url, "--model", name, "--adapter", str(random_lora),
                   "--env", "wiki", "--corpus", str(CORPUS), "--question", TASK.question, "--answer", "1946",
                   "--set", "episode_steps=2", "--set", "max_tokens=24", "--json"])
    finally:
        unload_adapter(vllm_server.base_url, name)
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert f"applied prompt spec {random_lora / 'actune_prompt.json'}: method=react regime=zero_shot wire=chat" in out.err
    record = Trajectory.from_dict(json.loads(out.out))
    # the adapter answered (an unknown model name would be a 404 -> server_error), in the spec's format
    assert record.finish_reason not in ("server_error", "context_overflow"), record.info.get("error")
    assert record.usage.requests >= 1 and record.usage.completion_tokens > 0
    assert (record.model.name, record.model.adapter) == (name, name)
    assert (record.model.regime, record.model.wire, record.model.exemplar_set) == ("zero_shot", "chat", None)
    assert step_order_problems(record) == []


@pytest.mark.parametrize("wire", ["text", "chat"])
def test_a_real_streamed_reflact_episode(vllm_server, tmp_path, wire):
    """LLARS' event stream from vLLM's SSE: each step's deltas join to its recorded text, and a streamed
    completion is the plain one (greedy)."""
    from actune.agent import iter_episode
    from actune.llm import Sampling

    env_cfg = EnvConfig(name="wiki", corpus=str(CORPUS), index_dir=str(tmp_path / "index"))
    cfg = AgentConfig(method="reflact", wire=wire, episode_steps=3, max_tokens=48, exemplar_kinds=["bridge"],
                      stream_events=True)

    async def main():
        async with LLMClient(ClientConfig(endpoints=[vllm_server.base_url], model=vllm_server.model)) as llm:
            events = [e async for e in iter_episode(TASK, make_env(env_cfg), llm, cfg, run_id="it")]
            pieces: list[str] = []
            plain = await llm.complete("Question: What is 2 + 2?\nAnswer:", Sampling(max_tokens=16), ["\n"])
            streamed = await llm.complete("Question: What is 2 + 2?\nAnswer:", Sampling(max_tokens=16), ["\n"],
                                          on_delta=pieces.append)
            return events, plain, streamed, pieces

    events, plain, streamed, pieces = asyncio.run(main())
    # (cached prompt tokens differ: the second request finds the first one's prefix in vLLM's cache)
    assert (streamed.text, streamed.finish_reason, streamed.usage.prompt_tokens, streamed.usage.completion_tokens) == \
        (plain.text, plain.finish_reason, plain.usage.prompt_tokens, plain.usage.completion_tokens)
    assert "".join(pieces) == streamed.text and streamed.usage.completion_tokens > 0
    traj = events[-1].data["trajectory"]
    _check(traj, "reflact")
    deltas: dict[tuple[str, int], str] = {}
    for e in events:
        if e.type in ("reflection_delta", "delta"):
            key = ("reflection" if e.type == "reflection_delta" else "answer", e.iteration)
            deltas[key] = deltas.get(key, "") + e.data["delta"]
    for s in traj.steps:
        if s.type == "reflection":
            assert deltas.get(("reflection", s.iteration), "") == s.text
        if s.type == "answer":
            assert deltas.get(("answer", s.iteration), "") == s.action_arg
    assert [e.type for e in events].count("reflecting") == sum(s.type == "reflection" for s in traj.steps)
