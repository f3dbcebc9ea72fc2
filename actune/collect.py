"""Collection: run many episodes against a served model, judge each and append it to a store.

Both generating stages use it: bootstrap collects episodes to keep for training (stopping at a target of
kept ones), eval collects every episode of every model to score them. A store holds each (task, method,
attempt) once, so a rerun resumes with :func:`pending_episodes`; before appending, a stage checks that the
store's records of its method were produced as its own will be (:func:`producer_fingerprint`,
:meth:`actune.records.store.StoreState.check_producer`), and ``collect`` stamps that fingerprint into each record.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from actune.agent.config import AgentConfig
from actune.agent.loop import Scorer, run_episode, task_kind
from actune.config import ConfigError
from actune.envs.base import Environment
from actune.judge import judge, record_verdict
from actune.records.store import FINGERPRINT_KEY, StoreState, TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import ModelRecord, Trajectory
from actune.runtime.progress import Progress
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks

__all__ = ["collect", "pending_episodes", "make_run_id", "load_unique_tasks", "producer_fingerprint",
           "task_file_id", "CollectResult", "CollectError", "RestartableServer", "not_stored"]

FINGERPRINT_VERSION = 1


def load_unique_tasks(cfg: TaskConfig, section: str) -> list[Task]:
    """The tasks of ``cfg`` (the ``<section>.tasks`` key, named in errors); none loaded, or an id twice, is
    an error: stores key episodes by task id."""
    tasks = load_tasks(cfg)
    if not tasks:
        raise ConfigError(f"{section}.tasks: no tasks loaded from {cfg.path or cfg.hf_dataset}")
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            raise ConfigError(f"{section}.tasks: task id {t.id!r} appears twice; the store keys episodes by "
                              "task id, so ids must be unique")
        seen.add(t.id)
    return tasks


def make_run_id(name: str) -> str:
    """``NAME-YYYYmmdd-HHMMSS`` (UTC): which invocation wrote a record (a resumed store holds several)."""
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def _sha(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8",
                                                                                      "surrogatepass")).hexdigest()[:12]


def task_file_id(cfg: TaskConfig, tasks: list[Task]) -> dict[str, str]:
    """``{"task_file": where the tasks come from, "tasks": hash of every (id, question) it holds}``.

    The hash covers the whole file, not the slice ``where``/``offset``/``limit``/``react_subset`` picks from it
    (``tasks`` when nothing is picked; the file is read again otherwise): runs on several slices of one file
    share a store (quickstart's per-kind passes), while an edit that gives an id another question (tasks
    without ids are numbered by position) changes it."""
    picked = cfg.where or cfg.offset or cfg.limit is not None or cfg.react_subset or cfg.exclude_react_subset
    every = tasks if not picked else load_tasks(cfg.model_copy(update={
        "where": {}, "offset": 0, "limit": None, "react_subset": False, "exclude_react_subset": False,
        "keep_context": False}))
    source = cfg.path or f"hf:{cfg.hf_dataset}" + (f"/{cfg.hf_config}" if cfg.hf_config else "")
    return {"task_file": f"{source} ({cfg.split})", "tasks": _sha(sorted([t.id, t.question] for t in every))}


def producer_fingerprint(model: ModelRecord, agent: AgentConfig, env: str, task_file: dict[str, str],
                         tasks: list[Task], *, base: str | None = None) -> dict[str, Any]:
    """What produces a stage's records (stored in each as ``info["fingerprint"]``, compared by the store):
    the served model name, its base model (``base``; left out when the stage does not know it: endpoints it
    was handed), the adapter, the prompt regime, wire format and exemplar set (as the loop resolves it for an
    ``env`` environment), a hash of the whole prompt spec, and the task file (:func:`task_file_id`).

    The prompt hash leaves out what cannot change the prompt (exemplars when zero-shot, the prefill of the
    text wire), and takes exemplar kinds ``[K]`` on tasks that are all of kind K as ``[task]``: each task sees
    the exemplars of its own kind either way, so per-kind passes and one type-matched run agree."""
    few_shot = agent.regime == "few_shot"
    kinds = agent.exemplar_kinds
    if kinds is not None and len(kinds) == 1 and tasks and all(task_kind(t) == kinds[0] for t in tasks):
        kinds = ["task"]
    spec: dict[str, Any] = {"method": agent.method, "regime": agent.regime, "wire": agent.wire}
    if agent.wire == "chat":
        spec["chat_prefill"] = agent.chat_prefill
    if agent.fidelity != "actune":  # a store made under one fidelity must not resume under the other
        spec["fidelity"] = agent.fidelity
    if few_shot:
        spec.update(exemplar_set=agent.exemplar_set, exemplar_kinds=kinds, num_exemplars=agent.num_exemplars,
                    paper_prompt_file=str(agent.paper_prompt_file) if agent.paper_prompt_file else None,
                    paper_prompt_key=agent.paper_prompt_key)
    fingerprint: dict[str, Any] = {"version": FINGERPRINT_VERSION, "model": model.name}
    if base is not None:
        fingerprint["base"] = base
    fingerprint.update(
        adapter=model.adapter, regime=agent.regime, wire=agent.wire,
        # as the loop names it in ModelRecord.exemplar_set
        exemplar_set=(agent.paper_prompt_key or agent.exemplar_set or env) if few_shot else None,
        prompt=_sha(spec), **task_file)
    return fingerprint


def pending_episodes(tasks: list[Task], attempts_per_task: int, store: TrajectoryStore | StoreState,
                     method: str) -> list[tuple[Task, int]]:
    """(task, attempt) pairs not yet in the store under ``method``, attempt-major (all tasks' attempt 0
    first). The store keys episodes by (task, method, attempt): episodes of other methods in the same
    store are not this run's, so they neither count as done nor block it."""
    return [(t, a) for a in range(attempts_per_task) for t in tasks if not store.has(t.id, method, a)]


