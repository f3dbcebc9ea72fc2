"""The eval stage: every model through the same agent loop on the same tasks, scored side by side.

    actune eval configs/smollm2-cpu.yaml eval.tasks.limit=100

Top to bottom, :func:`run_eval` does:

1. load the tasks (``eval.tasks``) and plan each model (:func:`plan_models`): a prompted model runs
   ``eval.agent`` against the base model; a model with an adapter runs ``eval.agent`` with the adapter's
   prompt spec applied (method, regime, wire format it was trained in) and sends its requests to the
   adapter's served name (:func:`adapter_name`: the label and a hash of the weights, so a retrained
   adapter never reuses a stale server copy);
2. open one store per model, ``out_dir/<label>/trajectories.jsonl`` (:mod:`actune.bootstrap.store`):
   a rerun resumes, running only the (task, attempt) pairs not yet stored;
3. use ``eval.endpoints`` (loading adapters they do not serve yet) or start one server from the
   ``serve`` section with every adapter loaded;
4. per model, :func:`actune.bootstrap.run.collect` runs ``concurrency`` episodes at once, each judged (the
   judge's grounding verdict is kept in the record) and appended to the model's store as it finishes;
5. read the stores back (only this run's tasks and attempts), compute scores with bootstrap intervals,
   per-kind scores, failure modes and paired tests against the first model, and write ``report.json``,
   ``report.md`` and ``scores.png`` into ``out_dir``.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.agent.config import AgentConfig
from actune.agent.prompt_spec import PROMPT_SPEC_FILE, find_prompt_spec, load_prompt_spec
from actune.bootstrap.progress import Progress
from actune.bootstrap.run import collect, make_run_id, pending_episodes
from actune.bootstrap.store import TrajectoryStore
from actune.config import ConfigError
from actune.eval.config import EvalConfig, EvalModel
from actune.eval.report import ModelResult, build_report, write_report
from actune.run_config import RunConfig
from actune.serve.config import ServeConfig
from actune.task import Task
from actune.trajectory import ModelRecord, Trajectory, read_trajectories

__all__ = ["PlannedModel", "adapter_name", "plan_models", "store_path", "run_eval", "ensure_adapters"]


@dataclass
class PlannedModel:
    """One model as eval runs it."""

    label: str
    agent: AgentConfig
    """The loop settings its episodes run with."""
    request_model: str
    """The name its requests carry: the base model's served name or the adapter's."""
    record: ModelRecord
    """What its records say about the model (``name``: base served name; ``adapter``: adapter name)."""
    adapter: Path | None = None


def adapter_name(label: str, folder: str | Path) -> str:
    """``<label>-<first 10 hex of sha256(weights)>``: the adapter's name on the server."""
    folder = Path(folder)
    weights = next((folder / n for n in ("adapter_model.safetensors", "adapter_model.bin")
                    if (folder / n).is_file()), None)
    if weights is None:
        raise ConfigError(f"{folder}: not a LoRA adapter folder (no adapter_model.safetensors or .bin)")
    h = hashlib.sha256()
    with weights.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{label}-{h.hexdigest()[:10]}"


def base_model(cfg: EvalConfig) -> str:
    """The base model every eval model shares (one server serves them all)."""
    names = {m.model for m in cfg.models}
    if len(names) > 1:
        raise ConfigError(f"eval.models: all models must share one base model (one server serves them, "
                          f"adapters on top); got {sorted(names)}")
    return cfg.models[0].model


def served_base_name(cfg: EvalConfig, serve: ServeConfig) -> str:
    return cfg.served_model or serve.served_model_name or base_model(cfg)


def plan_models(cfg: EvalConfig, serve: ServeConfig) -> list[PlannedModel]:
    """Each model's loop settings and request name (see the module docstring, step 1)."""
    served = served_base_name(cfg, serve)
    plans = []
    for i, m in enumerate(cfg.models):
        plans.append(_plan_one(i, m, cfg.agent, served))
    return plans


def _plan_one(i: int, m: EvalModel, agent: AgentConfig, served: str) -> PlannedModel:
    if m.adapter is None:
        return PlannedModel(m.label, agent, served, ModelRecord(name=served))
    folder = Path(m.adapter)
    if not folder.is_dir():
        raise ConfigError(f"eval.models[{i}].adapter: {folder} is not a folder")
    if find_prompt_spec(folder) is None:
        raise ConfigError(f"eval.models[{i}].adapter: {folder} has no {PROMPT_SPEC_FILE}, so eval cannot know the "
                          "loop format it was trained in; training writes it (or write one with "
                          "actune.agent.prompt_spec.save_prompt_spec)")
    spec = load_prompt_spec(folder)
    name = adapter_name(m.label, folder)
    return PlannedModel(m.label, spec.apply(agent), name, ModelRecord(name=served, adapter=name), folder)


def store_path(cfg: EvalConfig, label: str) -> Path:
    return Path(cfg.out_dir) / label / "trajectories.jsonl"


def ensure_adapters(endpoints: list[str], plans: list[PlannedModel], api_key: str | None = None) -> list[str]:
    """Load every planned adapter an endpoint does not serve yet; return the names loaded."""
    from actune.serve.adapters import load_adapter, served_models

    loaded = []
    for url in endpoints:
        have = set(served_models(url, api_key))
        for p in plans:
            if p.adapter is not None and p.request_model not in have:
                load_adapter(url, p.request_model, p.adapter, api_key)
                have.add(p.request_model)
                loaded.append(p.request_model)
    return loaded


