"""The ``actune`` command. Each subcommand lives in its own module with a ``register(subparsers)``."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys

from actune.cli.exit_codes import FAILED, INTERRUPTED, OK, USAGE
from actune.config import ConfigError
from actune.runtime.stop_signals import stop_signals_as_interrupt

# Order is the order of `actune --help`. Modules import fast: heavy libraries load inside the commands.
SUBCOMMAND_MODULES = [
    "actune.cli.config",
    "actune.cli.model",
    "actune.cli.serve",
    "actune.cli.run",
    "actune.cli.world",
    "actune.cli.data",
    "actune.cli.stages",
    "actune.cli.distill_errors",
    "actune.cli.quickstart",
    "actune.cli.presets",
    "actune.cli.card",
    "actune.cli.push",
]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("actune")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="actune",
        description=(
            "Serve a model with vLLM, run agent loops, bootstrap trajectories, fine-tune LoRA adapters, evaluate."
        ),
    )
    parser.add_argument("--version", action="version", version=f"actune {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _plain_help(parser)
    return parser


def _plain_help(parser: argparse.ArgumentParser) -> None:
    """Help text without the reST markup of the docstrings it comes from (``x`` and :mod:`x` read as x)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _plain_help(child)
        elif action.help:
            action.help = _plain(action.help)
    parser.description = _plain(parser.description) if parser.description else parser.description


def _plain(text: str) -> str:
    return re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text).replace("``", "")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return USAGE
    try:
        with stop_signals_as_interrupt():  # SIGTERM and SIGHUP end every command as Ctrl-C does: exit 130
            return int(args.func(args) or OK)
    except ConfigError as e:
        print(f"actune: config error: {e}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print("actune: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # `actune ... | head`: the reader left; stop quietly like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OK
    except OSError as e:
        # disk full, a file-size limit, a read-only folder: one line, not a traceback. Stores append whole lines
        # (a cut one is trimmed on reopening) and other files are replaced atomically, so what was written stays.
        where = f" ({e.filename})" if e.filename else ""
        fix = "make room" if e.errno in _NO_ROOM else "fix that"
        print(f"actune: {e.strerror or e}{where}; everything written before it is kept: {fix} and rerun the same "
              "command to continue", file=sys.stderr)
        return FAILED


_NO_ROOM = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
"""The errors that more room cures; a directory given as a file or a missing permission needs another fix."""


if __name__ == "__main__":
    sys.exit(main())