class CollectError(RuntimeError):
    """Too many episodes failed (raised, or ended by a server that kept failing)."""


def not_stored(n: int, written: str) -> CollectError:
    """The error a stage raises when it ends with ``n`` episodes its model server failed (:attr:`CollectResult.
    server_lost`: not stored, each logged as it happened), after writing what covers the others (``written``: "the
    report"): the run is not done, and the same command runs them. An episode that raised for another reason (an
    environment's error, a request refused) is not counted: a rerun would fail it again."""
    return CollectError(f"{n} episodes not stored: the model server failed them (each is logged above); {written} "
                        "covers the others; the same command runs these")


class ServerFailedError(RuntimeError):
    """The model server failed an episode's request through all the client's retries."""


class RestartableServer(Protocol):
    """A model server the stage started itself (:class:`actune.serve.server.StageServer`), which ``collect``
    restarts in place when it dies under the run."""

    restarts: int
    """Restarts so far."""

    def alive(self) -> bool:
        """Whether it still runs and answers its health check."""

    def restart(self) -> None:
        """Stop what is left of it and start it again, waiting until it is healthy (blocking); raise when it
        may not be restarted any more or does not come back."""


@dataclass
class CollectResult:
    written: int = 0
    """Records appended by this call."""
    kept: int = 0
    """Of those, kept."""
    failed: int = 0
    """Episodes that raised or whose model server failed (not written; a rerun retries them)."""
    server_errors: int = 0
    """Of those, episodes ended by a server that kept failing (after the client's own retries)."""
    server_lost: int = 0
    """Episodes a server error left to a rerun (not run again in this call): not stored."""
    retried: int = 0
    """Episodes run again in this call after a server error."""
    restarts: int = 0
    """Times this call restarted the model server it was handed (``server``) after it died."""
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
    server_retries: int = 2,
    retry_pause_s: float = 5.0,
    fingerprint: dict[str, Any] | None = None,
    server: RestartableServer | None = None,
) -> CollectResult:
    """Run ``episodes`` with ``concurrency`` in flight, judge each and append it to ``store``.

    Stops when every episode is done or the store holds ``target_correct`` kept records; episodes
    still in flight then are cancelled and not written. A record is written only by code with no
    ``await`` between the episode's end and the append, so cancelling this coroutine (Ctrl-C, a test)
    never leaves half a record or a duplicate. An episode that raises is logged and skipped (a rerun
    retries it); more than ``max_failed`` such failures re-raise the last one.

    An episode ended by a server error (the client already retried its request with backoff) is a failed
    request, not a finished episode: it is never stored, since a stored record marks its (task, method,
    attempt) done for good. It is queued again after a pause (up to ``server_retries`` times) and
    counts as a failure, so a dead server stops the run after ``max_failed`` of them with a
    :class:`CollectError` (rerun to resume) instead of draining the queue into the store.

    ``server`` is the model server when the stage started it itself (None: endpoints it was handed). A server
    error then first asks whether that server died: if so, it is restarted in place (blocking the loop: no
    episode can run without it) and every episode it failed, this one and those in flight when it died, runs
    again, neither stored nor counted as failed. A server that may not be restarted any more
    (``serve.max_restarts``) or does not come back stops the run with a :class:`CollectError` naming why.

    ``fingerprint`` (:func:`producer_fingerprint`), checked against the store by the caller, goes into every
    record written as ``info["fingerprint"]``.
    """
    if store.kept >= target_correct:
        return CollectResult(target_reached=True)
    run = _Collection(
        queue=iter(episodes), llm=llm, agent=agent, store=store, target_correct=target_correct,
        require_grounded=require_grounded, model=model, run_id=run_id, progress=progress, scorer=scorer,
        max_failed=max_failed, log=log, stage=stage, server_retries=server_retries, retry_pause_s=retry_pause_s,
        fingerprint=fingerprint, server=server)
    envs = [make_env() for _ in range(concurrency)]  # built before any episode starts: a bad env fails here
    await run.run_workers(envs)
    if run.failure:
        e = run.failure[0]
        raise CollectError(f"more than {max_failed} episodes failed; the last: {type(e).__name__}: {e}; "
                           "what finished is stored: rerun to continue") from e
    return run.result


