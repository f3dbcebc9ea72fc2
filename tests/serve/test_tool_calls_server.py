"""The tools wire on the real vLLM server with the embedded model and its hermes tool parser: the server renders
a tools episode token for token as training does, and a LoRA trained on tool-call episodes makes calls that the
server's parser and the loop read."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path

import httpx
import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.validate import step_order_problems
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.llm import ClientConfig, LLMClient
from actune.records.task_record import Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))
from training_records import records, tiny_config, write_store  # noqa: E402

pytestmark = [pytest.mark.server, pytest.mark.own_servers]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "agent" / "corpus.jsonl"
TASK = Task(id="walkman", question="Who makes the Walkman?", answer="Sony", env="wiki", split="test")


@pytest.fixture(scope="module")
def tools_server(embedded_model, tmp_path_factory):
    from actune.serve.config import ServeConfig
    from actune.serve.lock import exclusive_server_lock
    from actune.serve.server import free_port, vllm_server

    cfg = ServeConfig(model=str(embedded_model), served_model_name="smollm2-135m", enable_lora=True,
                      port=free_port(), log_dir=tmp_path_factory.mktemp("tools-server")).for_wire("tools")
    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive_server_lock())
        yield stack.enter_context(vllm_server(cfg))


@pytest.fixture(scope="module")
def tools_adapter(embedded_model, tmp_path_factory):
    """A LoRA overfit on the four training records in the tools wire: it has learnt to answer with a call."""
    from actune.bootstrap.export import export_dataset
    from actune.train.sft import train

    tmp = tmp_path_factory.mktemp("tools-adapter")
    export_dataset(write_store(tmp / "store.jsonl"), tmp / "ds", "tools")
    train(tiny_config(tmp, embedded_model, wire_format="tools", eval_fraction=0, max_steps=12, learning_rate=6e-3,
                      max_length=512), log=lambda line: None)
    return tmp / "adapter"


def test_the_server_renders_a_tools_episode_as_training_does(tools_server, embedded_model):
    from transformers import AutoTokenizer

    from actune.bootstrap.export import tools_example
    from actune.train.masking import tokenize_messages
    from actune.train.sft import use_tools_template

    ex = tools_example(records()[2])  # unicode in the call's argument and in the tool result
    tools = json.loads(ex["tools"])
    sent = [{k: v for k, v in m.items() if k != "train"} for m in ex["messages"]]
    r = httpx.post(tools_server.base_url.removesuffix("/v1") + "/tokenize", timeout=60,
                   json={"model": tools_server.model, "messages": sent, "tools": tools,
                         "add_generation_prompt": False})
    r.raise_for_status()
    tok = AutoTokenizer.from_pretrained(embedded_model)
    use_tools_template(tok, embedded_model, None)
    assert r.json()["tokens"] == tokenize_messages(tok, ex["messages"], tools=tools).input_ids


def test_a_tuned_adapter_calls_tools_through_the_server_parser(tools_server, tools_adapter, tmp_path):
    from actune.serve.adapters import load_adapter

    load_adapter(tools_server.base_url, "tools-lora", tools_adapter)
    env_cfg = EnvConfig(name="wiki", corpus=str(CORPUS), index_dir=str(tmp_path / "index"))
    cfg = AgentConfig(wire="tools", regime="zero_shot", episode_steps=3, max_tokens=64, temperature=0.0)

    async def main():
        async with LLMClient(ClientConfig(endpoints=[tools_server.base_url], model="tools-lora")) as llm:
            return await run_episode(TASK, make_env(env_cfg), llm, cfg, run_id="it")

    traj = asyncio.run(main())
    assert step_order_problems(traj) == []
    assert traj.finish_reason not in ("server_error", "context_overflow"), traj.info.get("error")
    called = [s for s in traj.steps if s.type in ("action", "answer") and s.action_name]
    assert called, [s.text for s in traj.steps]  # the parser read at least one call from the tuned model
    assert called[0].action_name in ("search", "lookup", "finish")
