"""``actune data prepare hotpotqa --train FILE --dev FILE --out DIR``: a dataset's official release -> the files a
preset reads (:mod:`actune.tasks.prepare`)."""

from __future__ import annotations

import argparse
import sys

from actune.cli.exit_codes import FAILED, OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="prepare a dataset's official files for a preset")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    prep = dsub.add_parser("prepare", help="official release -> the files a preset reads",
                           description="hotpotqa: HotpotQA's hotpot_train_v1.1.json and hotpot_dev_distractor_v1.json "
                           "(https://hotpotqa.github.io) -> train_with_context.jsonl, dev_with_context.jsonl, "
                           "wiki_paragraphs.jsonl and prepared.json in --out, which the hotpotqa preset reads "
                           "(hotpotqa.data_dir=OUT).")
    prep.add_argument("dataset", choices=["hotpotqa"])
    prep.add_argument("--train", required=True, help="the official training file (a JSON array)")
    prep.add_argument("--dev", required=True, help="the official dev file, distractor setting (a JSON array)")
    prep.add_argument("--out", default="data/hotpotqa", help="the folder the preset reads (default data/hotpotqa)")
    prep.set_defaults(func=_prepare)


def _prepare(args: argparse.Namespace) -> int:
    from actune.tasks.prepare import prepare_hotpotqa
    from actune.tasks.sources import TaskFileError

    try:
        s = prepare_hotpotqa(args.train, args.dev, args.out)
    except TaskFileError as e:
        print(f"actune data: {e}", file=sys.stderr)
        return FAILED
    print(f"wrote {args.out}: train {s.records['train']} and dev {s.records['dev']} questions, {s.pages} pages "
          f"({s.conflicting_titles} titles met with two texts: the first kept); run the preset with "
          f"hotpotqa.data_dir={args.out}")
    return OK
