"""``actune card PATH [--report FILE] [--force]``: write the Hugging Face model card (``README.md``) of an adapter
folder or a merged model folder from the folder's own files, e.g. for an adapter trained before actune wrote cards
(its ``README.md`` is PEFT's template, which ``actune push`` refuses), or to add the eval table before a push.

The card is :mod:`actune.train.model_card`'s, the one ``actune train`` writes: built from ``training_meta.json``
and ``actune_prompt.json`` (and the dataset's ``export_summary.json`` when it is still there); an adapter folder
without ``training_meta.json`` gets a shorter one from ``adapter_config.json`` and the Trainer's
``trainer_state.json`` when present. An existing card that is neither actune's nor PEFT's template is replaced
only with ``--force``.

``--report FILE`` (an ``actune eval`` ``report.json``) adds an Evaluation section: this model's rows and the
report's reference (the prompted baseline) with scores, intervals, the paired difference, McNemar p and n; a
report that does not evaluate this model is an error naming the models it does. Without ``--report``, an adapter
of a quickstart run (``OUT/<method>/round<r>/adapter``, or its ``merged/``) gets the table of that run's
``OUT/eval/<method>/report.json`` when the run has written it and it evaluates this adapter.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from actune.cli.exit_codes import FAILED


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("card", help="write the model card of an adapter or merged model folder (before a push)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH", help="adapter folder (adapter_config.json) or merged model folder")
    p.add_argument("--report", metavar="FILE", default=None,
                   help="an actune eval report.json: put this model's eval table in the card")
    p.add_argument("--force", action="store_true", help="replace a card that is neither actune's nor PEFT's template")
    p.set_defaults(func=_card)


def _card(args: argparse.Namespace) -> int:
    from actune.quickstart.cards import run_eval_report
    from actune.train.card_eval import ReportError, eval_section
    from actune.train.model_card import CardError, write_folder_card

    report = args.report
    if report is None and (found := run_eval_report(args.path)) is not None:
        try:
            eval_section(found, Path(args.path))
            report = found
        except ReportError as e:  # the run's eval has not reached this adapter: a card without the table
            print(f"actune card: no eval table: {e}", file=sys.stderr)
    try:
        path, replaced = write_folder_card(args.path, force=args.force, report=report)
    except (CardError, ReportError) as e:
        print(f"actune card: {e}", file=sys.stderr)
        return FAILED
    print(f"wrote {path}" + ("" if replaced == "nothing" else f" (replacing {replaced})")
          + (f" with the eval table of {report}" if report is not None else ""))
    return 0
