"""Replay imported trajectories' actions in a local environment, so that their observations are what the tuned
model will see at eval time.

    summary = replay_store("imports/0/imported.jsonl", "imports/0/trajectories.jsonl", env_config)

A teacher's released trajectories carry the observations of the search it ran (FireAct's GPT-4 set: Google
snippets), not those of the corpus a user trains against. Each record's actions run again, in order, in a fresh
episode of the environment; every observation is replaced by what the environment returns, and the pages read
become the record's own. A record is dropped (``missed``) when one of its searches opens no page here: its later
steps would rest on text the model can never see. Kept records keep their verdict (correct by construction, as
imported) with their grounding read anew. Appends to the destination store, skipping episodes it already holds,
so a stopped replay resumes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actune.envs.base import Action, Environment
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.judge import judge, record_verdict
from actune.records.store import TrajectoryStore
from actune.records.trajectory import Trajectory, read_trajectories

__all__ = ["ReplaySummary", "replay_trajectory", "replay_store"]


@dataclass
class ReplaySummary:
    total: int = 0
    replayed: int = 0
    missed: int = 0
    """Records with a search that opened no page here (left out)."""
    already: int = 0
    """Records the destination store already held (a resumed replay)."""
    examples: list[str] = field(default_factory=list)
    """The first few missed searches, ``episode: search[...]``."""


def replay_trajectory(traj: Trajectory, env: Environment) -> tuple[Trajectory | None, str | None]:
    """(the record with this environment's observations, None) or (None, the search that opened no page)."""
    env.reset(traj.task)  # type: ignore[arg-type]
    out = copy.deepcopy(traj)
    titles: list[str] = []
    last: Any = None
    for step in out.steps:
        if step.type == "action" and step.action_name:
            last = env.step(Action(step.action_name, step.action_arg or ""))
            read = list(last.info.get("titles") or [])
            if step.action_name == "search" and not read:
                return None, f"search[{step.action_arg}]"
            titles += read
        elif step.type == "observation" and last is not None:
            step.text = last.observation
            last = None
    out.info["env_info"] = {**(out.info.get("env_info") or {}), "titles": list(dict.fromkeys(titles))}
    out.info.setdefault("import", {})["replayed"] = True
    return out, None


def replay_store(source: str | Path, dest: str | Path, env: EnvConfig) -> ReplaySummary:
    """Replay every record of ``source`` into ``dest`` (see the module docstring)."""
    summary = ReplaySummary()
    environment = make_env(env)
    with TrajectoryStore.open(dest) as store:
        for traj in read_trajectories(source):
            summary.total += 1
            # a replayed record keeps its (task, method, attempt): the state the store read on opening knows it
            if store.state.has(traj.task.id, traj.method, traj.attempt):
                summary.already += 1
                continue
            replayed, missed = replay_trajectory(traj, environment)
            if replayed is None:
                summary.missed += 1
                if len(summary.examples) < 5:
                    summary.examples.append(f"{traj.episode_id}: {missed}")
                continue
            store.append(record_verdict(replayed, judge(replayed, require_grounded=False)))
            summary.replayed += 1
    return summary
