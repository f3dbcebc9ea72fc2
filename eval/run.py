"""The eval stage: every model through the same agent loop on the same tasks, scored side by side.

    actune eval configs/smollm2-cpu.yaml eval.tasks.limit=100

:func:`run_eval` plans each model (prompted, or an adapter or merged model run with the prompt spec it was
trained in: :func:`plan_models`), refuses to score a model on tasks it was trained on (:func:`check_leakage`),
opens one resumable store per model (``out_dir/<label>/trajectories.jsonl``), serves the models group by group
(their own endpoints, ``eval.endpoints``, or one server per base model: :func:`group_by_base`), runs and judges
every episode through :func:`actune.collect.collect`, and writes ``report.json``, ``report.md`` and
``scores.png``: scores with bootstrap intervals (``correct_grounded`` first), per-kind scores, cost, failure
modes and paired tests against the first model. One loop, one task set, one judge: the report compares models.

The rules in full: docs/modules.md, actune.eval.run.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import actune.envs.factory
import actune.llm
from actune.agent.config import AgentConfig
from actune.agent.prompt_spec import PROMPT_SPEC_FILE, find_prompt_spec, load_prompt_spec
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
from actune.eval.config import EvalConfig, EvalModel, model_agent
from actune.eval.report import ModelResult, build_report, foreign_report_file, write_report
from actune.eval.stats import HEADLINE
from actune.eval.yardsticks import run_yardsticks
from actune.llm import ClientConfig, RetryPolicy, read_api_key
from actune.records.store import StoreState, TrajectoryStore, read_state
from actune.records.task_record import Task
from actune.records.training_tasks import TRAINING_TASKS_FILE, read_training_tasks
from actune.records.trajectory import ModelRecord, Trajectory, read_trajectories
from actune.runtime.progress import Progress
from actune.runtime.provenance import provenance
from actune.runtime.trackers import check_trackers, eval_metrics, log_to_trackers
from actune.serve.adapters import adapter_name, check_serves, load_adapter, served_models
from actune.serve.config import ServeConfig
from actune.serve.hardware import served_dtype
from actune.serve.server import Serving, serving
from actune.text import normalise_question

if TYPE_CHECKING:
    from actune.serve.server import StageServer

__all__ = ["PlannedModel", "ServerGroup", "TRAINING_TASKS_FILE", "adapter_name", "base_models", "served_names",
           "merged_model_folder", "plan_models", "group_by_base", "plan_groups", "group_serve_config", "server_for",
           "check_endpoints", "check_leakage", "endpoint_kind", "endpoint_note", "store_path", "run_eval",
           "ensure_adapters"]

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
    base: str = ""
    """Its base model (``eval.models[i].model``): the server it needs."""
    prompt_spec: Path | None = None
    """The ``actune_prompt.json`` applied to its loop (an adapter's, else a merged model's)."""
    prompt_spec_source: str | None = None
    """``adapter`` or ``merged``: where ``prompt_spec`` comes from (None: no spec)."""
    agent_overrides: dict[str, Any] = field(default_factory=dict)
    """Its ``eval.models[i].agent``."""
    endpoints: list[str] = field(default_factory=list)
    """Its own endpoints (``eval.models[i].endpoints``): no server is started for it. Empty: served like the
    others."""
    api_key_env: str | None = None
    """The variable holding the key of the endpoints it runs against: its own endpoints'
    (``eval.models[i].api_key_env``), else ``eval.endpoints``' (``eval.api_key_env``). None: no key from the
    environment (``serve.api_key`` for a server of ours)."""
    retries: RetryPolicy = field(default_factory=RetryPolicy)
    """How its requests are retried: ``eval.models[i].retries``, else ``eval.retries``."""

    def spec_note(self) -> dict[str, Any] | None:
        """What its records say about the prompt spec (``info["prompt_spec"]``), None without one."""
        if self.prompt_spec is None:
            return None
        return {"source": self.prompt_spec_source, "path": str(self.prompt_spec),
                "spec": load_prompt_spec(self.prompt_spec).model_dump()}


@dataclass
class ServerGroup:
    """Models sharing one base model, so one server (their adapters loaded on it)."""

    base: str
    served_name: str
    """The base model's name in requests."""
    models: list[PlannedModel]
    endpoints: list[str] = field(default_factory=list)
    """The models' own endpoints (and ``api_key_env`` their key's variable): nothing is started for this group.
    Empty: a server eval starts from ``serve`` (or ``eval.endpoints``)."""
    api_key_env: str | None = None

    @property
    def adapters(self) -> dict[str, str]:
        """Adapter name -> folder, for the server of this group."""
        return {p.request_model: str(p.adapter) for p in self.models if p.adapter is not None}


