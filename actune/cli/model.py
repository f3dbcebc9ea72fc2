"""``actune model prepare NAME_OR_PATH``: print the local folder of a ready model."""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="prepare models (download, convert) and list known names")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    prep = msub.add_parser("prepare", help="print the local folder of a ready model, building it if needed")
    prep.add_argument("name", help="a known name (smollm2-135m), a Hugging Face id, or a local folder")
    prep.add_argument("--no-check", action="store_true", help="skip the test generation after conversion")
    prep.set_defaults(func=_prepare)
    ls = msub.add_parser("list", help="list the known model names")
    ls.set_defaults(func=_list)


def _prepare(args: argparse.Namespace) -> int:
    from actune.cli.exit_codes import FAILED
    from actune.runtime.model_files import ModelError, prepare_model

    try:
        print(prepare_model(args.name, check=not args.no_check))
    except ModelError as e:
        print(f"actune: {e}", file=sys.stderr)
        return FAILED
    return 0


def _list(args: argparse.Namespace) -> int:
    from actune.runtime.model_files import KNOWN_MODELS

    for spec in KNOWN_MODELS.values():
        print(f"{spec.name}\t{spec.description}")
    return 0
