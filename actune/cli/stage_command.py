"""The one shape of the stage commands (``actune bootstrap|export|train|eval CONFIG [key=value ...]``).

Each reads a run config with overrides, hands its stage the sections it needs, and turns the stage's own
errors into one line on stderr and exit status 1 (a config error, found before the stage runs, is exit status 2
everywhere, in :func:`actune.cli.main`; :mod:`actune.cli.exit_codes`). An output refused before anything was
written (:data:`REFUSALS`: it is an input, or a file the command did not write) is exit status 2 too.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from actune.cli.exit_codes import FAILED, OK, USAGE
from actune.runtime.stop_signals import stop_signals_as_interrupt

__all__ = ["register_stage", "stage_errors", "section_qualifier", "exit_status", "ErrorNames", "COLLECT_ERRORS",
           "EXPORT_ERRORS", "REFUSALS", "TRAIN_ERRORS"]

COLLECT_ERRORS = ("actune.records.store:StoreError", "actune.serve.errors:ServeError",
                  "actune.tasks.loading:TaskFileError", "actune.collect:CollectError")
"""What the stages that collect episodes (bootstrap, eval) report as one line."""
EXPORT_ERRORS = ("actune.bootstrap.export:ExportError", "actune.records.trajectory:TrajectoryFormatError")


def _train_error() -> type[BaseException]:
    from actune.train.common import TrainError  # a stage: imported when a command runs, never by the core

    return TrainError


TRAIN_ERRORS = (_train_error,)
"""What the training stage reports as one line: its error class, imported when the command runs."""
REFUSALS = ("actune.bootstrap.export:OutputRefused", "actune.records.store:NotAStoreError")
"""Of those, the errors that mean the command points at the wrong path: found before anything was written."""


def section_qualifier(section: str) -> Callable[[list[str]], list[str]]:
    """Overrides whose first key is a field of ``section`` (and not of the run config) may omit the
    ``section.`` prefix: ``concurrency=4`` for ``bootstrap.concurrency=4``."""

    def qualify(overrides: list[str]) -> list[str]:
        from actune.cli.run_config import qualify_section_overrides

        return qualify_section_overrides(overrides, section)

    qualify.__doc__ = f"Short keys mean the {section} section."
    return qualify


ErrorNames = Sequence[str | Callable[[], type[BaseException]]]
"""A stage's errors: ``"module:Class"`` names, or functions that import the class and return it."""


def stage_errors(names: ErrorNames) -> tuple[type[BaseException], ...]:
    """``names`` -> the classes (imported when the command runs, so ``--help`` stays fast)."""
    out = []
    for name in names:
        if callable(name):
            out.append(name())
            continue
        module, cls = name.split(":")
        out.append(getattr(importlib.import_module(module), cls))
    return tuple(out)


def exit_status(error: BaseException) -> int:
    """The exit status of a stage error reported in one line: 2 for a refused path (:data:`REFUSALS`), else 1."""
    return USAGE if isinstance(error, stage_errors(REFUSALS)) else FAILED


def register_stage(sub: argparse._SubParsersAction, name: str, *, doc: str, help: str, config_help: str,
                   example: str, run: Callable[[Any, argparse.Namespace], object],
                   qualify: Callable[[list[str]], list[str]], errors: ErrorNames,
                   progress: bool = False,
                   flags: Callable[[argparse.Namespace], list[str]] | None = None) -> argparse.ArgumentParser:
    """Add the stage command ``name``: ``run(run_config, args)`` does the work; ``qualify`` expands the
    stage's short override keys; ``errors`` (:data:`ErrorNames`) are reported as one line, exit status 1
    (:mod:`actune.cli.exit_codes`). ``flags``: the overrides the command's own flags stand for, applied before
    the command line's (which win); with it the config may be left out (every default)."""
    p = sub.add_parser(name, help=help, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help=config_help, nargs="?" if flags else None)
    p.add_argument("overrides", nargs="*", help=f"key=value overrides, e.g. {example}")
    if progress:
        p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")

    def command(args: argparse.Namespace) -> int:
        from actune.cli.config_items import optional_config
        from actune.cli.run_config import RunConfig
        from actune.config import load_config

        file, overrides = optional_config(args.config, args.overrides)
        overrides = (flags(args) if flags else []) + qualify(overrides)
        config = load_config(RunConfig, file, overrides)
        caught = stage_errors(errors)
        try:
            with stop_signals_as_interrupt():  # SIGTERM unwinds: servers stopped, stores closed, exit 130
                run(config, args)
        except caught as e:
            print(f"actune {name}: {e}", file=sys.stderr)
            return exit_status(e)
        return OK

    p.set_defaults(func=command)
    return p
