"""``actune data prepare hotpotqa|fever ...``: a dataset's official release -> the files a preset reads
(:mod:`actune.tasks.prepare`, :mod:`actune.sources.fever_prepare`)."""

from __future__ import annotations

import argparse
import sys

from actune.cli.exit_codes import FAILED, NOTHING_DONE, OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help="prepare a dataset's official files for a preset")
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    prep = dsub.add_parser("prepare", help="official release -> the files a preset reads")
    datasets = prep.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    hq = datasets.add_parser("hotpotqa", help="HotpotQA's JSON files -> the hotpotqa preset's",
                             description="HotpotQA's hotpot_train_v1.1.json and hotpot_dev_distractor_v1.json "
                             "(https://hotpotqa.github.io) -> train_with_context.jsonl, dev_with_context.jsonl, "
                             "wiki_paragraphs.jsonl and prepared.json in --out, which the hotpotqa preset reads "
                             "(hotpotqa.data_dir=OUT).")
    hq.add_argument("--train", required=True, help="the official training file (a JSON array)")
    hq.add_argument("--dev", required=True, help="the official dev file, distractor setting (a JSON array)")
    hq.add_argument("--abstracts", help="the Wikipedia-abstracts dump HotpotQA was built on (its tar.bz2 or the folder "
                    "it was extracted to) as the corpus, the GPU preset's; without it the corpus is the records' "
                    "context paragraphs")
    hq.add_argument("--out", default="data/hotpotqa", help="the folder the preset reads (default data/hotpotqa)")
    hq.set_defaults(func=_prepare_hotpotqa)
    fever = datasets.add_parser("fever", help="FEVER's claims and wiki-pages -> the fever preset's",
                                description="FEVER's claims (paper_dev.jsonl, shared_task_dev.jsonl or train.jsonl) "
                                "and its wiki-pages dump (https://fever.ai/dataset/fever.html) -> paper_dev.jsonl, "
                                "wiki_pages.jsonl (the pages the claims need) and prepared.json in --out, which the "
                                "fever preset reads (fever.data_dir=OUT).")
    fever.add_argument("--claims", required=True, help="a FEVER claims file (JSONL)")
    fever.add_argument("--wiki-pages", required=True, help="the wiki-pages folder (wiki-NNN.jsonl) or one of its files")
    fever.add_argument("--out", default="data/fever", help="the folder the preset reads (default data/fever)")
    fever.set_defaults(func=_prepare_fever)


def _failed(e: Exception) -> int:
    """One line naming the input; exit 3 when it held nothing, else 1 (:mod:`actune.cli.exit_codes`)."""
    from actune.tasks.prepare import NothingToPrepare

    print(f"actune data: {e}", file=sys.stderr)
    return NOTHING_DONE if isinstance(e, NothingToPrepare) else FAILED


def _prepare_hotpotqa(args: argparse.Namespace) -> int:
    from actune.tasks.prepare import prepare_hotpotqa
    from actune.tasks.sources import TaskFileError

    try:
        s = prepare_hotpotqa(args.train, args.dev, args.out, abstracts=args.abstracts)
    except TaskFileError as e:
        return _failed(e)
    print(f"wrote {args.out}: train {s.records['train']} and dev {s.records['dev']} questions, {s.pages} pages "
          f"({s.abstract_pages} from the abstracts dump; {s.conflicting_titles} context titles met with two texts: "
          "the first kept); run the preset with "
          f"hotpotqa.data_dir={args.out}")
    return OK


def _prepare_fever(args: argparse.Namespace) -> int:
    from actune.sources.fever_prepare import prepare_fever
    from actune.tasks.sources import TaskFileError

    try:
        s = prepare_fever(args.claims, args.wiki_pages, args.out)
    except TaskFileError as e:
        return _failed(e)
    labels = ", ".join(f"{n} {label}" for label, n in sorted(s.labels.items()))
    print(f"wrote {args.out}: {sum(s.labels.values())} claims ({labels}), {s.pages} pages "
          f"({s.missing_evidence_pages} evidence pages not in the dump); run the preset with fever.data_dir={args.out}")
    return OK
