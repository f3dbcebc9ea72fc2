"""Agent-loop throughput: many episodes at once against one vLLM server.

    .venv/bin/python bench/agent_loop.py --method react --episodes 32 --concurrency 16
    .venv/bin/python bench/agent_loop.py --endpoint http://127.0.0.1:8000/v1 --model smollm2-135m

Without --endpoint it starts a server for --model (under the machine-wide lock). Tasks: a JSONL of
``{"id", "question", "answer"}`` (--tasks) or three built-in questions over the tiny test corpus,
repeated with new attempt indices (so new seeds). Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from pathlib import Path

from actune.agent import AgentConfig, run_episode
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.llm import ClientConfig, LLMClient
from actune.records.task_record import Task
from actune.runtime.stop_signals import run_script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = [
    Task("walkman", "In which year was the company that makes the Walkman founded?", "1946"),
    Task("curie", "In which city was Marie Curie born?", "Warsaw"),
    Task("river", "Which river is longer, the Danube or the Rhine?", "Danube"),
]


def load_tasks(path: str | None) -> list[Task]:
    if not path:
        return DEFAULT_TASKS
    out = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            d = json.loads(line)
            out.append(Task(str(d.get("id", i)), d["question"], d.get("answer", ""), meta=d.get("meta", {})))
    return out


async def bench(args: argparse.Namespace, endpoint: str, model: str) -> None:
    tasks = load_tasks(args.tasks)
    cfg = AgentConfig(method=args.method, temperature=args.temperature, max_tokens=args.max_tokens,
                      wire=args.wire, regime=args.regime, cot_sc_n=args.cot_sc_n)
    env_cfg = EnvConfig(name="wiki", corpus=args.corpus, index_dir=args.index_dir)
    jobs = [(tasks[i % len(tasks)], i // len(tasks)) for i in range(args.episodes)]
    sem = asyncio.Semaphore(args.concurrency)
    async with LLMClient(ClientConfig(endpoints=[endpoint], model=model, max_concurrency=args.concurrency)) as llm:
        async def one(task: Task, attempt: int):
            async with sem:
                return await run_episode(task, make_env(env_cfg), llm, cfg, attempt=attempt, run_id="bench")

        t0 = time.perf_counter()
        trajs = await asyncio.gather(*[one(t, a) for t, a in jobs])
        wall = time.perf_counter() - t0
    gen = sum(t.usage.completion_tokens for t in trajs)
    prompt = sum(t.usage.prompt_tokens for t in trajs)
    cached = sum(t.usage.cached_prompt_tokens for t in trajs)
    reqs = sum(t.usage.requests for t in trajs)
    rows = [
        ("method / wire / regime", f"{args.method} / {args.wire} / {args.regime}"),
        ("episodes", f"{len(trajs)} (concurrency {args.concurrency})"),
        ("wall", f"{wall:.1f} s"),
        ("episodes per hour", f"{len(trajs) / wall * 3600:.0f}"),
        ("requests per episode", f"{reqs / len(trajs):.1f}"),
        ("generated tokens/s", f"{gen / wall:.1f}"),
        ("prompt tokens cached", f"{cached / max(prompt, 1):.0%}"),
        ("correct", f"{sum(t.correct for t in trajs)}/{len(trajs)}"),
        ("finish reasons", ", ".join(f"{k} {v}" for k, v in Counter(t.finish_reason for t in trajs).most_common())),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint")
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--method", default="react")
    p.add_argument("--wire", default="text", choices=("text", "chat"))
    p.add_argument("--regime", default="few_shot", choices=("few_shot", "zero_shot"))
    p.add_argument("--episodes", type=int, default=24)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--temperature", type=float, default=0.4)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--cot-sc-n", type=int, default=5)
    p.add_argument("--corpus", default=str(REPO / "tests" / "data" / "agent" / "corpus.jsonl"))
    p.add_argument("--index-dir", default=None)
    p.add_argument("--tasks", help="JSONL of {id, question, answer}")
    args = p.parse_args()
    if args.endpoint:
        asyncio.run(bench(args, args.endpoint, args.model))
        return
    from actune.serve.config import ServeConfig
    from actune.serve.lock import exclusive_server_lock
    from actune.serve.server import free_port, vllm_server

    with exclusive_server_lock(), vllm_server(ServeConfig(model=args.model, port=free_port())) as server:
        asyncio.run(bench(args, server.base_url, server.model))


if __name__ == "__main__":
    run_script(main)
