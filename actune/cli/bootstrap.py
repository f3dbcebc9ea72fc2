"""``actune bootstrap CONFIG [key=value ...]``: collect judged trajectories into the run's store.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``bootstrap`` section and, when
``bootstrap.endpoints`` is empty, starts a server from its ``serve`` section. Overrides are
``bootstrap.concurrency=8`` (or any run-config key, e.g. ``serve.port=8001``); a key that is a
bootstrap field may omit the ``bootstrap.`` prefix. Rerunning resumes from the store.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bootstrap", help="generate, judge and keep correct trajectories (resumable)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="run config YAML (its bootstrap and serve sections are used)")
    p.add_argument("overrides", nargs="*", help="key=value overrides, e.g. bootstrap.target_correct=100")
    p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    p.set_defaults(func=_bootstrap)


def qualify_overrides(overrides: list[str]) -> list[str]:
    """Short keys (``concurrency=4``) mean this stage's section."""
    from actune.run_config import qualify_section_overrides

    return qualify_section_overrides(overrides, "bootstrap")


def _bootstrap(args: argparse.Namespace) -> int:
    import sys

    from actune.bootstrap.run import CollectError, run_bootstrap
    from actune.bootstrap.store import StoreError
    from actune.config import load_config
    from actune.run_config import RunConfig
    from actune.serve.errors import ServeError
    from actune.tasks.loading import TaskFileError

    run = load_config(RunConfig, args.config, qualify_overrides(list(args.overrides)))
    try:
        run_bootstrap(run, show_progress=not args.no_progress)
    except (StoreError, ServeError, TaskFileError, CollectError) as e:
        print(f"actune bootstrap: {e}", file=sys.stderr)
        return 2
    return 0
