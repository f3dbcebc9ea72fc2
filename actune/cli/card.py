"""``actune card PATH [--force]``: write the Hugging Face model card (``README.md``) of an adapter folder or a
merged model folder from the folder's own files, e.g. for an adapter trained before actune wrote cards (its
``README.md`` is PEFT's template, which ``actune push`` refuses).

The card is :mod:`actune.train.model_card`'s, the one ``actune train`` writes: built from ``training_meta.json``
and ``actune_prompt.json`` (and the dataset's ``export_summary.json`` when it is still there); an adapter folder
without ``training_meta.json`` gets a shorter one from ``adapter_config.json`` and the Trainer's
``trainer_state.json`` when present. An existing card that is neither actune's nor PEFT's template is replaced
only with ``--force``.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("card", help="write the model card of an adapter or merged model folder (before a push)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH", help="adapter folder (adapter_config.json) or merged model folder")
    p.add_argument("--force", action="store_true", help="replace a card that is neither actune's nor PEFT's template")
    p.set_defaults(func=_card)


def _card(args: argparse.Namespace) -> int:
    from actune.train.model_card import CardError, write_folder_card

    try:
        path, replaced = write_folder_card(args.path, force=args.force)
    except CardError as e:
        print(f"actune card: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}" + ("" if replaced == "nothing" else f" (replacing {replaced})"))
    return 0