@dataclass
class _Collection:
    """One :func:`collect` call: its settings, and what its workers share (the episodes left, the tally)."""
    queue: Iterator[tuple[Task, int]]
    """Shared by the workers: each pair is taken exactly once."""
    llm: Any
    agent: AgentConfig
    store: TrajectoryStore
    target_correct: int
    require_grounded: bool
    model: ModelRecord | None
    run_id: str
    progress: Progress | None
    scorer: Scorer | None
    max_failed: int
    log: Callable[[str], None]
    stage: str
    server_retries: int
    retry_pause_s: float
    fingerprint: dict[str, Any] | None
    server: RestartableServer | None
    result: CollectResult = field(default_factory=CollectResult)
    again: list[tuple[Task, int, int]] = field(default_factory=list)
    """``(task, attempt, tries)`` after a server error, taken before the queue."""
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    failure: list[BaseException] = field(default_factory=list)
    live: int = 0
    generation: int = 0
    """Restarts of ``server`` in this call: an episode started on an older one lost its server."""

    async def run_workers(self, envs: list[Environment]) -> None:
        """One worker per environment until the run stops; a worker's exception is raised here."""
        self.live = len(envs)
        workers = [asyncio.create_task(self.worker(env)) for env in envs]
        try:
            await self.stop.wait()
        finally:
            for w in workers:
                w.cancel()
            outcomes = await asyncio.gather(*workers, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome

    async def worker(self, env: Environment) -> None:
        try:
            while (item := self.take()) is not None:
                task, attempt, tries = item
                if self.stop.is_set():
                    return
                started_on = self.generation
                try:
                    traj = await run_episode(task, env, self.llm, self.agent, model=self.model, attempt=attempt,
                                             run_id=self.run_id, scorer=self.scorer)
                except ConfigError:
                    raise  # a config no episode can run with (exemplars the env has no action for): stop, named
                except Exception as e:  # a bug or a refused request: skip it, say so, retry next run
                    if self.episode_raised(task, attempt, e):
                        return
                    continue
                if self.stop.is_set():
                    return  # the target was reached while this one ran: not written
                if traj.finish_reason == "server_error":
                    if await self.server_failed(task, attempt, tries, traj, started_on):
                        return
                    continue
                if self.store_episode(traj):
                    return
        except Exception:
            self.stop.set()  # the judge or the store failed: stop every worker; re-raised by run_workers
            raise
        finally:
            self.live -= 1
            if self.live == 0:
                self.stop.set()

    def take(self) -> tuple[Task, int, int] | None:
        """The next ``(task, attempt, tries)``: an episode to run again first, then the queue's; None when both
        are empty."""
        if self.again:
            self.result.retried += 1
            return self.again.pop(0)
        item = next(self.queue, None)
        return None if item is None else (*item, 0)

    def episode_raised(self, task: Task, attempt: int, e: Exception) -> bool:
        """Count and log an episode that raised; True when that was one failure too many (the run stops)."""
        self.result.failed += 1
        self.log(f"{self.stage}: episode (task {task.id!r}, attempt {attempt}) failed: {type(e).__name__}: {e}")
        return self.too_many_failures(e)

    def too_many_failures(self, e: BaseException) -> bool:
        if self.result.failed <= self.max_failed:
            return False
        self.failure.append(e)
        self.stop.set()
        return True

    async def server_failed(self, task: Task, attempt: int, tries: int, traj: Trajectory, started_on: int) -> bool:
        """An episode ended by a server error: run it again (after a pause unless its server was replaced) or
        leave it to a rerun; True when the run stops."""
        if self.server_replaced(started_on):
            self.again.append((task, attempt, tries))  # not a failure of the episode: run it again
            return False
        self.result.failed += 1
        self.result.server_errors += 1
        retry = tries < self.server_retries
        self.result.server_lost += not retry
        self.log(f"{self.stage}: episode (task {task.id!r}, attempt {attempt}) lost its model server: "
                 f"{traj.info.get('error', '')}; not stored, "
                 + ("run again after a pause" if retry else "a rerun retries it"))
        if self.too_many_failures(ServerFailedError(traj.info.get("error", "server error"))):
            return True
        if retry:
            await asyncio.sleep(self.retry_pause_s * 2 ** tries)
            self.again.append((task, attempt, tries + 1))
        return False

    def server_replaced(self, started_on: int) -> bool:
        """Whether the server an episode ended by a server error ran on is gone and replaced (restarting it now
        when it just died); False without a ``server`` or when it still runs (a failed request)."""
        server = self.server
        if server is None:
            return False
        if started_on == self.generation:
            if server.alive():
                return False
            self.log(f"{self.stage}: the model server died; restarting it")
            t0 = time.monotonic()
            try:
                server.restart()
            except Exception as e:  # the limit, or a server that does not come back: stop every worker
                raise CollectError(f"{e}; what finished is stored: rerun to continue") from e
            self.generation += 1
            self.result.restarts += 1
            self.log(f"{self.stage}: model server restarted in {time.monotonic() - t0:.0f} s "
                     f"(restart {server.restarts}); the episodes it lost run again")
        return True

    def store_episode(self, traj: Trajectory) -> bool:
        """Judge a finished episode and append it (no ``await`` in here: a record is written whole or not at
        all); True when the store now holds the target of kept records (the run stops)."""
        verdict = judge(traj, self.require_grounded)
        if self.fingerprint is not None:
            traj.info[FINGERPRINT_KEY] = dict(self.fingerprint)
        self.store.append(record_verdict(traj, verdict))
        self.result.written += 1
        self.result.kept += int(verdict.kept)
        if self.progress is not None:
            self.progress.episode(verdict.kept)
        if self.store.kept >= self.target_correct:
            self.result.target_reached = True
            self.stop.set()
            return True
        return False
