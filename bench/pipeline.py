"""The pipeline a user runs, measured stage by stage beside the engine under it, in one run (issue #10).

    .venv/bin/python bench/pipeline.py                               # about 16 minutes on 2 cores
    .venv/bin/python bench/pipeline.py --world runs/full-seed2/world \\
        --adapter runs/full-seed2/react/round1/adapter --quickstart runs/full-seed2

Everything runs with the full preset's settings (configs/quickstart/full.yaml: model, serving, agent,
training), at one concurrency, on one machine. In order:

1. one vLLM server of the base model:
   - warm-up: one episode per slot on other training questions, not measured;
   - **loop**: ``--episodes`` ReAct episodes (few-shot, T=0.4, one attempt per training question) in the
     bare agent loop (``run_episode`` under a semaphore, as bench/agent_loop.py); every request is recorded;
   - **engine**: the recorded requests replayed with nothing between them, each episode's in its order, as
     many episodes at once as the loop ran: the engine's own generated tok/s on the loop's real prompts;
   - **bootstrap**: the bootstrap stage itself (``run_bootstrap``) on the same questions and attempts (so
     the same sampling seeds and prompts) at the same concurrency, its slot-time split into generation,
     environment, agent code (prompting, parsing), judging, writing and idle (the records' own timings;
     judging and writing timed again on the stored records);
   - **eval, prompted**: the eval stage's collection (``collect`` with eval's greedy settings) on
     ``--eval-tasks`` test questions, then its requests replayed as the engine's were (the engine on the same
     work: the ratio that holds whatever the episodes' lengths, for the tuned evals below too);
   each of the four from an empty prefix cache (they send the same prompts: see :func:`reset_prefix_cache`);
2. the server stopped; the bootstrap store exported; **training**: ``actune train``'s trainer beside a plain
   TRL ``SFTTrainer`` on the same tokenized examples and masks (bench/train_speed.py, in a child process);
   then, unless ``--adapter`` is given, a short ``actune train`` with ``merge`` makes the adapter for 3-4;
3. a server of the base model with the adapter: **eval, LoRA** (the adapter's prompt spec applied);
4. a server of the merged model: **eval, merged**;
5. the wall time of each stage of a finished quickstart run (``--quickstart``; its state file).

Peak memory is the largest sum of the resident sizes of this process and all its children (servers,
trainers) sampled every 0.2 s during a stage: shared pages count twice, so it is an upper bound. Prints one
table (figure, value, target, ratio) and writes ``<out>/pipeline.json``. Nothing is asserted: the table
says where a target is missed and by how much.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from actune.agent import run_episode
from actune.agent.prompt_spec import load_prompt_spec
from actune.collect import collect
from actune.envs.factory import make_env
from actune.judge import judge
from actune.llm import ClientConfig, LLMClient
from actune.quickstart.config import QuickstartConfig, load_quickstart
from actune.records.atomic_write import fresh_work_folder
from actune.records.store import TrajectoryStore
from actune.records.trajectory import Trajectory, read_trajectories
from actune.runtime.cpu_features import describe_cpu
from actune.runtime.stop_signals import run_script
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks

REPO = Path(__file__).resolve().parents[1]


# --- measuring helpers ------------------------------------------------------------------------------
class PeakMemory:
    """Samples the summed RSS of this process and its children in a thread; ``peak_mb`` after exit."""

    def __init__(self, every_s: float = 0.2) -> None:
        self.every_s, self.peak_mb = every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> float:
        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:  # a child that just exited
                pass
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self._sample())
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._sample())


@dataclass
class Results:
    figures: dict[str, Any] = field(default_factory=dict)
    memory_mb: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str):
        print(f"--- {name}", file=sys.stderr, flush=True)
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            yield
        self.memory_mb[name] = round(mem.peak_mb)
        print(f"--- {name}: {time.perf_counter() - t0:.0f} s, peak {mem.peak_mb:.0f} MB", file=sys.stderr, flush=True)


class RecordingLLM:
    """Passes each request to the real client and keeps it with the episode that sent it, so the engine can be
    given the same requests in the same per-episode order. ``episode=None``: tagged with the asyncio task that sent
    it instead (a stage's worker, which plays its episodes one after another: replayed as one sequence)."""

    def __init__(self, llm: LLMClient, requests: list | None = None, episode: int | None = 0) -> None:
        self.llm = llm
        self.requests: list[tuple[int, str, Any, Any, Any, dict[str, Any]]] = [] if requests is None else requests
        self.episode = episode

    def for_episode(self, episode: int) -> RecordingLLM:
        """The same recorder, tagging what it records with ``episode``."""
        return RecordingLLM(self.llm, self.requests, episode)

    def _tag(self) -> int:
        return self.episode if self.episode is not None else id(asyncio.current_task())

    async def complete(self, prompt, sampling=None, stop=None, **kw):
        self.requests.append((self._tag(), "complete", prompt, sampling, stop, kw))
        return await self.llm.complete(prompt, sampling, stop, **kw)

    async def chat(self, messages, sampling=None, stop=None, **kw):
        self.requests.append((self._tag(), "chat", messages, sampling, stop, kw))
        return await self.llm.chat(messages, sampling, stop, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


def _client(url: str, model: str, concurrency: int) -> LLMClient:
    return LLMClient(ClientConfig(endpoints=[url], model=model, max_concurrency=concurrency))


async def _loop(url: str, model: str, tasks, agent, env_cfg, concurrency: int) -> tuple[list[Trajectory], list, float]:
    """The bare agent loop: every (task, attempt 0) under a semaphore; returns records, requests, wall."""
    sem = asyncio.Semaphore(concurrency)
    async with _client(url, model, concurrency) as llm:
        rec = RecordingLLM(llm)

        async def one(i, task):
            async with sem:
                return await run_episode(task, make_env(env_cfg), rec.for_episode(i), agent, attempt=0,
                                         run_id="bench-loop")

        t0 = time.perf_counter()
        trajs = await asyncio.gather(*[one(i, t) for i, t in enumerate(tasks)])
        return list(trajs), rec.requests, time.perf_counter() - t0


async def replay_episodes(url: str, model: str, requests: list, concurrency: int) -> tuple[int, float]:
    """The recorded requests with nothing between them: each episode's requests one after another, in their
    order, ``concurrency`` episodes at a time (the next admitted as one ends); (generated tokens, wall).

    Why per episode: the loop sends an episode's step k only after step k-1 came back, so step k's prompt finds
    step k-1's in the prefix cache. Requests replayed as a flat queue ran steps of one episode at once and
    recomputed what the loop found cached; a phase replayed on the cache the loop had just filled found every
    prompt cached (the engine then read 1.24x the loop)."""
    episodes: dict[int, list] = {}
    for episode, *request in requests:
        episodes.setdefault(episode, []).append(request)
    queue = iter(episodes.values())
    tokens = 0
    async with _client(url, model, concurrency) as llm:
        async def worker() -> None:
            nonlocal tokens
            for sent in queue:  # one shared iterator: each episode replayed once
                for kind, payload, sampling, stop, kw in sent:
                    c = await getattr(llm, kind)(payload, sampling, stop, **kw)
                    tokens += c.usage.completion_tokens

        t0 = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(concurrency)])
        return tokens, time.perf_counter() - t0


