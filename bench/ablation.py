"""One recipe choice of a finished quickstart run, flipped: the round trained both ways, scored on the dev split.

    .venv/bin/python bench/ablation.py --run runs/full-a1-mix-seed7 --flip mix_methods --method react --round 1
    .venv/bin/python bench/ablation.py --run runs/full-a1-mix-seed7 --flip round_start --method react --round 2

The run's own adapter is one arm; the other is trained here on the same run's stores with the choice flipped
(the same recipe, seed and dev-loss checkpoint pick otherwise):

- ``mix_methods``: with mixing, the method's adapter also learns from the other methods' kept episodes that
  convert into its steps; without, from its own only;
- ``round_start`` (rounds >= 2): ``base``, a fresh adapter on the base model with every round's data so far;
  ``previous``, a fresh adapter on the previous round's merged model with this round's new data only.

Both arms, the prompted model (and with ``--previous`` the run's round r-1 model) then play the same loop on
the world's **dev** questions: the test split is never read, so what is chosen here can go into a preset
honestly. Resumable: an adapter already under ``--out`` is not retrained, and eval continues its stores.

Writes ``<out>/ablation.json``, ``<out>/ablation.png`` and the eval report (``<out>/eval/report.md``); prints one
table: examples, best step and dev loss, dev correct & grounded with its interval, the paired difference
against the prompted model and McNemar's p, and the two arms paired against each other.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rank_sweep import evaluate, load_run_config, sweep_rows, training_figures

from actune.quickstart.config import QuickstartConfig
from actune.quickstart.fine_tune import export_round
from actune.quickstart.layout import Layout
from actune.quickstart.round_inputs import export_stores, round_train_config
from actune.runtime.stop_signals import run_script

ARMS = {"mix_methods": {False: "tuned-own", True: "tuned-mixed"},
        "round_start": {"base": "tuned-from-base", "previous": "tuned-from-previous"}}
"""The arms' labels by the flipped choice and its value, in the order they are paired (second against first)."""


def flipped(cfg: QuickstartConfig, flip: str, method: str) -> QuickstartConfig:
    """The run's config with ``flip`` the other way for ``method`` (``round_start`` may be set per method)."""
    if flip == "mix_methods":
        return cfg.model_copy(update={"mix_methods": not cfg.mix_methods})
    starts = {m: cfg.round_start_of(m) for m in cfg.methods}
    starts[method] = "base" if starts[method] == "previous" else "previous"
    return cfg.model_copy(update={"round_start": starts})


def arm_label(cfg: QuickstartConfig, flip: str, method: str) -> str:
    """The label of ``cfg``'s arm for ``method``."""
    return ARMS[flip][cfg.mix_methods if flip == "mix_methods" else cfg.round_start_of(method)]


def other_arm(cfg: QuickstartConfig, run: Path, flip: str, method: str, r: int, out: Path) -> Path:
    """The adapter of the arm the run did not train (trained under ``out`` unless already there)."""
    from actune.train.sft import train

    other = flipped(cfg, flip, method)
    arm = out / arm_label(other, flip, method)
    adapter = arm / "adapter"
    if (adapter / "adapter_config.json").is_file():
        return adapter
    stores = export_stores(other, Layout(run), method, r)
    summary = export_round(cfg, stores, method, arm / "dataset")
    tcfg = round_train_config(other, Layout(run), method, r).model_copy(
        update={"dataset": arm / "dataset", "output_dir": adapter})
    print(f"{arm.name}: {summary.exported} examples from {len(stores)} store(s), on {tcfg.base_model}",
          file=sys.stderr, flush=True)
    train(tcfg, log=lambda m: print(f"{arm.name}: {m}", file=sys.stderr, flush=True))
    return adapter


