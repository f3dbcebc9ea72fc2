"""``actune config show FILE [key=value ...]``: print the resolved run config."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="inspect configs")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="print the resolved config (file + overrides, validated)")
    show.add_argument("file", nargs="?", help="a run config YAML (omit for the defaults)")
    show.add_argument("overrides", nargs="*", help="key.path=value overrides")
    show.set_defaults(func=_show)


def _show(args: argparse.Namespace) -> int:
    from actune.config import dump_yaml, load_config
    from actune.run_config import RunConfig

    file, overrides = args.file, list(args.overrides)
    # `actune config show a.b=1` (no file): the first positional is an override, not a path.
    if file is not None and "=" in file and not file.endswith((".yaml", ".yml")):
        overrides.insert(0, file)
        file = None
    print(dump_yaml(load_config(RunConfig, file, overrides)), end="")
    return 0