async def _collect(url: str, model: str, tasks, agent, env_cfg, store_path: Path, concurrency: int) -> dict:
    """Eval's collection: every task once, greedy, judged and stored; episodes/hour and generated tok/s, and the
    engine's generated tok/s on the same requests replayed (``engine_gen_tok_s``): the same work, whatever the
    episodes' lengths, so a tuned model that takes fewer or shorter steps is compared like for like."""
    with TrajectoryStore.open(store_path) as store:
        async with _client(url, model, concurrency) as client:
            llm = RecordingLLM(client, episode=None)
            t0 = time.perf_counter()
            res = await collect([(t, 0) for t in tasks], lambda: make_env(env_cfg), llm, agent, store,
                                concurrency=concurrency, target_correct=len(tasks) + 1, stage="bench eval",
                                log=lambda m: print(m, file=sys.stderr))
            wall = time.perf_counter() - t0
    trajs = list(read_trajectories(store_path))
    gen = sum(t.usage.completion_tokens for t in trajs)
    reset_prefix_cache(url.removesuffix("/v1"))
    tokens, rwall = await replay_episodes(url, model, llm.requests, concurrency)
    return {"episodes": res.written, "solved": res.kept, "wall_s": round(wall, 1),
            "episodes_h": round(res.written / wall * 3600), "gen_tok_s": round(gen / wall, 1),
            "engine_gen_tok_s": round(tokens / rwall, 1),
            "prompt_tokens_per_episode": round(sum(t.usage.prompt_tokens for t in trajs) / max(len(trajs), 1))}


