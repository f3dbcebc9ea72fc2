"""``actune config show FILE [key=value ...]``: print a resolved, validated config.

Run configs (``configs/*.yaml``) are the common case; the section configs users keep beside them
(``configs/envs/``, ``configs/tasks/``, ``configs/world.yaml``) are recognised by their keys, or named
with ``--kind``.
"""

from __future__ import annotations

import argparse
import importlib

# kind -> "module:Class"; imported on use so `actune --help` stays fast.
CONFIG_KINDS = {
    "run": "actune.cli.run_config:RunConfig",
    "serve": "actune.serve.config:ServeConfig",
    "bootstrap": "actune.bootstrap.config:BootstrapConfig",
    "train": "actune.train.config:TrainConfig",
    "eval": "actune.eval.config:EvalConfig",
    "agent": "actune.agent.config:AgentConfig",
    "env": "actune.envs.config:EnvConfig",
    "tasks": "actune.tasks.config:TaskConfig",
    "world": "actune.world.config:WorldConfig",
    "quickstart": "actune.quickstart.config:QuickstartConfig",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="inspect configs")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="print the resolved config (file + overrides, validated)")
    show.add_argument("file", nargs="?", help="a config YAML (omit for the run config's defaults)")
    show.add_argument("overrides", nargs="*", help="key.path=value overrides")
    show.add_argument(
        "--kind",
        choices=["auto", *CONFIG_KINDS],
        default="auto",
        help="which config the file is (default: recognised from its keys; run when it has none)",
    )
    show.set_defaults(func=_show)


def config_class(kind: str) -> type:
    module, name = CONFIG_KINDS[kind].split(":")
    return getattr(importlib.import_module(module), name)


def guess_kind(keys: set[str]) -> str:
    """The config kind whose fields cover the most of ``keys`` (ties and no keys: ``run``)."""
    best, best_hits = "run", len(keys & set(config_class("run").model_fields))
    if not keys or best_hits == len(keys):
        return best
    for kind in CONFIG_KINDS:
        hits = len(keys & set(config_class(kind).model_fields))
        if hits > best_hits:
            best, best_hits = kind, hits
    return best


def _show(args: argparse.Namespace) -> int:
    from pathlib import Path

    from actune.config import dump_yaml, load_config, read_yaml

    file, overrides = args.file, list(args.overrides)
    # `actune config show a.b=1` (no file): the first positional is an override, not a path.
    if file is not None and "=" in file and not file.endswith((".yaml", ".yml")):
        overrides.insert(0, file)
        file = None
    kind = args.kind
    if kind == "auto":
        kind = guess_kind(set(read_yaml(Path(file)))) if file is not None else "run"
    print(f"# {kind} config ({CONFIG_KINDS[kind].replace(':', '.')})")
    print(dump_yaml(load_config(config_class(kind), file, overrides)), end="")
    return 0
