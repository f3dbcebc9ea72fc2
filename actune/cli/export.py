"""``actune export CONFIG [key=value ...]``: kept records of the bootstrap stores -> a training dataset.

Reads the run config's ``bootstrap.store`` and ``bootstrap.export`` (more stores, the adapter's step
format every record is converted into, dedupe, per-task cap, method shares) and writes ``train.dataset``
(a ``datasets`` folder with ``export_summary.json``, replaced atomically) in ``train.wire_format`` (text:
segments with per-segment loss flags; chat: messages with per-turn flags), then prints what each filter
left out, per source method. Overrides are run-config keys; ``dataset=...`` and ``wire_format=...`` may
omit ``train.``, ``store=...`` may omit ``bootstrap.``, and ``stores``, ``steps_method``,
``method_shares``, ``max_per_task`` and ``dedupe_similarity`` may omit ``bootstrap.export.``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from actune.cli.stage_command import register_stage

if TYPE_CHECKING:
    from actune.cli.run_config import RunConfig

_SHORT = {"dataset": "train", "wire_format": "train", "store": "bootstrap", "stores": "bootstrap.export",
          "steps_method": "bootstrap.export", "method_shares": "bootstrap.export",
          "max_per_task": "bootstrap.export", "dedupe_similarity": "bootstrap.export"}


def register(sub: argparse._SubParsersAction) -> None:
    register_stage(sub, "export", doc=__doc__, help="export kept trajectories as a training dataset (text or chat)",
                   config_help="run config YAML (its bootstrap.store, bootstrap.export and train section are used)",
                   example="train.wire_format=chat", run=_run, qualify=qualify_overrides,
                   errors=["actune.bootstrap.export:ExportError", "actune.trajectory:TrajectoryFormatError"])


def qualify_overrides(overrides: list[str]) -> list[str]:
    out = []
    for item in overrides:
        head = item.split("=", 1)[0].strip()
        if head in _SHORT:
            item = f"{_SHORT[head]}.{item.strip()}"
        out.append(item)
    return out


def _run(run: "RunConfig", args: argparse.Namespace) -> None:
    from functools import cache

    from actune.bootstrap.export import ExportError, export_dataset

    boot = run.bootstrap

    @cache
    def actions(env: str) -> str:
        # Only asked when records must be converted and no record of the target format names the
        # environment's actions; the adapter will act in bootstrap.env, so its actions are the ones.
        if env != boot.env.name:
            raise ExportError(f"records of env {env!r} need converting into {boot.export.steps_method} steps, "
                              f"but bootstrap.env is {boot.env.name!r} (export them with a config for {env})")
        from actune.envs.factory import make_env

        return make_env(boot.env).describe_actions()

    stores = [boot.store, *boot.export.stores]
    summary = export_dataset(stores, run.train.dataset, run.train.wire_format, boot.export, actions=actions)
    print(f"exported {summary.exported} kept trajectories ({run.train.wire_format}) in {summary.steps_method} "
          f"steps from {', '.join(map(str, stores))} to {run.train.dataset}")
    print(summary.table())
