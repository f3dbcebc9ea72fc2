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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="LoRA-fine-tune on the exported dataset (TRL SFT, masked observations)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="run config YAML (its train section is used)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.max_steps=10")
    p.set_defaults(func=_train)


def qualify_overrides(overrides: list[str]) -> list[str]:
    """Short keys (``max_steps=10``) mean this stage's section."""
    from actune.run_config import qualify_section_overrides

    return qualify_section_overrides(overrides, "train")


def _train(args: argparse.Namespace) -> int:
    import sys

    from actune.config import load_config
    from actune.run_config import RunConfig
    from actune.train.run import TrainError, train

    run = load_config(RunConfig, args.config, qualify_overrides(list(args.overrides)))
    try:
        train(run.train)
    except TrainError as e:
        print(f"actune train: {e}", file=sys.stderr)
        return 2
    return 0
