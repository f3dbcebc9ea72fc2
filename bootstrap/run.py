"""The bootstrap stage: many episodes with a prompted model, judged, the correct ones kept.

    actune bootstrap configs/smollm2-cpu.yaml bootstrap.target_correct=100

:func:`run_bootstrap` takes the ``bootstrap`` section and the ``serve`` section (how to start a server when
``bootstrap.endpoints`` is empty), nothing else. Collection itself is :mod:`actune.collect` (eval's too).

It opens the store (a rerun resumes; a store of another producer is refused: :func:`bootstrap_fingerprint`),
runs attempt 0 of every task, then attempt 1, ... (breadth first, so kept episodes spread over many tasks)
against ``bootstrap.endpoints`` or a server it starts, judges each episode (:mod:`actune.judge`) and appends it
as it finishes, stops once ``target_correct`` are kept, and writes ``summary.json`` beside the store. Each
attempt has its own seed, so a resumed run samples the episodes it would have sampled without the interruption.

The rules in full: docs/modules.md, actune.bootstrap.run.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING, Any

import actune.envs.factory
import actune.llm
from actune.bootstrap.config import BootstrapConfig
from actune.bootstrap.summary import foreign_summary, format_summary, summarize, summary_path, write_summary
from actune.collect import (
    CollectResult,
    collect,
    load_unique_tasks,
    make_run_id,
    not_stored,
    pending_episodes,
    producer_fingerprint,
    task_file_id,
)
from actune.config import ConfigError, mask_url_credentials, public_dump
from actune.llm import ClientConfig, read_api_key
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import ModelRecord
from actune.runtime.progress import Progress
from actune.runtime.provenance import provenance
from actune.runtime.trackers import bootstrap_metrics, check_trackers, log_to_trackers
from actune.serve.adapters import check_serves
from actune.serve.config import ServeConfig
from actune.serve.hardware import served_dtype
from actune.serve.server import serving

if TYPE_CHECKING:
    from actune.serve.server import Serving

__all__ = ["run_bootstrap", "bootstrap_fingerprint"]


def served_name(cfg: BootstrapConfig, serve: ServeConfig) -> str:
    """The model name bootstrap's requests carry: ``bootstrap.model``, else the name the server serves
    under (the one :func:`actune.serve.server.endpoints_or_server` yields), known before any server starts."""
    return cfg.model or serve.served_name


def bootstrap_fingerprint(cfg: BootstrapConfig, serve: ServeConfig, tasks: list[Task]) -> dict[str, Any]:
    """What produces this run's records (:func:`actune.collect.producer_fingerprint`); the base model is known
    only when bootstrap starts the server itself."""
    return producer_fingerprint(ModelRecord(name=served_name(cfg, serve)), cfg.agent, cfg.env.name,
                                task_file_id(cfg.tasks, tasks), tasks,
                                base=None if cfg.endpoints else serve.model)


def run_bootstrap(cfg: BootstrapConfig, serve: ServeConfig, *, name: str = "run", show_progress: bool = True,
                  run_id: str | None = None, served: Serving | None = None) -> dict[str, Any]:
    """Run the bootstrap stage to completion (or the target) and return its summary. ``serve`` starts the
    server when ``cfg.endpoints`` is empty; ``name`` is the run's (in run ids). ``served``: a server the
    caller started for several runs (the quickstart's passes share one), used as it is and restarted in
    place when it dies, as one started here would be."""
    run_id = run_id or make_run_id(name)
    check_trackers(cfg.report_to, "bootstrap.report_to")

    if (foreign := foreign_summary(cfg.store)) is not None:
        raise ConfigError(f"{foreign}: exists and is not a bootstrap summary; bootstrap writes its summary.json beside "
                          "bootstrap.store: choose another folder for the store")
    # 1. tasks and the store
    tasks = load_unique_tasks(cfg.tasks, "bootstrap")
    fingerprint = bootstrap_fingerprint(cfg, serve, tasks)

    interrupted = False
    restarts = lost = 0
    with TrajectoryStore.open(cfg.store) as store:
        _say_store_state(cfg, store, fingerprint)
        # 2. what is left
        todo = pending_episodes(tasks, cfg.attempts_per_task, store, cfg.agent.method)
        if not todo or store.kept >= cfg.target_correct:
            print("bootstrap: nothing to do (all episodes done or target reached)", file=sys.stderr)
        else:
            interrupted, restarts, lost = _run_episodes(cfg, serve, served, store, todo,
                                                        total=len(tasks) * cfg.attempts_per_task, run_id=run_id,
                                                        fingerprint=fingerprint, show_progress=show_progress)
            lost = lost if store.kept < cfg.target_correct else 0  # short of the target, episodes the server failed

    # 5. summary
    summary = summarize(cfg.store, tasks=len(tasks), attempts_per_task=cfg.attempts_per_task,
                        target_correct=cfg.target_correct, run_id=run_id, interrupted=interrupted)
    summary["server_restarts"] = restarts
    # the dtype of a server started here or handed over by the caller; an endpoint of its own runs in its own
    summary["provenance"] = provenance(served_dtype(serve) if served is not None or not cfg.endpoints else None)
    if restarts:
        print(f"bootstrap: the model server died and was restarted {restarts} time(s) during this run",
              file=sys.stderr)
    path = write_summary(summary, summary_path(cfg.store))
    log_to_trackers(cfg.report_to, run_name=run_id, stage="bootstrap", metrics=bootstrap_metrics(summary),
                    config=public_dump(cfg), log_dir=path.parent / "runs")
    print(format_summary(summary))
    print(f"bootstrap: summary written to {path}", file=sys.stderr)
    if interrupted:
        raise KeyboardInterrupt
    if lost:
        raise not_stored(lost, "the summary")
    return summary


def _say_store_state(cfg: BootstrapConfig, store: TrajectoryStore, fingerprint: dict[str, Any]) -> None:
    """Refuse a store another producer wrote (unless ``bootstrap.allow_mixed_store``), and say what it holds."""
    for note in store.state.check_producer(store.path, cfg.agent.method, fingerprint,
                                           allow_mixed=cfg.allow_mixed_store,
                                           option="bootstrap.allow_mixed_store"):
        print(f"bootstrap: {note}", file=sys.stderr)
    if store.cut_bytes:
        print(f"bootstrap: {store.path}: removed a torn last line ({store.cut_bytes} bytes) left by an "
              "interrupted write", file=sys.stderr)
    if store.records:
        print(f"bootstrap: resuming {store.path}: {store.records} episodes already done, "
              f"{store.kept} kept", file=sys.stderr)


def _run_episodes(cfg: BootstrapConfig, serve: ServeConfig, served: Serving | None, store: TrajectoryStore,
                  todo: list[tuple[Task, int]], *, total: int, run_id: str, fingerprint: dict[str, Any],
                  show_progress: bool) -> tuple[bool, int, int]:
    """Steps 3 and 4: a server, and the episodes left on it; returns (interrupted, server restarts, episodes the
    server failed: not stored)."""
    model_name = served_name(cfg, serve)
    serve = serve.for_wire(cfg.agent.wire)
    # a hosted teacher's key first: a missing variable fails before anything starts
    hosted_key = read_api_key(cfg.api_key_env, "bootstrap.api_key_env") if cfg.api_key_env else None
    shared_or_own = (contextlib.nullcontext(served) if served is not None
                     else serving(cfg.endpoints, cfg.model or "", serve))
    with shared_or_own as on:
        endpoints = on.endpoints
        if cfg.endpoints and served is None:  # a server actune did not start: does it serve this model?
            check_serves(endpoints, model_name, "bootstrap.model", hosted_key or serve.api_key)
        restarts_before = on.server.restarts if on.server else 0
        key_note = f", key from ${cfg.api_key_env}" if cfg.api_key_env else ""
        shown = mask_url_credentials(", ".join(endpoints))
        print(f"bootstrap: {len(todo)} episodes to run on {shown} (model {model_name!r}{key_note}), "
              f"{cfg.concurrency} at once; run id {run_id}", file=sys.stderr, flush=True)

        async def _collect() -> CollectResult:
            # The key: the variable bootstrap.api_key_env names (a hosted teacher), else the serve section's
            # (a keyed server, started here or not, refuses requests without it)
            client = ClientConfig(endpoints=endpoints, model=model_name, max_concurrency=cfg.concurrency,
                                  api_key=None if cfg.api_key_env else serve.api_key,
                                  api_key_env=cfg.api_key_env, **cfg.retries.model_dump())
            # the client and the env factory are looked up when called, so tests can swap in fakes
            async with actune.llm.LLMClient(client) as llm:
                # done: this run's episodes, not store.records (the store may also hold other
                # methods' and tasks' episodes)
                with Progress(total, total - len(todo), store.kept, cfg.target_correct,
                              enabled=show_progress) as progress:
                    return await collect(todo, lambda: actune.envs.factory.make_env(cfg.env), llm, cfg.agent, store,
                                  concurrency=min(cfg.concurrency, len(todo)),
                                  target_correct=cfg.target_correct, require_grounded=cfg.require_grounded,
                                  model=ModelRecord(name=model_name), run_id=run_id, progress=progress,
                                  max_failed=cfg.max_failed_episodes, fingerprint=fingerprint,
                                  server=on.server)

        interrupted, lost = False, 0
        try:
            lost = asyncio.run(_collect()).server_lost
        except KeyboardInterrupt:
            interrupted = True  # what finished is stored; the summary still tells
        restarts = on.server.restarts - restarts_before if on.server else 0
    return interrupted, restarts, lost
