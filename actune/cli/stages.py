"""The stage commands: ``actune bootstrap|export|train|eval CONFIG [key=value ...]``.

One table, one shape (:func:`actune.cli.stage_command.register_stage`): each reads a run config with
overrides and hands its stage only the sections it needs. What follows each command's name below is its
``--help`` text.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from actune.cli.stage_command import COLLECT_ERRORS, register_stage, section_qualifier

if TYPE_CHECKING:
    from actune.cli.run_config import RunConfig

BOOTSTRAP_DOC = """``actune bootstrap CONFIG [key=value ...]``: collect judged trajectories into the run's store.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``bootstrap`` section and, when
``bootstrap.endpoints`` is empty, starts a server from its ``serve`` section. Overrides are
``bootstrap.concurrency=8`` (or any run-config key, e.g. ``serve.port=8001``); a key that is a
bootstrap field may omit the ``bootstrap.`` prefix. Rerunning resumes from the store.
"""

EXPORT_DOC = """``actune export CONFIG [key=value ...]``: kept records of the bootstrap stores -> a training dataset.

Reads the run config's ``bootstrap.store`` and ``bootstrap.export`` (more stores, the adapter's step
format every record is converted into, dedupe, per-task cap, method shares) and writes ``train.dataset``
(a ``datasets`` folder with ``export_summary.json``, replaced atomically) in ``train.wire_format`` (text:
segments with per-segment loss flags; chat: messages with per-turn flags), then prints what each filter
left out, per source method. Overrides are run-config keys; ``dataset=...`` and ``wire_format=...`` may
omit ``train.``, ``store=...`` may omit ``bootstrap.``, and ``stores``, ``steps_method``,
``method_shares``, ``max_per_task`` and ``dedupe_similarity`` may omit ``bootstrap.export.``.
"""

TRAIN_DOC = """``actune train CONFIG [key=value ...]``: LoRA-fine-tune the base model on the exported dataset.

Reads the run config's ``train`` section (TrainConfig); overrides are ``train.max_steps=10`` or any
run-config key, and a key that is a train field may omit the ``train.`` prefix. Holds out
``train.eval_fraction`` of the tasks as a dev slice and keeps the checkpoint with the lowest dev loss.
Writes to ``train.output_dir`` (replaced atomically): the adapter, ``actune_prompt.json``,
``training_meta.json``, ``training_tasks.json``, ``loss.png`` and, with ``train.merge=true``,
``merged/`` (base model with the adapter merged in). A rerun resumes from the last complete checkpoint
in ``<output_dir>.checkpoints``.
"""

EVAL_DOC = """``actune eval CONFIG [key=value ...]``: run every eval model through the same agent loop and report.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``eval`` section and, when
``eval.endpoints`` is empty, starts one server per base model from its ``serve`` section (one after the
other, each with its base's adapters loaded). The report leads with ``correct_grounded`` (correct and every
supporting page read). An eval whose tasks overlap a model's training tasks is refused. Overrides are
``eval.tasks.limit=100`` (or any run-config key, e.g. ``serve.port=8001``); a key that is an eval field may
omit the ``eval.`` prefix. Rerunning resumes from the per-model stores in ``eval.out_dir``
and rewrites the report (``report.md``, ``report.json``, ``scores.png``).
"""

_SHORT = {"dataset": "train", "wire_format": "train", "store": "bootstrap", "stores": "bootstrap.export",
          "steps_method": "bootstrap.export", "method_shares": "bootstrap.export",
          "max_per_task": "bootstrap.export", "dedupe_similarity": "bootstrap.export"}


def _qualify_export(overrides: list[str]) -> list[str]:
    out = []
    for item in overrides:
        head = item.split("=", 1)[0].strip()
        if head in _SHORT:
            item = f"{_SHORT[head]}.{item.strip()}"
        out.append(item)
    return out


def _run_bootstrap(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.bootstrap.run import run_bootstrap

    run_bootstrap(run.bootstrap, run.serve, name=run.name, show_progress=not args.no_progress)


def _run_export(run: "RunConfig", args: argparse.Namespace) -> None:
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


def _run_train(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.train.run import train

    train(run.train)


def _run_eval(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.eval.run import run_eval

    run_eval(run.eval, run.serve, name=run.name, show_progress=not args.no_progress)


QUALIFY = {"bootstrap": section_qualifier("bootstrap"), "export": _qualify_export,
           "train": section_qualifier("train"), "eval": section_qualifier("eval")}
"""Each command's short override keys -> full keys (``concurrency=4`` -> ``bootstrap.concurrency=4``)."""


def register(sub: argparse._SubParsersAction) -> None:
    register_stage(sub, "bootstrap", doc=BOOTSTRAP_DOC,
                   help="generate, judge and keep correct trajectories (resumable)",
                   config_help="run config YAML (its bootstrap and serve sections are used)",
                   example="bootstrap.target_correct=100", run=_run_bootstrap, qualify=QUALIFY["bootstrap"],
                   progress=True, errors=COLLECT_ERRORS)
    register_stage(sub, "export", doc=EXPORT_DOC,
                   help="export kept trajectories as a training dataset (text or chat)",
                   config_help="run config YAML (its bootstrap.store, bootstrap.export and train section are used)",
                   example="train.wire_format=chat", run=_run_export, qualify=QUALIFY["export"],
                   errors=["actune.bootstrap.export:ExportError", "actune.trajectory:TrajectoryFormatError"])
    register_stage(sub, "train", doc=TRAIN_DOC,
                   help="LoRA-fine-tune on the exported dataset (TRL SFT, masked observations)",
                   config_help="run config YAML (its train section is used)", example="train.max_steps=10",
                   run=_run_train, qualify=QUALIFY["train"], errors=["actune.train.run:TrainError"])
    register_stage(sub, "eval", doc=EVAL_DOC,
                   help="evaluate prompted and fine-tuned models side by side (resumable)",
                   config_help="run config YAML (its eval and serve sections are used)",
                   example="eval.tasks.limit=100", run=_run_eval, qualify=QUALIFY["eval"], progress=True,
                   errors=COLLECT_ERRORS)
