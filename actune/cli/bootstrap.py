"""``actune bootstrap CONFIG [key=value ...]``: collect judged trajectories into the run's store.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``bootstrap`` section and, when
``bootstrap.endpoints`` is empty, starts a server from its ``serve`` section. Overrides are
``bootstrap.concurrency=8`` (or any run-config key, e.g. ``serve.port=8001``); a key that is a
bootstrap field may omit the ``bootstrap.`` prefix. Rerunning resumes from the store.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from actune.cli.stage_command import COLLECT_ERRORS, register_stage, section_qualifier

if TYPE_CHECKING:
    from actune.cli.run_config import RunConfig


def register(sub: argparse._SubParsersAction) -> None:
    register_stage(sub, "bootstrap", doc=__doc__, help="generate, judge and keep correct trajectories (resumable)",
                   config_help="run config YAML (its bootstrap and serve sections are used)",
                   example="bootstrap.target_correct=100", run=_run, qualify=qualify_overrides, progress=True,
                   errors=COLLECT_ERRORS)


qualify_overrides = section_qualifier("bootstrap")


def _run(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.bootstrap.run import run_bootstrap

    run_bootstrap(run.bootstrap, run.serve, name=run.name, show_progress=not args.no_progress)
