"""LoRA rank against gain, on the dev split (issue #7's "data size x epochs x rank").

    .venv/bin/python bench/rank_sweep.py --run runs/full2h-seed1 --method react --round 1 --ranks 4 16 64

Retrains one round of a finished quickstart run on its own exported dataset at each rank (``lora.alpha`` = 2 x
rank, so the update's scale stays the preset's; every other setting, the seed and the dev-loss checkpoint pick
as the run had them), then evaluates the prompted model and every tuned model (merged weights, as the quickstart
serves them) in the same loop on the world's **dev** questions: the test split is never read, so a rank chosen
here can go into the preset honestly. A rank equal to the run's own reuses the run's adapter (the same recipe
and seed). Resumable: a rank whose adapter is in ``--out`` is not retrained, and eval continues its stores.

Writes ``<out>/sweep.json``, ``<out>/sweep.png`` and the eval report (``<out>/eval/report.md``); prints one
table: rank, trainable parameters, best step (epochs) and its dev loss, dev correct & grounded with its
interval, the paired difference against the prompted model and McNemar's p.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from actune.quickstart.config import QuickstartConfig
from actune.quickstart.layout import STATE_FILE, Layout, served_tuned_model
from actune.quickstart.state import stored_config_as_current
from actune.runtime.stop_signals import run_script
from actune.tasks.config import TaskConfig


def load_run_config(run: Path) -> QuickstartConfig:
    """The config of the quickstart run in ``run``, as the quickstart itself reads it on a resume (keys renamed
    since mapped, keys added since at their defaults)."""
    state = json.loads((run / STATE_FILE).read_text(encoding="utf-8"))
    return QuickstartConfig.model_validate(stored_config_as_current(state["config"]))


def trained_adapter(cfg: QuickstartConfig, dataset: Path, out: Path, rank: int) -> Path:
    """The adapter of ``rank`` under ``out`` (trained here unless already there)."""
    from actune.train.sft import train

    adapter = out / f"r{rank}" / "adapter"
    if (adapter / "adapter_config.json").is_file():
        return adapter
    lora = cfg.train.lora.model_copy(update={"r": rank, "alpha": 2 * rank})
    tcfg = cfg.train.model_copy(update={"dataset": dataset, "output_dir": adapter, "lora": lora, "seed": cfg.seed})
    train(tcfg, log=lambda m: print(f"r{rank}: {m}", file=sys.stderr, flush=True))
    return adapter


def training_figures(adapter: Path) -> dict[str, Any]:
    meta = json.loads((adapter / "training_meta.json").read_text(encoding="utf-8"))
    cfg = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    return {"rank": cfg["r"], "alpha": cfg["lora_alpha"], "train_examples": meta.get("train_examples"),
            "best_step": meta.get("best_step"), "best_eval_loss": meta.get("best_eval_loss"),
            "steps": meta.get("steps"), "trainable_params": adapter_parameters(adapter)}


def adapter_parameters(adapter: Path) -> int:
    """Parameters in the saved LoRA weights (A and B of every adapted layer)."""
    from safetensors import safe_open

    with safe_open(str(adapter / "adapter_model.safetensors"), "pt") as f:
        return sum(_prod(f.get_slice(k).get_shape()) for k in f.keys())


def _prod(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def evaluate(cfg: QuickstartConfig, run: Path, method: str, adapters: dict[str, Path], out: Path,
             name: str = "rank-sweep") -> dict[str, Any]:
    """The prompted model and each adapter (by label, in order) in the run's loop on its world's dev split."""
    from actune.eval.config import EvalModel
    from actune.eval.run import run_eval

    base = cfg.serve.model
    models = [EvalModel(label="prompted", model=base)]
    for label, adapter in adapters.items():
        model, lora = served_tuned_model(adapter, base)
        models.append(EvalModel(label=label, model=model, adapter=lora))
    world = Layout(run).world
    ecfg = cfg.eval.model_copy(update={
        "out_dir": out / "eval", "models": models, "endpoints": [],
        "env": cfg.eval.env.model_copy(update={"name": "wiki", "corpus": str(world / "corpus.jsonl")}),
        "tasks": TaskConfig(format="custom", path=str(world / "dev.jsonl"), split="dev"),
        "agent": cfg.eval.agent.model_copy(update={"method": method, "seed": cfg.seed})})
    run_eval(ecfg, cfg.serve, name=f"{name}-{method}", show_progress=False)
    return json.loads((out / "eval" / "report.json").read_text(encoding="utf-8"))


def sweep_rows(report: dict[str, Any], figures: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model of the report, in its order (the prompted model first), with the training figures of
    each tuned model by label (bench/ablation.py builds its rows here too)."""
    rows = []
    for m in report["models"]:
        cg = m["metrics"]["correct_grounded"]
        row: dict[str, Any] = {"label": m["label"], "dev_cg": cg["mean"], "dev_cg_low": cg["low"],
                               "dev_cg_high": cg["high"], "n": cg["n"]}
        vs = (m.get("vs_first") or {}).get("correct_grounded")
        if vs:
            row.update(diff=vs["diff"]["mean"], diff_low=vs["diff"]["low"], diff_high=vs["diff"]["high"],
                       b=vs["b"], c=vs["c"], p=vs["p_value"])
        row.update(figures.get(m["label"], {}))
        rows.append(row)
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    head = "| model | LoRA params | best step (of) | dev loss | dev correct & grounded | vs prompted | McNemar p |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        params = f"{r['trainable_params'] / 1e6:.2f}M" if r.get("trainable_params") else "–"
        step = f"{r['best_step']} ({r['steps']})" if r.get("best_step") is not None else "–"
        loss = f"{r['best_eval_loss']:.4f}" if r.get("best_eval_loss") is not None else "–"
        cg = f"{r['dev_cg']:.3f} [{r['dev_cg_low']:.3f}, {r['dev_cg_high']:.3f}]"
        vs = (f"{100 * r['diff']:+.1f} pts [{100 * r['diff_low']:+.1f}, {100 * r['diff_high']:+.1f}], {r['b']}/{r['c']}"
              if "diff" in r else "reference")
        p = f"{r['p']:.2g}" if "p" in r else ""
        lines.append(f"| {r['label']} | {params} | {step} | {loss} | {cg} | {vs} | {p} |")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tuned = [r for r in rows if r["label"].startswith("tuned-r")]
    prompted = rows[0]
    ranks = [r["rank"] for r in tuned]
    fig, ax = plt.subplots(figsize=(5, 3.4))
    ax.errorbar(ranks, [r["dev_cg"] for r in tuned],
                yerr=[[r["dev_cg"] - r["dev_cg_low"] for r in tuned], [r["dev_cg_high"] - r["dev_cg"] for r in tuned]],
                marker="o", capsize=4, label="tuned (merged)")
    ax.axhline(prompted["dev_cg"], color="grey", ls="--", label="prompted")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ranks, [str(r) for r in ranks])
    ax.set_xlabel("LoRA rank (alpha = 2 x rank)")
    ax.set_ylabel("dev correct & grounded")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a finished quickstart run folder")
    ap.add_argument("--method", default="react")
    ap.add_argument("--round", type=int, default=1, help="the round whose dataset is retrained")
    ap.add_argument("--ranks", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--out", help="working folder (default: <run>/rank-sweep-<method>-r<round>)")
    args = ap.parse_args(argv)

    run = Path(args.run).resolve()
    cfg = load_run_config(run)
    layout = Layout(run)
    out = Path(args.out).resolve() if args.out else run / f"rank-sweep-{args.method}-r{args.round}"
    out.mkdir(parents=True, exist_ok=True)
    dataset = layout.dataset(args.method, args.round)
    adapters = {}
    for rank in args.ranks:
        own = layout.adapter(args.method, args.round)
        adapters[rank] = own if rank == cfg.train.lora.r else trained_adapter(cfg, dataset, out, rank)
    labelled = {f"tuned-r{rank}": a for rank, a in sorted(adapters.items())}
    figures = {label: training_figures(a) for label, a in labelled.items()}
    report = evaluate(cfg, run, args.method, labelled, out)
    rows = sweep_rows(report, figures)
    (out / "sweep.json").write_text(json.dumps({"run": str(run), "method": args.method, "round": args.round,
                                                "split": "dev", "rows": rows}, indent=2) + "\n", encoding="utf-8")
    plot(rows, out / "sweep.png")
    print(format_table(rows))
    print(f"\n{out / 'sweep.json'}, {out / 'sweep.png'}, {out / 'eval' / 'report.md'}")
    return 0


if __name__ == "__main__":
    run_script(main)
