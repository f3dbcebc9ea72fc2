"""``actune export CONFIG [key=value ...]``: kept records of the bootstrap store -> a training dataset.

Reads the run config's ``bootstrap.store`` and writes ``train.dataset`` (a ``datasets`` folder, replaced
atomically) in ``train.wire_format`` (text: segments with per-segment loss flags; chat: messages with
per-turn flags). Overrides are run-config keys; ``dataset=...`` and ``wire_format=...`` may omit
``train.``, ``store=...`` may omit ``bootstrap.``.
"""

from __future__ import annotations

import argparse

_SHORT = {"dataset": "train", "wire_format": "train", "store": "bootstrap"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export kept trajectories as a training dataset (text or chat)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="run config YAML (its bootstrap.store and train section are used)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. train.wire_format=chat")
    p.set_defaults(func=_export)


def qualify_overrides(overrides: list[str]) -> list[str]:
    out = []
    for item in overrides:
        head = item.split("=", 1)[0].strip()
        if head in _SHORT:
            item = f"{_SHORT[head]}.{item.strip()}"
        out.append(item)
    return out


def _export(args: argparse.Namespace) -> int:
    import sys

    from actune.bootstrap.export import ExportError, export_dataset
    from actune.config import load_config
    from actune.run_config import RunConfig
    from actune.trajectory import TrajectoryFormatError

    run = load_config(RunConfig, args.config, qualify_overrides(list(args.overrides)))
    try:
        n = export_dataset(run.bootstrap.store, run.train.dataset, run.train.wire_format)
    except (ExportError, TrajectoryFormatError) as e:
        print(f"actune export: {e}", file=sys.stderr)
        return 2
    print(f"exported {n} kept trajectories ({run.train.wire_format}) from {run.bootstrap.store} "
          f"to {run.train.dataset}")
    return 0