def base_models(cfg: EvalConfig) -> list[str]:
    """The base models of the models without endpoints of their own (those eval serves), each once, in order
    of first appearance."""
    return list(dict.fromkeys(m.model for m in cfg.models if not m.endpoints))


def served_names(cfg: EvalConfig, serve: ServeConfig) -> dict[str, str]:
    """Base model -> its name in requests. One base: ``eval.served_model``, else ``serve.served_model_name``,
    else the base itself (as before several bases were allowed). Several: ``serve.served_model_name`` names
    ``serve.model`` only (the serve section is shared with other stages); every other base is served under
    its own ``model``."""
    bases = base_models(cfg)
    if len(bases) == 1:
        return {bases[0]: cfg.served_model or serve.served_model_name or bases[0]}
    if cfg.served_model and bases:
        raise ConfigError(f"eval.served_model: names one base model, but eval.models name {len(bases)} "
                          f"({', '.join(bases)}); leave it empty (each base is served under its own model)")
    return {b: serve.served_model_name if serve.served_model_name and b == serve.model else b for b in bases}


def merged_model_folder(model: str) -> Path | None:
    """The folder of a merged model: ``model`` is a local folder holding ``actune_prompt.json`` (written by
    ``train.merge=true``). None for a model name, a Hugging Face id or a folder without a spec."""
    folder = Path(model).expanduser()
    return folder if folder.is_dir() and find_prompt_spec(folder) is not None else None


def plan_models(cfg: EvalConfig, serve: ServeConfig, labels: list[str] | None = None) -> list[PlannedModel]:
    """Each model's loop settings and request name, in ``eval.models`` order (module docstring, step 1); only
    those ``labels`` names when given (their request names are still chosen among every model's bases, so a
    model is named alike whichever others run with it). A model with its own endpoints is asked for by its
    ``model``."""
    served = served_names(cfg, serve)
    if unknown := sorted(set(labels or ()) - {m.label for m in cfg.models}):
        raise ConfigError(f"eval: no model labelled {', '.join(map(repr, unknown))} in eval.models "
                          f"({', '.join(m.label for m in cfg.models)})")
    return [_plan_one(cfg, i, m.model if m.endpoints else served[m.model]) for i, m in enumerate(cfg.models)
            if labels is None or m.label in labels]


def _plan_one(cfg: EvalConfig, i: int, served: str) -> PlannedModel:
    m: EvalModel = cfg.models[i]
    try:
        agent = model_agent(cfg, i)
    except ValueError as e:  # validated on load; a config built with model_copy skips that
        raise ConfigError(str(e)) from None
    spec_file: Path | None = None
    source: str | None = None
    merged = merged_model_folder(m.model)
    if merged is not None:
        # a merged model learnt one loop format, as its adapter did: the same spec, applied the same way
        agent = load_prompt_spec(merged).apply(agent)
        spec_file, source = merged / PROMPT_SPEC_FILE, "merged"
    common = {"base": m.model, "agent_overrides": dict(m.agent), "endpoints": list(m.endpoints),
              "api_key_env": m.api_key_env if m.endpoints else cfg.api_key_env, "retries": m.retries or cfg.retries}
    if m.adapter is None:
        return PlannedModel(m.label, agent, served, ModelRecord(name=served), prompt_spec=spec_file,
                            prompt_spec_source=source, **common)
    folder = Path(m.adapter)
    if not folder.is_dir():
        raise ConfigError(f"eval.models[{i}].adapter: {folder} is not a folder")
    if find_prompt_spec(folder) is None:
        raise ConfigError(f"eval.models[{i}].adapter: {folder} has no {PROMPT_SPEC_FILE}, so eval cannot know the "
                          "loop format it was trained in; training writes it (or write one with "
                          "actune.agent.prompt_spec.save_prompt_spec)")
    spec = load_prompt_spec(folder)
    name = adapter_name(m.label, folder)
    return PlannedModel(m.label, spec.apply(agent), name, ModelRecord(name=served, adapter=name), folder,
                        prompt_spec=folder / PROMPT_SPEC_FILE, prompt_spec_source="adapter", **common)


