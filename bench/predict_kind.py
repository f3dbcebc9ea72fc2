"""A finished quickstart run's stage times, predicted on another kind of hardware from what the run did.

    .venv/bin/python bench/predict_kind.py --run runs/full-fp32shape-seed9 --to cpu-fp32

A session that has only a CPU with native bf16 can still say what a run of the AVX2-only shape would take on
an AVX2-only CPU: serving stages (bootstrap, eval) scale by the ratio of the two kinds' episode rates, and each
training stage is its own tokens x epochs (``training_meta.json``) at the other kind's whole-stage training
rate. The rates are the quickstart ETA's (``_RATES`` in :mod:`actune.cli.quickstart_run`), which were timed on
real machines of each kind (seed 6's whole run on a real AVX2-only EPYC: 3 h 48 min measured). Other stages
(world, export, report: seconds) are kept as measured. A prediction, printed as one: it is not a timing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from actune.cli.quickstart_run import _RATES, STATE_FILE, Layout

SERVING = ("bootstrap ", "eval ")


def predict(run: Path, source: str, target: str) -> list[dict[str, Any]]:
    """One row per finished stage: its name, measured seconds and predicted seconds on ``target``."""
    from actune.train.run import TRAINING_META_FILE

    state = json.loads((run / STATE_FILE).read_text(encoding="utf-8"))
    serve_ratio = _RATES[source]["episodes_h"] / _RATES[target]["episodes_h"]
    rows = []
    for name, done in state["done"].items():
        measured = float(done["wall_s"])
        if name.startswith(SERVING):
            predicted, how = measured * serve_ratio, f"x {serve_ratio:g}"
        elif name.startswith("train "):
            _, method, _, r = name.split()
            meta_path = Layout(run).adapter(method, int(r)) / TRAINING_META_FILE
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            work = meta["tokens"] * meta["config"]["num_train_epochs"]
            predicted = work / _RATES[target]["train_tok_s"]
            how = f"{meta['tokens']} tokens x {meta['config']['num_train_epochs']:g} epochs"
        else:
            predicted, how = measured, "as measured"
        rows.append({"stage": name, "measured_s": measured, "predicted_s": predicted, "how": how})
    return rows


def format_table(rows: list[dict[str, Any]], source: str, target: str) -> str:
    lines = [f"| stage | measured ({source}), min | predicted ({target}), min | how |", "|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['stage']} | {r['measured_s'] / 60:.1f} | {r['predicted_s'] / 60:.1f} | {r['how']} |")
    measured, predicted = (sum(r[k] for r in rows) / 60 for k in ("measured_s", "predicted_s"))
    hours = f"{int(predicted // 60)}h{int(predicted % 60):02d}m"
    lines.append(f"| **total** | **{measured:.1f}** | **{predicted:.1f}** ({hours}) | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a quickstart run folder")
    ap.add_argument("--from", dest="source", choices=sorted(_RATES), default="cpu-bf16",
                    help="the kind the run ran on (default cpu-bf16)")
    ap.add_argument("--to", dest="target", choices=sorted(_RATES), default="cpu-fp32", help="the kind predicted")
    args = ap.parse_args(argv)
    print(format_table(predict(Path(args.run), args.source, args.target), args.source, args.target))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
