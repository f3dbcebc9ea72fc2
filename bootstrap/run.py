"""The bootstrap stage: many episodes with a prompted model, judged, the correct ones kept.

    actune bootstrap configs/smollm2-cpu.yaml bootstrap.target_correct=100

Top to bottom, :func:`run_bootstrap` does:

1. load the tasks (``bootstrap.tasks``) and open the store (``bootstrap.store``); a rerun resumes:
   every (task, attempt) already in the store under ``agent.method`` is skipped (the store may hold other
   methods' episodes too) and the store's kept records count towards the target;
2. list what is left: attempt 0 of every task, then attempt 1, ... (breadth first, so stopping at the
   target leaves kept episodes spread over many tasks rather than many attempts of a few);
3. use ``bootstrap.endpoints``, or start a vLLM server from the ``serve`` section for the run;
4. :func:`collect`: ``concurrency`` episodes in flight, each with its own environment (wiki envs on
   one corpus share its opened index), judged (:mod:`actune.bootstrap.judge`) and appended to the
   store as it finishes; once ``target_correct`` are kept the episodes still running are cancelled and
   not written;
5. summarize the store (per task kind) to the terminal and ``summary.json`` beside the store.

Each attempt has its own seed (derived from ``agent.seed``, the task id and the attempt), so a resumed
run samples the same episodes it would have sampled without the interruption.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from actune.agent.config import AgentConfig
from actune.agent.loop import Scorer, run_episode
from actune.bootstrap.judge import judge, record_verdict
from actune.bootstrap.progress import Progress, format_summary, summarize, summary_path, write_summary
from actune.bootstrap.store import TrajectoryStore
from actune.config import ConfigError
from actune.envs.base import Environment
from actune.run_config import RunConfig
from actune.task import Task
from actune.trajectory import ModelRecord

__all__ = ["run_bootstrap", "collect", "pending_episodes", "make_run_id", "CollectResult", "CollectError"]


def make_run_id(name: str) -> str:
    """``NAME-YYYYmmdd-HHMMSS`` (UTC): which invocation wrote a record (a resumed store holds several)."""
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def pending_episodes(tasks: list[Task], attempts_per_task: int, store: TrajectoryStore,
                     method: str) -> list[tuple[Task, int]]:
    """(task, attempt) pairs not yet in the store under ``method``, attempt-major (all tasks' attempt 0
    first). The store keys episodes by (task, method, attempt): episodes of other methods in the same
    store are not this run's, so they neither count as done nor block it."""
    return [(t, a) for a in range(attempts_per_task) for t in tasks if not store.has(t.id, method, a)]


class CollectError(RuntimeError):
    """Too many episodes failed (raised, rather than ending with an answer or a finish reason)."""


@dataclass
class CollectResult:
    written: int = 0
    """Records appended by this call."""
    kept: int = 0
    """Of those, kept."""
    failed: int = 0
    """Episodes that raised (not written; a rerun retries them)."""
    target_reached: bool = False