def _records_for(path: Path, tasks: list[Task], attempts: int) -> list[Trajectory]:
    """The store's records of this run's tasks and attempts (a store may hold more from earlier runs)."""
    if not path.exists():
        return []
    ids = {t.id for t in tasks}
    return [t for t in read_trajectories(path) if t.task.id in ids and t.attempt < attempts]


def _check_store_model(path: Path, plan: PlannedModel) -> None:
    """A resumed store must hold this model's episodes, not another adapter's."""
    if not path.exists():
        return
    for traj in read_trajectories(path):
        if traj.model.adapter != plan.record.adapter:
            raise ConfigError(f"{path}: holds episodes of adapter {traj.model.adapter!r}, but model "
                              f"{plan.label!r} is now {plan.record.adapter!r}; use another eval.out_dir or "
                              "remove that folder")
        return


def _load_unique_tasks(cfg: EvalConfig) -> list[Task]:
    from actune.tasks.loading import load_tasks

    tasks = load_tasks(cfg.tasks)
    if not tasks:
        raise ConfigError(f"eval.tasks: no tasks loaded from {cfg.tasks.path or cfg.tasks.hf_dataset}")
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise ConfigError(f"eval.tasks: task id {t.id!r} appears twice; the stores key episodes by task id")
        seen.add(t.id)
    return tasks


def run_eval(run: RunConfig, *, show_progress: bool = True, run_id: str | None = None) -> dict[str, Any]:
    """Run the eval stage of ``run`` (resuming what its stores hold) and return the report."""
    from actune.envs.factory import make_env
    from actune.llm import ClientConfig, LLMClient
    from actune.serve.server import endpoints_or_server

    cfg = run.eval
    run_id = run_id or make_run_id(run.name)

    # 1. tasks and plans
    tasks = _load_unique_tasks(cfg)
    plans = plan_models(cfg, run.serve)
    for p in plans:
        _check_store_model(store_path(cfg, p.label), p)

    # 2. what is left, per model
    todo: dict[str, list[tuple[Task, int]]] = {}
    for p in plans:
        with TrajectoryStore.open(store_path(cfg, p.label)) as store:
            todo[p.label] = pending_episodes(tasks, cfg.attempts, store, p.agent.method)
    total_left = sum(len(v) for v in todo.values())

    interrupted = False
    if total_left == 0:
        print("eval: nothing to run (every episode is stored); writing the report", file=sys.stderr)
    else:
        # 3. one server for all models
        serve = run.serve.model_copy(update={
            "model": base_model(cfg),
            "served_model_name": served_base_name(cfg, run.serve),
            "adapters": {**run.serve.adapters, **{p.request_model: str(p.adapter) for p in plans if p.adapter}},
        })
        with endpoints_or_server(cfg.endpoints, served_base_name(cfg, run.serve), serve) as (endpoints, _):
            if cfg.endpoints:
                for name in ensure_adapters(endpoints, plans, run.serve.api_key):
                    print(f"eval: loaded adapter {name} into {', '.join(endpoints)}", file=sys.stderr)
            print(f"eval: {total_left} episodes to run on {', '.join(endpoints)}, {cfg.concurrency} at once; "
                  f"run id {run_id}", file=sys.stderr, flush=True)

            # 4. the episodes, model after model
            async def _collect(p: PlannedModel, store: TrajectoryStore, left: list[tuple[Task, int]]) -> None:
                client = ClientConfig(endpoints=endpoints, model=p.request_model, api_key=run.serve.api_key,
                                      max_concurrency=cfg.concurrency)
                async with LLMClient(client) as llm:
                    total = len(tasks) * cfg.attempts
                    with Progress(total, store.records, store.kept, total, enabled=show_progress,
                                  label=f"eval {p.label}") as progress:
                        await collect(left, lambda: make_env(cfg.env), llm, p.agent, store,
                                      concurrency=min(cfg.concurrency, len(left)),
                                      target_correct=store.kept + len(left) + 1,  # never reached: run them all
                                      model=p.record, run_id=run_id, progress=progress,
                                      max_failed=cfg.max_failed_episodes, stage=f"eval {p.label}")

            try:
                for p in plans:
                    left = todo[p.label]
                    if not left:
                        continue
                    print(f"eval: {p.label}: {len(left)} episodes ({p.agent.method}, {p.agent.regime}, "
                          f"{p.agent.wire}; model {p.request_model!r})", file=sys.stderr, flush=True)
                    with TrajectoryStore.open(store_path(cfg, p.label)) as store:
                        asyncio.run(_collect(p, store, left))
            except KeyboardInterrupt:
                interrupted = True  # what finished is stored; the report covers it

    # 5. the report
    results = [
        ModelResult(label=p.label, model=base_model(cfg), adapter=str(p.adapter) if p.adapter else None,
                    adapter_name=p.record.adapter, store=str(store_path(cfg, p.label)),
                    records=_records_for(store_path(cfg, p.label), tasks, cfg.attempts))
        for p in plans
    ]
    report = build_report(results, samples=cfg.bootstrap_samples, confidence=cfg.confidence, seed=cfg.seed,
                          title=run.name, extra={"run_id": run_id, "tasks": len(tasks), "attempts": cfg.attempts,
                                                 "interrupted": interrupted})
    paths = write_report(report, cfg.out_dir)
    for m in report["models"]:
        est = m["metrics"]["correct"]
        score = "–" if est["mean"] is None else f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"
        print(f"{m['label']:<16} episodes {m['episodes']:>5}  correct {score}")
    print(f"eval: report in {paths['md']}, {paths['json']}, {paths['png']}", file=sys.stderr)
    if interrupted:
        raise KeyboardInterrupt
    return report