def group_by_base(plans: list[PlannedModel]) -> list[ServerGroup]:
    """The planned models grouped by base model, groups in order of first appearance and models in their
    own order within a group. Models with their own endpoints group by base, endpoints and key variable: they
    share no server with the others."""
    groups: dict[tuple, ServerGroup] = {}
    for p in plans:
        key = (p.base, tuple(p.endpoints), p.api_key_env)
        if key not in groups:
            groups[key] = ServerGroup(p.base, p.record.name, [], list(p.endpoints), p.api_key_env)
        groups[key].models.append(p)
    return list(groups.values())


def plan_groups(cfg: EvalConfig, serve: ServeConfig) -> list[ServerGroup]:
    """The servers eval needs and the models each runs (no server is started)."""
    return group_by_base(plan_models(cfg, serve))


def group_serve_config(group: ServerGroup, serve: ServeConfig, groups: int = 1) -> ServeConfig:
    """The ``serve`` section for ``group``'s server: its base, served name and adapters. The section's own
    ``adapters`` are for ``serve.model``; they are kept for that base (and when there is one base only, as
    before several bases were allowed)."""
    keep = serve.adapters if groups == 1 or group.base == serve.model else {}
    if any(m.agent.wire == "tools" for m in group.models):
        serve = serve.for_wire("tools")
    return serve.model_copy(update={"model": group.base, "served_model_name": group.served_name,
                                    "adapters": {**keep, **group.adapters}})


def server_for(cfg: EvalConfig, serve: ServeConfig, label: str) -> tuple[ServeConfig, str]:
    """(serve section, the name its requests carry) of the server :func:`run_eval` would start for model ``label``.
    A caller that starts it to run other episodes too (the quickstart's bootstrap rounds) hands it back to
    :func:`run_eval` with ``served`` and ``labels``."""
    plan = plan_models(cfg, serve, [label])[0]
    group = group_by_base([plan])[0]
    return group_serve_config(group, serve, len(base_models(cfg))), plan.request_model


def check_endpoints(cfg: EvalConfig) -> None:
    """``eval.endpoints`` serve one base model: refuse models on several (models with their own endpoints
    aside)."""
    bases = base_models(cfg)
    if cfg.endpoints and len(bases) > 1:
        raise ConfigError(f"eval.endpoints: one endpoint serves one base model, but eval.models name {len(bases)} "
                          f"({', '.join(bases)}); run one eval per base with its endpoints, or leave eval.endpoints "
                          "empty to start one server per base")


def _training_folders(m: EvalModel) -> list[Path]:
    folders = [Path(m.adapter)] if m.adapter is not None else []
    base = Path(m.model).expanduser()
    if base.is_dir():  # a merged model (or any local fine-tune that kept its training tasks)
        folders.append(base)
    return folders


def check_leakage(cfg: EvalConfig, tasks: list[Task]) -> None:
    """Refuse to score a model on tasks it was trained on: for each adapter or merged model folder with a
    ``training_tasks.json``, no eval task may share a training task's id or normalised question."""
    for i, m in enumerate(cfg.models):
        for folder in _training_folders(m):
            path = folder / TRAINING_TASKS_FILE
            if not path.is_file():
                continue
            seen = read_training_tasks(path)
            ids = {t["id"] for t in seen}
            questions = {q for q in (normalise_question(t["question"]) for t in seen) if q}
            leaked = [t for t in tasks if t.id in ids or normalise_question(t.question) in questions]
            if leaked:
                examples = ", ".join(f"{t.id!r} ({t.question!r})" for t in leaked[:3])
                raise ConfigError(f"eval.models[{i}] ({m.label!r}): {len(leaked)} of {len(tasks)} eval tasks are "
                                  f"among its training tasks ({path}), e.g. {examples}; evaluate it on tasks it "
                                  "was not trained on (another split)")