async def collect(
    episodes: Iterable[tuple[Task, int]],
    make_env: Callable[[], Environment],
    llm: Any,
    agent: AgentConfig,
    store: TrajectoryStore,
    *,
    concurrency: int,
    target_correct: int,
    require_grounded: bool = True,
    model: ModelRecord | None = None,
    run_id: str = "",
    progress: Progress | None = None,
    scorer: Scorer | None = None,
    max_failed: int = 20,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True),
    stage: str = "bootstrap",
) -> CollectResult:
    """Run ``episodes`` with ``concurrency`` in flight, judge each and append it to ``store``.

    Stops when every episode is done or the store holds ``target_correct`` kept records; episodes
    still in flight then are cancelled and not written. A record is written only by code with no
    ``await`` between the episode's end and the append, so cancelling this coroutine (Ctrl-C, a test)
    never leaves half a record or a duplicate. An episode that raises is logged and skipped (a rerun
    retries it); more than ``max_failed`` such failures re-raise the last one.
    """
    result = CollectResult()
    if store.kept >= target_correct:
        result.target_reached = True
        return result
    queue = iter(episodes)  # shared by the workers: each pair is taken exactly once
    stop = asyncio.Event()
    failure: list[BaseException] = []
    live = 0

    async def worker(env: Environment) -> None:
        nonlocal live
        try:
            for task, attempt in queue:
                if stop.is_set():
                    return
                try:
                    traj = await run_episode(task, env, llm, agent, model=model, attempt=attempt,
                                             run_id=run_id, scorer=scorer)
                except Exception as e:  # a bug or a refused request: skip it, say so, retry next run
                    result.failed += 1
                    log(f"{stage}: episode (task {task.id!r}, attempt {attempt}) failed: "
                        f"{type(e).__name__}: {e}")
                    if result.failed > max_failed:
                        failure.append(e)
                        stop.set()
                        return
                    continue
                if stop.is_set():
                    return  # the target was reached while this one ran: not written
                verdict = judge(traj, require_grounded)
                store.append(record_verdict(traj, verdict))
                result.written += 1
                result.kept += int(verdict.kept)
                if progress is not None:
                    progress.episode(verdict.kept)
                if store.kept >= target_correct:
                    result.target_reached = True
                    stop.set()
                    return
        except Exception:
            stop.set()  # the judge or the store failed: stop every worker; re-raised below
            raise
        finally:
            live -= 1
            if live == 0:
                stop.set()

    envs = [make_env() for _ in range(concurrency)]  # built before any episode starts: a bad env fails here
    live = len(envs)
    workers = [asyncio.create_task(worker(env)) for env in envs]
    try:
        await stop.wait()
    finally:
        for w in workers:
            w.cancel()
        outcomes = await asyncio.gather(*workers, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
    if failure:
        e = failure[0]
        raise CollectError(f"more than {max_failed} episodes failed; the last: {type(e).__name__}: {e}") from e
    return result


def run_bootstrap(run: RunConfig, *, show_progress: bool = True, run_id: str | None = None) -> dict[str, Any]:
    """Run the bootstrap stage of ``run`` to completion (or the target) and return its summary."""
    from actune.envs.factory import make_env
    from actune.llm import ClientConfig, LLMClient
    from actune.serve.server import endpoints_or_server
    from actune.tasks.loading import load_tasks

    cfg = run.bootstrap
    run_id = run_id or make_run_id(run.name)

    # 1. tasks and the store
    tasks = load_tasks(cfg.tasks)
    if not tasks:
        raise ConfigError(f"bootstrap.tasks: no tasks loaded from {cfg.tasks.path or cfg.tasks.hf_dataset}")
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise ConfigError(f"bootstrap.tasks: task id {t.id!r} appears twice; the store keys episodes by "
                              "task id, so ids must be unique")
        seen.add(t.id)

    interrupted = False
    with TrajectoryStore.open(cfg.store) as store:
        if store.cut_bytes:
            print(f"bootstrap: {store.path}: removed a torn last line ({store.cut_bytes} bytes) left by an "
                  "interrupted write", file=sys.stderr)
        if store.records:
            print(f"bootstrap: resuming {store.path}: {store.records} episodes already done, "
                  f"{store.kept} kept", file=sys.stderr)

        # 2. what is left
        todo = pending_episodes(tasks, cfg.attempts_per_task, store, cfg.agent.method)
        total = len(tasks) * cfg.attempts_per_task
        if not todo or store.kept >= cfg.target_correct:
            print("bootstrap: nothing to do (all episodes done or target reached)", file=sys.stderr)
        else:
            # 3. a server, 4. collection
            with endpoints_or_server(cfg.endpoints, cfg.model or "", run.serve) as (endpoints, served):
                model_name = cfg.model or served
                print(f"bootstrap: {len(todo)} episodes to run on {', '.join(endpoints)} (model {model_name!r}), "
                      f"{cfg.concurrency} at once; run id {run_id}", file=sys.stderr, flush=True)

                async def _collect() -> None:
                    client = ClientConfig(endpoints=endpoints, model=model_name, max_concurrency=cfg.concurrency)
                    async with LLMClient(client) as llm:
                        # done: this run's episodes, not store.records (the store may also hold other
                        # methods' and tasks' episodes)
                        with Progress(total, total - len(todo), store.kept, cfg.target_correct,
                                      enabled=show_progress) as progress:
                            await collect(todo, lambda: make_env(cfg.env), llm, cfg.agent, store,
                                          concurrency=min(cfg.concurrency, len(todo)),
                                          target_correct=cfg.target_correct, require_grounded=cfg.require_grounded,
                                          model=ModelRecord(name=model_name), run_id=run_id, progress=progress,
                                          max_failed=cfg.max_failed_episodes)

                try:
                    asyncio.run(_collect())
                except KeyboardInterrupt:
                    interrupted = True  # what finished is stored; the summary still tells

    # 5. summary
    summary = summarize(cfg.store, tasks=len(tasks), attempts_per_task=cfg.attempts_per_task,
                        target_correct=cfg.target_correct, run_id=run_id, interrupted=interrupted)
    path = write_summary(summary, summary_path(cfg.store))
    print(format_summary(summary))
    print(f"bootstrap: summary written to {path}", file=sys.stderr)
    if interrupted:
        raise KeyboardInterrupt
    return summary