def bootstrap_split(store_path: Path, wall_s: float, concurrency: int, require_grounded: bool) -> dict:
    """Where the bootstrap's slot-time went (shares of concurrency x wall)."""
    trajs = list(read_trajectories(store_path))
    llm = sum(t.timings.llm_s for t in trajs)
    env = sum(t.timings.env_s for t in trajs)
    episode = sum(t.timings.wall_s for t in trajs)
    t0 = time.perf_counter()
    for t in trajs:
        judge(t, require_grounded)
    judging = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp, TrajectoryStore.open(Path(tmp) / "s.jsonl") as store:
        t0 = time.perf_counter()
        for t in trajs:  # records already carry their verdicts; the same bytes are written again
            store.append(t)
        writing = time.perf_counter() - t0
    slots = concurrency * wall_s
    parts = {"generation": llm, "environment": env, "agent code": max(episode - llm - env, 0.0),
             "judging": judging, "writing": writing}
    parts["idle"] = max(slots - sum(parts.values()), 0.0)
    return {k: round(v / slots, 3) for k, v in parts.items()}


# --- the stages -------------------------------------------------------------------------------------
def _serve(cfg: QuickstartConfig, **update: Any):
    from actune.serve.server import vllm_server

    return vllm_server(cfg.serve.model_copy(update=update))


