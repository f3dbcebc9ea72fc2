"""``actune train CONFIG [key=value ...]``: LoRA-fine-tune the base model on the exported dataset.

Reads the run config's ``train`` section (TrainConfig); overrides are ``train.max_steps=10`` or any
run-config key, and a key that is a train field may omit the ``train.`` prefix. Holds out
``train.eval_fraction`` of the tasks as a dev slice and keeps the checkpoint with the lowest dev loss.
Writes to ``train.output_dir`` (replaced atomically): the adapter, ``actune_prompt.json``,
``training_meta.json``, ``training_tasks.json``, ``loss.png`` and, with ``train.merge=true``,
``merged/`` (base model with the adapter merged in). A rerun resumes from the last complete checkpoint
in ``<output_dir>.checkpoints``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from actune.cli.stage_command import register_stage, section_qualifier

if TYPE_CHECKING:
    from actune.cli.run_config import RunConfig


def register(sub: argparse._SubParsersAction) -> None:
    register_stage(sub, "train", doc=__doc__,
                   help="LoRA-fine-tune on the exported dataset (TRL SFT, masked observations)",
                   config_help="run config YAML (its train section is used)", example="train.max_steps=10",
                   run=_run, qualify=qualify_overrides, errors=["actune.train.run:TrainError"])


qualify_overrides = section_qualifier("train")


def _run(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.train.run import train

    train(run.train)