def endpoint_kind(cfg: EvalConfig, plan: PlannedModel) -> str:
    """What serves ``plan``: ``model_endpoints`` (its own, a hosted teacher say), ``eval_endpoints`` or
    ``started_server`` (a server eval starts from ``serve``)."""
    if plan.endpoints:
        return "model_endpoints"
    return "eval_endpoints" if cfg.endpoints else "started_server"


def endpoint_note(kind: str, endpoints: list[str], api_key_env: str | None = None) -> dict[str, Any]:
    """What a record and the report say served a model: ``{"kind", "endpoints", "api_key_env"}``. The URLs lose
    any user, password, query and fragment; the key is never there, only the name of its variable."""
    return {"kind": kind, "endpoints": [_public_url(u) for u in endpoints], "api_key_env": api_key_env}


def _public_url(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def store_path(cfg: EvalConfig, label: str) -> Path:
    return Path(cfg.out_dir) / label / "trajectories.jsonl"


def ensure_adapters(endpoints: list[str], plans: list[PlannedModel], api_key: str | None = None) -> list[str]:
    """Load every planned adapter an endpoint does not serve yet; return the names loaded."""
    loaded = []
    for url in endpoints:
        have = set(served_models(url, api_key))
        for p in plans:
            if p.adapter is not None and p.request_model not in have:
                load_adapter(url, p.request_model, p.adapter, api_key)
                have.add(p.request_model)
                loaded.append(p.request_model)
    return loaded


class _NotingStore:
    """A model's store that notes, in each record it appends, ``notes`` (``info[key] = value``): the prompt
    spec the loop ran with (``info["prompt_spec"]``), what served the model (``info["endpoint"]``).
    ``collect`` is shared with bootstrap and writes the records itself, so the store is where eval can add
    to them."""

    def __init__(self, store: TrajectoryStore, notes: dict[str, Any]) -> None:
        self._store = store
        self._notes = notes

    def append(self, traj: Trajectory) -> None:
        traj.info.update(copy.deepcopy(self._notes))
        self._store.append(traj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _records_for(path: Path, tasks: list[Task], attempts: int, method: str) -> list[Trajectory]:
    """The store's records of this run's tasks, attempts and method (a store may hold more from earlier
    runs, other methods' included: the store keys episodes by task, method and attempt)."""
    if not path.exists():
        return []
    ids = {t.id for t in tasks}
    return [t for t in read_trajectories(path) if t.task.id in ids and t.attempt < attempts and t.method == method]


def _check_producer(state: StoreState, path: Path, plan: PlannedModel, fingerprint: dict[str, Any],
                    cfg: EvalConfig) -> list[str]:
    return state.check_producer(path, plan.agent.method, fingerprint, allow_mixed=cfg.allow_mixed_store,
                                option="eval.allow_mixed_store")


def _check_served(groups: list[ServerGroup], served: Serving) -> None:
    """Every group runs on ``served``, a server the caller started: the same base and served name."""
    started = served.server.cfg if served.server is not None else None
    for g in groups:
        if g.endpoints or started is None or g.base != started.model or g.served_name != served.model:
            raise ConfigError(f"eval: {', '.join(p.label for p in g.models)} need(s) base {g.base!r} served as "
                              f"{g.served_name!r}, but the server handed to this eval serves "
                              f"{started.model if started else served.endpoints!r} as {served.model!r}")


@dataclass
class _EvalRun:
    """What the steps of one :func:`run_eval` share: the settings, the plans and the episodes left."""

    cfg: EvalConfig
    serve: ServeConfig
    run_id: str
    served: Serving | None
    show_progress: bool
    tasks: list[Task]
    plans: list[PlannedModel]
    groups: list[ServerGroup]
    fingerprints: dict[str, dict[str, Any]]
    """Label -> what produces its records (:func:`actune.collect.producer_fingerprint`)."""
    todo: dict[str, list[tuple[Task, int]]]
    """Label -> its (task, attempt) pairs not stored yet."""
    server_lost: int = 0
    """Episodes of this run the model server failed (not stored: the same command runs them)."""


def run_eval(cfg: EvalConfig, serve: ServeConfig, *, name: str = "run", show_progress: bool = True,
             run_id: str | None = None, served: Serving | None = None,
             labels: list[str] | None = None) -> dict[str, Any] | None:
    """Run the eval stage (resuming what its stores hold) and return the report. ``serve`` starts the
    servers when ``cfg.endpoints`` is empty; ``name`` is the run's (run ids, the report's title).

    ``labels``: only these models run and are reported. ``served``: a server the caller started and keeps
    (the quickstart's bootstrap server, restarted in place if it dies), which every model of ``labels`` runs on
    (its base and served name must be theirs): no server is started, and no report is written (None is
    returned): the caller's later eval of every model finds these episodes stored and reports them all."""
    run = _prepare_eval(cfg, serve, run_id or make_run_id(name), served, show_progress, labels)
    interrupted, restarts = _run_episodes(run)
    if served is not None:  # episodes only: the caller's eval of every model reports them
        if interrupted:
            raise KeyboardInterrupt
        return None
    report = _report(run, name, interrupted, restarts)
    if interrupted:
        raise KeyboardInterrupt
    if run.server_lost:  # each logged as it happened: the report covers the rest, the rerun runs these
        raise not_stored(run.server_lost, "the report")
    return report


def _prepare_eval(cfg: EvalConfig, serve: ServeConfig, run_id: str, served: Serving | None, show_progress: bool,
                  labels: list[str] | None) -> _EvalRun:
    """Steps 1 to 3 (module docstring): tasks and plans, no model scored on its own training tasks, every
    store this model's, and what is left to run; every check that can fail fails here, before any server."""
    check_endpoints(cfg)
    check_trackers(cfg.report_to, "eval.report_to")
    if served is None and (foreign := foreign_report_file(cfg.out_dir)) is not None:  # the report would replace it
        raise ConfigError(f"{foreign}: exists and no eval wrote it; eval.out_dir gets report.json, report.md and "
                          "scores.png: choose another eval.out_dir")
    tasks = load_unique_tasks(cfg.tasks, "eval")
    plans = plan_models(cfg, serve, labels)
    groups = group_by_base(plans)
    if served is not None:
        _check_served(groups, served)
    check_leakage(cfg, tasks)
    task_file = task_file_id(cfg.tasks, tasks)
    fingerprints = {p.label: producer_fingerprint(p.record, p.agent, cfg.env.name, task_file, tasks, base=p.base)
                    for p in plans}
    todo = _episodes_left(cfg, tasks, plans, fingerprints)
    # the keys of the models with episodes left: a missing variable fails before any server
    for i, p in enumerate(plans):
        if p.api_key_env and todo[p.label]:
            read_api_key(p.api_key_env, f"eval.models[{i}].api_key_env" if p.endpoints else "eval.api_key_env")
    return _EvalRun(cfg, serve, run_id, served, show_progress, tasks, plans, groups, fingerprints, todo)


def _episodes_left(cfg: EvalConfig, tasks: list[Task], plans: list[PlannedModel],
                   fingerprints: dict[str, dict[str, Any]]) -> dict[str, list[tuple[Task, int]]]:
    """Label -> the pairs its store lacks, once every store was checked to hold this model's episodes (before
    any is created)."""
    for p in plans:
        path = store_path(cfg, p.label)
        if path.exists():
            for note in _check_producer(read_state(path), path, p, fingerprints[p.label], cfg):
                print(f"eval {p.label}: {note}", file=sys.stderr)
    todo: dict[str, list[tuple[Task, int]]] = {}
    for p in plans:
        with TrajectoryStore.open(store_path(cfg, p.label)) as store:
            todo[p.label] = pending_episodes(tasks, cfg.attempts, store, p.agent.method)
    return todo


def _run_episodes(run: _EvalRun) -> tuple[bool, int]:
    """Steps 4 and 5: every episode left, group by group; returns (interrupted, server restarts)."""
    interrupted = False
    started: list[StageServer] = []  # the servers eval started (each counts its restarts)
    if sum(len(v) for v in run.todo.values()) == 0:
        print("eval: nothing to run (every episode is stored)" + ("" if run.served else "; writing the report"),
              file=sys.stderr)
    else:
        try:
            local = [g for g in run.groups if not g.endpoints]
            for g in run.groups:
                busy = [p for p in g.models if run.todo[p.label]]
                if busy:  # a base with nothing left starts no server
                    _run_group(run, g, busy, len(local), started)
        except KeyboardInterrupt:
            interrupted = True  # what finished is stored; the report covers it
    restarts = sum(s.restarts for s in started)
    if restarts:
        print(f"eval: the model server died and was restarted {restarts} time(s) during this run", file=sys.stderr)
    return interrupted, restarts


def _run_group(run: _EvalRun, g: ServerGroup, busy: list[PlannedModel], n_local: int,
               started: list[StageServer]) -> None:
    """Step 4, one group: its models' own endpoints, the caller's server, ``eval.endpoints`` or a server of
    its own (started now, stopped at the end: one at a time), and on it the episodes of each model left."""
    cfg, serve, served = run.cfg, run.serve, run.served
    if served is not None:
        group_serving = contextlib.nullcontext(served)
    elif g.endpoints:
        group_serving = contextlib.nullcontext(Serving(g.endpoints, g.served_name))
    else:
        group_serving = serving(cfg.endpoints, g.served_name, group_serve_config(g, serve, n_local))
    key = read_api_key(g.api_key_env) if g.api_key_env else (None if g.endpoints else serve.api_key)
    with group_serving as on:
        endpoints = on.endpoints
        if on.server is not None and served is None:  # the caller counts its own server's restarts
            started.append(on.server)
        if (g.endpoints or cfg.endpoints) and served is None:  # servers actune did not start: this model?
            check_serves(endpoints, g.served_name, "eval.models[i].model (with its own endpoints)" if g.endpoints
                         else "eval.served_model", key)
        # a server handed over was started with the adapters its own stage needed, maybe not these
        if (g.endpoints or cfg.endpoints or served) and any(p.adapter is not None for p in busy):
            for loaded in ensure_adapters(endpoints, busy, key):
                print(f"eval: loaded adapter {loaded} into {mask_url_credentials(', '.join(endpoints))}",
                      file=sys.stderr)
        left_here = sum(len(run.todo[p.label]) for p in busy)
        key_note = f", key from ${g.api_key_env}" if g.api_key_env else ""
        what = f"model {g.served_name!r}" if g.endpoints else f"base {g.base!r}"
        print(f"eval: {left_here} episodes of {what} to run on {mask_url_credentials(', '.join(endpoints))}"
              f"{key_note}, {cfg.concurrency} at once; run id {run.run_id}", file=sys.stderr, flush=True)
        for p in busy:
            _run_model(run, p, on)


def _run_model(run: _EvalRun, p: PlannedModel, on: Serving) -> None:
    """Step 5, one model: its episodes left into its store, each record noting what served it."""
    left = run.todo[p.label]
    print(f"eval: {p.label}: {len(left)} episodes ({p.agent.method}, {p.agent.regime}, "
          f"{p.agent.wire}; model {p.request_model!r})", file=sys.stderr, flush=True)
    notes = {"endpoint": endpoint_note(endpoint_kind(run.cfg, p), on.endpoints, p.api_key_env)}
    if p.prompt_spec is not None:
        notes["prompt_spec"] = p.spec_note()
    with TrajectoryStore.open(store_path(run.cfg, p.label)) as store:
        # again under the lock: another process may have written since; warned above
        _check_producer(store.state, store.path, p, run.fingerprints[p.label], run.cfg)
        run.server_lost += asyncio.run(_collect_model(run, p, on, _NotingStore(store, notes), left)).server_lost


async def _collect_model(run: _EvalRun, p: PlannedModel, on: Serving, store: _NotingStore,
                         left: list[tuple[Task, int]]) -> CollectResult:
    cfg = run.cfg
    # the key from the variable it names (its own endpoints' or eval.endpoints'); else none for its own
    # endpoints (the serve section's key is for our servers, never sent elsewhere), else the serve section's
    client = ClientConfig(endpoints=on.endpoints, model=p.request_model, max_concurrency=cfg.concurrency,
                          api_key=None if p.endpoints or p.api_key_env else run.serve.api_key,
                          api_key_env=p.api_key_env,
                          **p.retries.model_dump())
    # the client and the env factory are looked up when called, so tests can swap in fakes
    async with actune.llm.LLMClient(client) as llm:
        total = len(run.tasks) * cfg.attempts
        # done: this run's episodes already stored (the store may hold other methods' too)
        with Progress(total, total - len(left), store.kept, total, enabled=run.show_progress,
                      label=f"eval {p.label}", kept_word="solved",
                      rate_word="solve rate") as progress:
            return await collect(left, lambda: actune.envs.factory.make_env(cfg.env), llm, p.agent, store,
                          concurrency=min(cfg.concurrency, len(left)),
                          target_correct=store.kept + len(left) + 1,  # never reached: run them all
                          model=p.record, run_id=run.run_id, progress=progress,
                          max_failed=cfg.max_failed_episodes, stage=f"eval {p.label}",
                          fingerprint=run.fingerprints[p.label], server=on.server)


def _report(run: _EvalRun, name: str, interrupted: bool, restarts: int) -> dict[str, Any]:
    """Step 6: the stores read back, scored, and written as ``report.json``, ``report.md`` and ``scores.png``."""
    cfg, tasks = run.cfg, run.tasks
    references = {m.label: m.compare_to for m in cfg.models}
    results = [
        ModelResult(label=p.label, model=p.base, adapter=str(p.adapter) if p.adapter else None,
                    adapter_name=p.record.adapter, store=str(store_path(cfg, p.label)),
                    records=_records_for(store_path(cfg, p.label), tasks, cfg.attempts, p.agent.method),
                    prompt_spec=str(p.prompt_spec) if p.prompt_spec else None, agent_overrides=p.agent_overrides,
                    endpoint=endpoint_note(endpoint_kind(cfg, p), p.endpoints or cfg.endpoints, p.api_key_env),
                    compare_to=references.get(p.label))
        for p in run.plans
    ]
    report = build_report(results, samples=cfg.bootstrap_samples, confidence=cfg.confidence, seed=cfg.seed,
                          yardsticks=_yardsticks(cfg, tasks), title=name,
                          extra={"run_id": run.run_id, "tasks": len(tasks), "attempts": cfg.attempts,
                                 "interrupted": interrupted, "server_restarts": restarts,
                                 "provenance": _provenance(run)})
    paths = write_report(report, cfg.out_dir)
    log_to_trackers(cfg.report_to, run_name=run.run_id, stage="eval", metrics=eval_metrics(report),
                    config=public_dump(cfg), log_dir=Path(cfg.out_dir) / "runs")
    for m in report["models"]:
        scores = "  ".join(f"{k} {_score_line(m['metrics'][k])}" for k in (HEADLINE, "correct"))
        print(f"{m['label']:<16} episodes {m['episodes']:>5}  {scores}")
    print(f"eval: report in {paths['md']}, {paths['json']}, {paths['png']}", file=sys.stderr)
    return report


def _yardsticks(cfg: EvalConfig, tasks: list[Task]) -> list[ModelResult]:
    """The content-free policies on ``tasks`` (none when ``eval.yardsticks`` is off, or on ALFWorld)."""
    if not cfg.yardsticks or cfg.env.name == "alfworld" or any(t.env == "alfworld" for t in tasks):
        return []

    train = load_unique_tasks(cfg.yardstick_train, "eval.yardstick_train") if cfg.yardstick_train else []
    return run_yardsticks(tasks, train, cfg.env)


def _provenance(run: _EvalRun) -> dict[str, Any]:
    """The provenance block; the dtype is the local servers' (models on their own endpoints run in theirs)."""
    local = any(not g.endpoints for g in run.groups) and not run.cfg.endpoints
    return provenance(served_dtype(run.serve) if local else None)


def _score_line(est: dict[str, Any]) -> str:
    return "–" if est["mean"] is None else f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"