@contextmanager
def dev_mode():
    """vLLM's development endpoints (``/reset_prefix_cache``) for the server started inside; the bench's own
    server on 127.0.0.1, never a user's."""
    before = os.environ.get("VLLM_SERVER_DEV_MODE")
    os.environ["VLLM_SERVER_DEV_MODE"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("VLLM_SERVER_DEV_MODE", None)
        else:
            os.environ["VLLM_SERVER_DEV_MODE"] = before


def reset_prefix_cache(root_url: str, attempts: int = 20) -> None:
    """Empty the server's prefix cache, so a phase does not reuse the prompts the phase before it computed.

    Why: the loop, the replay and the bootstrap stage send the same prompts (same questions, same seeds). Run
    one after the other on one server, each later phase found the earlier one's prompts cached, and read
    faster for it: the replay 1.24x the loop and the bootstrap 1.23x, which measured the cache, not the loop."""
    import httpx

    for _ in range(attempts):
        r = httpx.post(f"{root_url}/reset_prefix_cache", timeout=30)
        r.raise_for_status()
        if r.json().get("success"):  # false while blocks are still held by a finishing request
            return
        time.sleep(0.5)
    raise RuntimeError(f"{root_url}/reset_prefix_cache: the cache was still in use after {attempts} tries")


def _child(code: str) -> dict:
    """Run ``code`` (which prints one JSON line last) in a fresh Python: training's memory and threads
    are its own, and nothing of it stays in this process."""
    path = os.pathsep.join(p for p in (str(REPO / "bench"), os.environ.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": path})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench-pipeline",
                    help="working folder (emptied when an earlier bench made it; any other is refused)")
    ap.add_argument("--world", help="a world folder (default: the full preset's world, generated)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--episodes", type=int, default=96, help="loop and bootstrap episodes (training questions)")
    ap.add_argument("--eval-tasks", type=int, default=48, help="test questions per evaluated model")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--train-steps", type=int, default=20,
                    help="steps of each trainer in the training comparison (8 read the same ratio 0.2 apart run to "
                         "run)")
    ap.add_argument("--dataset", help="training data for the comparison (default: this run's bootstrap, exported)")
    ap.add_argument("--adapter", help="a trained adapter folder (with merged/) for the tuned-model evals")
    ap.add_argument("--quickstart", help="a quickstart run folder whose stage wall times to show")
    ap.add_argument("--skip", nargs="*", default=[], choices=["train", "lora", "merged"])
    args = ap.parse_args(argv)

    out = fresh_work_folder(Path(args.out).resolve())
    cfg = load_quickstart("full", [f"seed={args.seed}"])
    res = Results()
    res.figures["machine"] = describe_cpu()
    c = args.concurrency

    world = Path(args.world).resolve() if args.world else out / "world"
    if not args.world:
        from actune.world import write_world

        write_world(cfg.world.model_copy(update={"seed": args.seed}), world)
    env_cfg = cfg.bootstrap.env.model_copy(update={"name": "wiki", "corpus": str(world / "corpus.jsonl")})
    train_tasks = load_tasks(TaskConfig(format="custom", path=str(world / "train.jsonl"), split="train",
                                        limit=args.episodes + c))
    train_tasks, warm_tasks = train_tasks[:args.episodes], train_tasks[args.episodes:]
    test_tasks = load_tasks(TaskConfig(format="custom", path=str(world / "test.jsonl"), split="test",
                                       limit=args.eval_tasks))
    boot_agent = cfg.bootstrap.agent.model_copy(update={"method": "react", "seed": args.seed})
    eval_agent = cfg.eval.agent.model_copy(update={"method": "react", "seed": args.seed})

    # 1. one server of the base model
    with res.stage("server A: loop, engine, bootstrap, eval prompted"):
        t0 = time.perf_counter()
        with dev_mode(), _serve(cfg) as server:
            res.figures["server_start_s"] = round(time.perf_counter() - t0, 1)
            url, model = server.base_url, server.model
            # warm-up: the engine's first batches are slow (first-use allocation, empty prefix cache); measured
            # cold, the loop read 0.71 of the replay that followed it and 0.75 of the bootstrap after that
            asyncio.run(_loop(url, model, warm_tasks, boot_agent, env_cfg, c))
            # every measured phase starts from an empty prefix cache (reset_prefix_cache says why)
            reset_prefix_cache(server.root_url)
            trajs, requests, wall = asyncio.run(_loop(url, model, train_tasks, boot_agent, env_cfg, c))
            gen = sum(t.usage.completion_tokens for t in trajs)
            res.figures["loop"] = {"episodes": len(trajs), "requests": len(requests), "wall_s": round(wall, 1),
                                   "episodes_h": round(len(trajs) / wall * 3600), "gen_tok_s": round(gen / wall, 1)}
            reset_prefix_cache(server.root_url)
            tokens, rwall = asyncio.run(replay_episodes(url, model, requests, c))
            res.figures["engine"] = {"requests": len(requests), "gen_tokens": tokens, "wall_s": round(rwall, 1),
                                     "gen_tok_s": round(tokens / rwall, 1)}

            from actune.bootstrap.run import run_bootstrap

            store = out / "bootstrap" / "trajectories.jsonl"
            boot = cfg.bootstrap.model_copy(update={
                "store": store, "endpoints": [url], "model": model, "attempts_per_task": 1, "concurrency": c,
                "target_correct": args.episodes + 1, "env": env_cfg, "agent": boot_agent,
                "tasks": TaskConfig(format="custom", path=str(world / "train.jsonl"), split="train",
                                    limit=args.episodes)})
            reset_prefix_cache(server.root_url)
            t0 = time.perf_counter()
            summary = run_bootstrap(boot, cfg.serve, name="bench", show_progress=False)
            bwall = time.perf_counter() - t0
            n, kept = summary["episodes"], summary["kept"]  # store-wide counts: the store is this run's alone
            res.figures["bootstrap"] = {
                "episodes": n, "kept": kept, "wall_s": round(bwall, 1), "episodes_h": round(n / bwall * 3600),
                "kept_h": round(kept / bwall * 3600),
                "split": bootstrap_split(store, bwall, c, cfg.bootstrap.require_grounded)}
            reset_prefix_cache(server.root_url)  # the LoRA and merged evals start on fresh servers
            res.figures["eval_prompted"] = asyncio.run(
                _collect(url, model, test_tasks, eval_agent, env_cfg, out / "eval" / "prompted.jsonl", c))

    # 2. training, server stopped
    adapter = Path(args.adapter).resolve() if args.adapter else out / "adapter"
    if "train" not in args.skip:
        from actune.bootstrap.export import export_dataset

        dataset = Path(args.dataset).resolve() if args.dataset else out / "dataset"
        if not args.dataset:
            export_cfg = cfg.bootstrap.export.model_copy(update={"steps_method": "react", "seed": args.seed})
            export_dataset([store], dataset, cfg.train.wire_format, export_cfg)
        with res.stage("training: actune train vs plain TRL"):
            res.figures["training"] = _child(
                "import json; from train_speed import measure_train_speed; "
                f"print(json.dumps(measure_train_speed({str(dataset)!r}, steps={args.train_steps})))")
        if not args.adapter:
            with res.stage("training: adapter for the tuned evals"):
                tcfg = cfg.train.model_copy(update={"dataset": dataset, "output_dir": adapter, "max_steps": 4,
                                                    "eval_fraction": 0.0, "merge": True, "seed": args.seed})
                _child("import json; from actune.train.config import TrainConfig; from actune.train.sft import train; "
                       f"train(TrainConfig.model_validate_json({tcfg.model_dump_json()!r})); print('{{}}')")

    # 3-4. the tuned model, as LoRA and merged
    if adapter.is_dir():
        tuned_agent = load_prompt_spec(adapter).apply(eval_agent)
        if "lora" not in args.skip:
            lora = {"enable_lora": True, "adapters": {"bench-lora": str(adapter)}}
            with res.stage("server B: eval LoRA"), dev_mode(), _serve(cfg, **lora) as server:
                res.figures["eval_lora"] = asyncio.run(_collect(
                    server.base_url, "bench-lora", test_tasks, tuned_agent, env_cfg, out / "eval" / "lora.jsonl", c))
        if "merged" not in args.skip and (adapter / "merged").is_dir():
            with res.stage("server C: eval merged"), dev_mode(), _serve(cfg, model=str(adapter / "merged"),
                                                                        served_model_name="bench-merged") as server:
                res.figures["eval_merged"] = asyncio.run(_collect(
                    server.base_url, server.model, test_tasks, tuned_agent, env_cfg, out / "eval" / "merged.jsonl", c))

    # 5. a quickstart run's stage wall times
    if args.quickstart:
        state = json.loads((Path(args.quickstart) / "quickstart-state.json").read_text(encoding="utf-8"))
        res.figures["quickstart_stages_s"] = {k: v.get("wall_s") for k, v in state.get("done", {}).items()}

    res.figures["peak_memory_mb"] = res.memory_mb
    (out / "pipeline.json").write_text(json.dumps(res.figures, indent=2) + "\n", encoding="utf-8")
    print(format_table(res.figures, c))
    print(f"\nfigures: {out / 'pipeline.json'}")
    return 0


# --- the table --------------------------------------------------------------------------------------
def _ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else a / b


def format_table(f: dict[str, Any], concurrency: int) -> str:
    """One Markdown table: each figure, its value, and where issue #10 sets a target, the ratio and the bar."""
    rows: list[tuple[str, str, str]] = []

    def row(name: str, value: str, check: str = "") -> None:
        rows.append((name, value, check))

    def bar(ratio: float | None, target: float) -> str:
        if ratio is None:
            return "–"
        verdict = "met" if ratio >= target else f"missed by {target - ratio:.2f}"
        return f"{ratio:.2f} (target >= {target}: {verdict})"

    loop, engine, boot = f.get("loop", {}), f.get("engine", {}), f.get("bootstrap", {})
    row(f"engine: generated tok/s on the loop's prompts ({concurrency} at once)", str(engine.get("gen_tok_s", "–")))
    row("agent loop: generated tok/s", str(loop.get("gen_tok_s", "–")),
        "loop / engine " + bar(_ratio(loop.get("gen_tok_s"), engine.get("gen_tok_s")), 0.9))
    row("agent loop: episodes/hour", str(loop.get("episodes_h", "–")))
    row("bootstrap stage: episodes/hour (kept/hour)", f"{boot.get('episodes_h', '–')} ({boot.get('kept_h', '–')})",
        "bootstrap / loop " + bar(_ratio(boot.get("episodes_h"), loop.get("episodes_h")), 0.9))
    if boot.get("split"):
        row("bootstrap slot-time split", ", ".join(f"{k} {v:.0%}" for k, v in boot["split"].items()))
    prompted = f.get("eval_prompted", {})
    for key, label in (("eval_prompted", "prompted"), ("eval_lora", "tuned, LoRA"), ("eval_merged", "tuned, merged")):
        e = f.get(key)
        if e:
            # episodes/hour moves with how many steps a model takes; generated tok/s against the engine replaying
            # the same requests compares like for like
            vs = _ratio(e.get("episodes_h"), prompted.get("episodes_h"))
            row(f"eval {label}: episodes/hour (prompt tok/episode)",
                f"{e['episodes_h']} ({e['prompt_tokens_per_episode']})",
                "" if key == "eval_prompted" or vs is None else f"vs prompted {vs:.2f}x (not a target: steps differ)")
            row(f"eval {label}: generated tok/s (engine on the same requests)",
                f"{e['gen_tok_s']} ({e.get('engine_gen_tok_s', '–')})",
                "eval / engine " + bar(_ratio(e.get("gen_tok_s"), e.get("engine_gen_tok_s")), 0.9))
    t = f.get("training")
    if t:
        actune_tok = t.get("actune", {}).get("tokens_s")
        trl_tok = t.get("trl", {}).get("tokens_s")
        row("training: actune train tokens/s (plain TRL SFTTrainer)", f"{actune_tok} ({trl_tok})",
            "actune / TRL " + bar(_ratio(actune_tok, trl_tok), 1.5))
    if "server_start_s" in f:
        row("server start (s)", str(f["server_start_s"]))
    for stage, mb in f.get("peak_memory_mb", {}).items():
        row(f"peak memory, {stage} (MB)", str(mb))
    for stage, s in (f.get("quickstart_stages_s") or {}).items():
        row(f"quickstart stage wall time: {stage} (s)", str(s))
    lines = [f"Machine: {f.get('machine', '?')}", "", "| figure | value | ratio |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    run_script(main)
