"""``actune eval CONFIG [key=value ...]``: run every eval model through the same agent loop and report.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``eval`` section and, when
``eval.endpoints`` is empty, starts one server per base model from its ``serve`` section (one after the
other, each with its base's adapters loaded). The report leads with ``correct_grounded`` (correct and every
supporting page read). An eval whose tasks overlap a model's training tasks is refused. Overrides are
``eval.tasks.limit=100`` (or any run-config key, e.g. ``serve.port=8001``); a key that is an eval field may
omit the ``eval.`` prefix. Rerunning resumes from the per-model stores in ``eval.out_dir``
and rewrites the report (``report.md``, ``report.json``, ``scores.png``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from actune.cli.stage_command import COLLECT_ERRORS, register_stage, section_qualifier

if TYPE_CHECKING:
    from actune.cli.run_config import RunConfig


def register(sub: argparse._SubParsersAction) -> None:
    register_stage(sub, "eval", doc=__doc__, help="evaluate prompted and fine-tuned models side by side (resumable)",
                   config_help="run config YAML (its eval and serve sections are used)",
                   example="eval.tasks.limit=100", run=_run, qualify=qualify_overrides, progress=True,
                   errors=COLLECT_ERRORS)


qualify_overrides = section_qualifier("eval")


def _run(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.eval.run import run_eval

    run_eval(run.eval, run.serve, name=run.name, show_progress=not args.no_progress)
