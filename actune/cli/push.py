"""``actune push PATH --repo org/name [--private] [--revision main]``: upload to the Hugging Face Hub.

PATH is what actune wrote: an export folder (``actune export``) or export file (``--format openai|sharegpt|alpaca``,
with its ``X.README.md`` card beside it) or a DPO pairs folder (``pairs_summary.json``), pushed as a dataset repo;
an adapter folder (``actune train``, without its ``merged/``) or a model folder (``merged/``), pushed as a model
repo. Each carries its card (``README.md``); a folder without one is refused (``actune card PATH`` writes an
adapter's or model folder's). The repo is created when missing; ``--revision`` other than ``main`` is created as a
branch.

The token is huggingface_hub's: the ``HF_TOKEN`` environment variable or the stored login (``hf auth login``).
There is no token option, and the token is never printed. See ``actune.runtime.hub_push``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from actune.cli.exit_codes import FAILED


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("push", help="upload an export, DPO pairs, an adapter or a merged model to the Hugging Face Hub",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH",
                   help="export folder or .jsonl file, DPO pairs folder, adapter folder, or merged model folder")
    p.add_argument("--repo", required=True, help="the Hub repo id, org/name (created if missing)")
    p.add_argument("--private", action="store_true", help="create the repo private (an existing repo is left as is)")
    p.add_argument("--revision", default="main", help="branch to commit to (default: %(default)s)")
    p.set_defaults(func=_push)


def _push(args: argparse.Namespace, api_factory: Callable[[], Any] | None = None) -> int:
    """The command; tests hand ``api_factory`` a fake Hub client (default: :func:`actune.runtime.hub_push.make_api`)."""
    from actune.runtime.hub_push import PushError, make_api, push

    try:
        res = push(args.path, args.repo, private=args.private, revision=args.revision,
                   api_factory=api_factory or make_api)
    except PushError as e:
        print(f"actune push: {e}", file=sys.stderr)
        return FAILED
    print(f"pushed {res.kind} {args.path} to {res.repo_type} repo {res.repo_id}@{res.revision}: "
          f"{len(res.files)} files" + (f" ({res.commit_url})" if res.commit_url else ""))
    if res.hub_base_model:
        print(f"its {res.hub_config_file} names the base model {res.hub_base_model} (the Hub id of its card) in place "
              "of the local folder; the folder's own copy is unchanged")
    return 0