def arms_paired(cfg: QuickstartConfig, eval_dir: Path, labels: list[str]) -> dict[str, Any]:
    """The second arm paired against the first on the dev questions (the eval's own paired statistics)."""
    from actune.eval.stats import paired_comparison
    from actune.records.trajectory import read_trajectories

    first, second = (read_trajectories(eval_dir / label / "trajectories.jsonl") for label in labels)
    e = cfg.eval
    return paired_comparison(first, second, metric="correct_grounded", samples=e.bootstrap_samples,
                             confidence=e.confidence, seed=e.seed).to_dict()


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| model | examples | best step (of) | dev loss | dev correct & grounded | vs prompted | McNemar p |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        step = f"{r['best_step']} ({r['steps']})" if r.get("best_step") is not None else "–"
        loss = f"{r['best_eval_loss']:.4f}" if r.get("best_eval_loss") is not None else "–"
        vs = f"{100 * r['diff']:+.1f} pts, {r['b']}/{r['c']}" if "diff" in r else "reference"
        p = f"{r['p']:.2g}" if "p" in r else ""
        lines.append(f"| {r['label']} | {r.get('train_examples') or '–'} | {step} | {loss} | "
                     f"{r['dev_cg']:.3f} [{r['dev_cg_low']:.3f}, {r['dev_cg_high']:.3f}] | {vs} | {p} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    x = range(len(rows))
    ax.bar(x, [r["dev_cg"] for r in rows], color=["grey"] + ["C0"] * (len(rows) - 1),
           yerr=[[r["dev_cg"] - r["dev_cg_low"] for r in rows], [r["dev_cg_high"] - r["dev_cg"] for r in rows]],
           capsize=4)
    ax.set_xticks(list(x), [r["label"] for r in rows])
    ax.set_ylabel("dev correct & grounded")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a quickstart run folder whose round has been trained")
    ap.add_argument("--flip", choices=sorted(ARMS), default="mix_methods", help="the choice trained both ways")
    ap.add_argument("--method", default="react")
    ap.add_argument("--round", type=int, default=1)
    ap.add_argument("--previous", action="store_true", help="also score the run's round r-1 model")
    ap.add_argument("--out", help="working folder (default: <run>/<flip>-ablation-<method>-r<round>; "
                                  "mix_methods: mix-ablation-...)")
    args = ap.parse_args(argv)

    run = Path(args.run).resolve()
    cfg = load_run_config(run)
    if args.flip == "round_start" and args.round < 2:
        ap.error("--flip round_start compares how a round >= 2 trains: give --round 2 or later")
    prefix = "mix" if args.flip == "mix_methods" else args.flip.replace("_", "-")
    out = Path(args.out).resolve() if args.out else run / f"{prefix}-ablation-{args.method}-r{args.round}"
    out.mkdir(parents=True, exist_ok=True)
    other = flipped(cfg, args.flip, args.method)
    made = {arm_label(cfg, args.flip, args.method): Layout(run).adapter(args.method, args.round),
            arm_label(other, args.flip, args.method): other_arm(cfg, run, args.flip, args.method, args.round, out)}
    labels = list(ARMS[args.flip].values())
    adapters = {label: made[label] for label in labels}
    if args.previous and args.round > 1:
        adapters = {f"tuned-r{args.round - 1}": Layout(run).adapter(args.method, args.round - 1), **adapters}
    figures = {label: training_figures(a) for label, a in adapters.items()}
    report = evaluate(cfg, run, args.method, adapters, out, name=f"{prefix}-ablation")
    rows = sweep_rows(report, figures)
    paired = arms_paired(cfg, out / "eval", labels)
    (out / "ablation.json").write_text(json.dumps({"run": str(run), "flip": args.flip, "method": args.method,
                                                   "round": args.round, "split": "dev", "rows": rows,
                                                   "paired": {"first": labels[0], "second": labels[1], **paired}},
                                                  indent=2) + "\n", encoding="utf-8")
    plot(rows, out / "ablation.png")
    print(format_table(rows))
    print(f"\n{labels[1]} vs {labels[0]} (dev, paired): {paired}")
    print(f"\n{out / 'ablation.json'}, {out / 'ablation.png'}, {out / 'eval' / 'report.md'}")
    return 0


if __name__ == "__main__":
    run_script(main)
