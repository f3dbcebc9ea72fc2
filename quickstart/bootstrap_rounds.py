"""The bootstrap stages: round 1 runs every pass of every method against ONE server of the base model, and the
prompted model's eval episodes on it too; round r >= 2 serves round r-1's tuned model, bootstraps with it
(zero-shot) on the training tasks no round solved yet, and runs its eval episodes. Each server is stopped before
training (on a small CPU the server and training fight for the cores)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from actune.agent.prompt_spec import load_prompt_spec
from actune.bootstrap.config import BootstrapConfig
from actune.bootstrap.run import run_bootstrap
from actune.collect import make_run_id
from actune.judge import verdict_of
from actune.quickstart.context import RunContext
from actune.quickstart.evaluation import eval_on, eval_serving, prompted_labels, round_model_label
from actune.records.store import StoreState, read_state
from actune.records.trajectory import read_trajectories
from actune.serve.config import ServeConfig
from actune.serve.server import serving
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks

if TYPE_CHECKING:
    from actune.serve.server import Serving

__all__ = ["round1_work", "bootstrap_round1", "solved_tasks", "bootstrap_later_round", "stored_state", "all_stored"]


def stored_state(store: Path) -> StoreState | None:
    """What ``store`` holds, or None for a store no stage has begun."""
    return read_state(store) if store.exists() and store.stat().st_size else None


def all_stored(state: StoreState | None, method: str, tasks: TaskConfig, attempts: int) -> bool:
    """Whether a store (``state``: :func:`stored_state`) holds ``attempts`` episodes of ``method`` on every task of
    ``tasks``: a resumed stage with none left to run starts no server (a minute on a CPU, more for a large model on a
    GPU)."""
    return state is not None and all((t.id, method, a) in state.done for t in load_tasks(tasks)
                                     for a in range(attempts))


def _run_bootstrap(run: RunContext, bootstrap: BootstrapConfig, serve: ServeConfig, run_id: str,
                   served: Serving) -> None:
    run_bootstrap(bootstrap, serve, name=run.cfg.name, show_progress=run.show_progress, run_id=run_id, served=served)


def round1_work(run: RunContext) -> list[tuple[str, int, BootstrapConfig]]:
    """(method, pass index, bootstrap config) of every round-1 pass that still has episodes to run."""
    cfg = run.cfg
    work = []
    for method in cfg.methods:
        store = run.layout.store(method, 1)
        state = stored_state(store)
        for i, p in enumerate(cfg.passes):
            target = max(1, math.ceil(p.share * cfg.bootstrap.target_correct))
            tasks = run.tasks("train", where={"kind": p.kind} if p.kind else {}, limit=p.limit)
            if state is not None and state.kept >= target or all_stored(state, method, tasks,
                                                                         cfg.bootstrap.attempts_per_task):
                continue
            agent = run.agent(cfg.bootstrap.agent, method,
                              exemplar_kinds=[p.kind] if p.kind and p.type_matched else None)
            boot = cfg.bootstrap.model_copy(update={
                "store": store, "target_correct": target, "env": run.env(cfg.bootstrap.env),
                "tasks": tasks, "agent": agent,
            })
            work.append((method, i, boot))
            state = None  # later passes depend on what this one keeps: let the stage decide
    return work


def bootstrap_round1(run: RunContext) -> None:
    cfg = run.cfg
    work = round1_work(run)
    if not work:  # a resumed run whose passes are all done: no server to start (eval runs what is left)
        run.log("bootstrap round 1: every pass is done")
        return
    run_id = make_run_id(f"{cfg.name}-r1")
    # one server for every pass, restarted in place if it dies (serve.max_restarts in all)
    with serving([], "", cfg.serve) as served:
        for method, i, boot in work:
            p = cfg.passes[i]
            run.log(f"bootstrap {method} round 1, pass {i + 1}/{len(cfg.passes)} "
                    f"({p.kind or 'all kinds'}): until {boot.target_correct} kept")
            boot = boot.model_copy(update={"endpoints": served.endpoints, "model": served.model})
            _run_bootstrap(run, boot, cfg.serve, run_id, served)
        for method in cfg.methods:
            eval_on(run, served, method, prompted_labels(run), run_id)


def solved_tasks(run: RunContext, method: str, before_round: int) -> set[str]:
    """Ids of the training tasks ``method`` kept an episode of in a round before ``before_round``."""
    solved: set[str] = set()
    for r in range(1, before_round):
        path = run.layout.store(method, r)
        if path.exists():
            solved |= {t.task.id for t in read_trajectories(path) if (v := verdict_of(t)) and v.kept}
    return solved


def _unsolved_tasks(run: RunContext, method: str, r: int) -> tuple[Path, int]:
    """Round ``r``'s task file for ``method`` (the training tasks no earlier round solved) and how many it holds;
    written once, so a resumed round works on the same tasks."""
    tasks_file = run.layout.round_tasks(method, r)
    if not tasks_file.exists():
        solved = solved_tasks(run, method, r)
        return tasks_file, run.write_train_tasks(tasks_file, lambda i: i not in solved)
    return tasks_file, sum(1 for line in tasks_file.read_text(encoding="utf-8").splitlines() if line.strip())


def bootstrap_later_round(run: RunContext, r: int) -> None:
    """Round ``r`` >= 2: each method's round r-1 model, zero-shot, on the tasks no round solved yet."""
    cfg = run.cfg
    run_id = make_run_id(f"{cfg.name}-r{r}")
    for method in cfg.methods:
        tasks_file, n_tasks = _unsolved_tasks(run, method, r)
        if n_tasks == 0:
            run.log(f"bootstrap {method} round {r}: every training task is solved; nothing to do")
            continue
        tasks = TaskConfig(format="custom", path=str(tasks_file), split="train")
        label = round_model_label(run, method, r - 1)
        if all_stored(stored_state(run.layout.store(method, r)), method, tasks, cfg.round_attempts):  # resumed
            run.log(f"bootstrap {method} round {r}: every episode is stored; the eval stage runs what is left of "
                    f"{label}'s")
            continue
        model, adapter = run.tuned_model(method, r - 1)
        spec = load_prompt_spec(adapter or Path(model))
        # served and asked for as the eval stage names it, so its eval episodes run on this server too
        serve, request_model = eval_serving(run, method, label)
        agent = spec.apply(run.agent(cfg.bootstrap.agent, method, temperature=cfg.round_temperature))
        run.log(f"bootstrap {method} round {r}: {n_tasks} unsolved training tasks x {cfg.round_attempts} "
                f"attempts with the round-{r - 1} model ({spec.regime}, {spec.wire})")
        with serving([], "", serve) as served:
            boot = cfg.bootstrap.model_copy(update={
                "store": run.layout.store(method, r), "endpoints": served.endpoints, "model": request_model,
                "attempts_per_task": cfg.round_attempts, "target_correct": n_tasks * cfg.round_attempts,
                "env": run.env(cfg.bootstrap.env), "tasks": tasks, "agent": agent,
            })
            _run_bootstrap(run, boot, serve, run_id, served)
            eval_on(run, served, method, [label], run_id)
