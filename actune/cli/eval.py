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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate prompted and fine-tuned models side by side (resumable)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="run config YAML (its eval and serve sections are used)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. eval.tasks.limit=100")
    p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    p.set_defaults(func=_eval)


def qualify_overrides(overrides: list[str]) -> list[str]:
    """Short keys (``attempts=2``) mean this stage's section."""
    from actune.run_config import qualify_section_overrides

    return qualify_section_overrides(overrides, "eval")


def _eval(args: argparse.Namespace) -> int:
    import sys

    from actune.bootstrap.run import CollectError
    from actune.bootstrap.store import StoreError
    from actune.config import load_config
    from actune.eval.run import run_eval
    from actune.run_config import RunConfig
    from actune.serve.errors import ServeError
    from actune.tasks.loading import TaskFileError

    run = load_config(RunConfig, args.config, qualify_overrides(list(args.overrides)))
    try:
        run_eval(run, show_progress=not args.no_progress)
    except (StoreError, ServeError, TaskFileError, CollectError) as e:
        print(f"actune eval: {e}", file=sys.stderr)
        return 2
    return 0
