"""``actune train`` of one round in a child process of the quickstart, which exits when the adapter is written.

Why not in the quickstart's process: trainings one after another in one process slow down (four ran at half the
first one's rate by the fourth, resident size 9 GB by then: docs/reliability.md), and a training's memory, torch
threads and allocator state should not outlive it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Any

from actune.agent.config import AgentConfig
from actune.envs.config import EnvConfig
from actune.runtime.stop_signals import stop_signals_as_interrupt
from actune.serve.config import ServeConfig
from actune.tasks.config import TaskConfig
from actune.train.checkpoints import run_identity, trained_already
from actune.train.common import TrainError
from actune.train.config import TrainConfig
from actune.train.grpo import RolloutSpec
from actune.train.objectives import train_objective

__all__ = ["train_in_child_process"]


def _stop_when_orphaned(parent: int, every_s: float = 1.0) -> None:
    """SIGTERM this process once ``parent`` is gone (killed with no chance to stop its children): a
    training would otherwise run on alone, holding the cores."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _train_child(config_json: str, errors: Any, rollouts_json: dict[str, str] | None = None,
                 serve_json: str | None = None) -> None:
    """The child's side of :func:`train_in_child_process`: train, or send back what stopped it."""
    _stop_when_orphaned(os.getppid())
    try:
        with stop_signals_as_interrupt():
            rollouts, serve = _rollout_settings(rollouts_json, serve_json)
            train_objective(TrainConfig.model_validate_json(config_json), rollouts=rollouts, serve=serve,
                            log=lambda m: print(m, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - every error goes back to the parent, which raises it
        try:
            errors.send(e)
        except Exception:  # noqa: BLE001 - an exception that does not pickle goes back as its text
            errors.send(RuntimeError(f"{type(e).__name__}: {e}"))
        sys.exit(1)


def _rollout_settings(rollouts_json: dict[str, str] | None, serve_json: str | None) -> tuple[Any, Any]:
    if rollouts_json is None:
        return None, None

    spec = RolloutSpec(tasks=TaskConfig.model_validate_json(rollouts_json["tasks"]),
                       env=EnvConfig.model_validate_json(rollouts_json["env"]),
                       agent=AgentConfig.model_validate_json(rollouts_json["agent"]))
    return spec, ServeConfig.model_validate_json(serve_json) if serve_json else None


def train_in_child_process(cfg: TrainConfig, *, rollouts: RolloutSpec | None = None, serve: ServeConfig | None = None,
                           stop_timeout_s: float = 120.0) -> None:
    """``actune train`` of ``cfg`` in a fresh process, which exits when the adapter is written (GRPO: ``rollouts``
    and ``serve`` as :func:`actune.train.objectives.train_objective` takes them).

    An error in the child is raised here as itself; a stop (SIGTERM, Ctrl-C) here stops the child first (it
    unwinds as ``actune train`` does, its last complete checkpoint is where a rerun resumes) and waits for it, so
    no process is left behind. An adapter of exactly this training already in ``cfg.output_dir`` (a run stopped
    after saving it, before the stage was noted done) is kept, not trained again."""
    if trained_already(run_identity(cfg), cfg.output_dir):
        print(f"train: {cfg.output_dir} holds this training's adapter already (the run stopped after saving it); "
              "kept", file=sys.stderr, flush=True)
        return
    ctx = multiprocessing.get_context("spawn")  # fork after torch and the HTTP client's threads is unsafe
    receive, send = ctx.Pipe(duplex=False)
    rollouts_json = (None if rollouts is None else
                     {"tasks": rollouts.tasks.model_dump_json(), "env": rollouts.env.model_dump_json(),
                      "agent": rollouts.agent.model_dump_json()})
    serve_json = serve.model_dump_json() if serve is not None else None
    child = ctx.Process(target=_train_child, args=(cfg.model_dump_json(), send, rollouts_json, serve_json),
                        name="actune-train")
    child.start()
    send.close()
    try:
        child.join()
    except BaseException:
        if child.is_alive():
            child.terminate()
            child.join(stop_timeout_s)
            if child.is_alive():
                child.kill()
                child.join()
        raise
    if child.exitcode == 0:
        return
    if receive.poll():
        raise receive.recv()
    if child.exitcode == 130:
        raise KeyboardInterrupt

    raise TrainError(f"training of {cfg.output_dir} died (exit code {child.exitcode}); rerun to resume from its "
                     "last complete checkpoint")
