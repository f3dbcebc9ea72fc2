"""The eval report: ``report.json`` (every number), ``report.md`` (the side-by-side tables) and
``scores.png`` (scores with their intervals, per model and task kind), all written atomically.

    report = build_report(results, samples=1000, confidence=0.95, seed=0, title="smollm2-cpu")
    paths = write_report(report, "runs/eval")

``report.json``: ``{"title", "confidence", "bootstrap_samples", "seed", "metrics", "models": [...]}``;
each model: ``label``, ``model``, ``adapter`` (folder), ``adapter_name`` (served name), ``store``,
``episodes``, ``tasks``, ``metrics`` (name -> ``{mean, low, high, n}``), ``by_kind`` (kind -> the same
block), ``failures`` (mode -> count, :mod:`actune.eval.failures`) and ``vs_first`` (the paired comparison
against the first model, :func:`actune.eval.stats.paired_comparison`; None for the first).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actune.atomic_write import atomic_write_bytes, atomic_write_text
from actune.eval.failures import FAILURE_MODES, failure_counts
from actune.eval.stats import metric_names, model_stats, paired_comparison
from actune.trajectory import Trajectory

__all__ = ["ModelResult", "build_report", "format_markdown", "plot_scores", "write_report"]


@dataclass
class ModelResult:
    """One evaluated system and its records."""

    label: str
    model: str = ""
    adapter: str | None = None
    """Adapter folder (None: the prompted base model)."""
    adapter_name: str | None = None
    """The adapter's name on the server."""
    store: str = ""
    records: list[Trajectory] = field(default_factory=list)


def build_report(results: Sequence[ModelResult], *, samples: int, confidence: float, seed: int,
                 title: str = "eval", extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every number of the report (see the module docstring)."""
    metrics = metric_names([t for r in results for t in r.records])
    models = []
    for i, r in enumerate(results):
        stats = model_stats(r.records, samples=samples, confidence=confidence, seed=seed, metrics=metrics)
        vs_first = None
        if i > 0:
            vs_first = paired_comparison(results[0].records, r.records, samples=samples, confidence=confidence,
                                         seed=seed).to_dict()
        models.append({
            "label": r.label, "model": r.model, "adapter": r.adapter, "adapter_name": r.adapter_name,
            "store": r.store, **stats, "failures": failure_counts(r.records), "vs_first": vs_first,
        })
    return {"title": title, "confidence": confidence, "bootstrap_samples": samples, "seed": seed,
            "metrics": metrics, **(extra or {}), "models": models}


def _score(est: dict[str, Any]) -> str:
    if est["mean"] is None:
        return "–"
    return f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: scores, per kind, failure modes, paired tests against the first model."""
    pct = f"{report['confidence']:.0%}"
    metrics = report["metrics"]
    models = report["models"]
    first = models[0]["label"] if models else ""
    lines = [f"# Eval: {report['title']}", "",
             f"Scores are means over tasks (a task's attempts averaged) with {pct} percentile bootstrap intervals "
             f"({report['bootstrap_samples']} resamples, seed {report['seed']}). `correct` is the task's own "
             "correctness flag (exact match for QA).", "", "## Scores", ""]
    lines.append("| model | adapter | episodes | tasks | " + " | ".join(metrics) + " |")
    lines.append("|---|---|---:|---:|" + "---|" * len(metrics))
    for m in models:
        lines.append(f"| {m['label']} | {m['adapter_name'] or '–'} | {m['episodes']} | {m['tasks']} | "
                     + " | ".join(_score(m["metrics"][k]) for k in metrics) + " |")
    kinds = sorted({k for m in models for k in m["by_kind"]})
    if kinds:
        lines += ["", "## Per task kind (`correct`)", "", "| model | " + " | ".join(kinds) + " |",
                  "|---|" + "---|" * len(kinds)]
        for m in models:
            cells = []
            for k in kinds:
                block = m["by_kind"].get(k)
                cells.append(f"{_score(block['metrics']['correct'])} (n={block['tasks']})" if block else "–")
            lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    modes = [mode for mode in FAILURE_MODES if any(m["failures"][mode] for m in models)]
    if modes:
        lines += ["", "## Outcomes (episodes)", "", "| model | " + " | ".join(modes) + " |",
                  "|---|" + "---:|" * len(modes)]
        for m in models:
            lines.append(f"| {m['label']} | " + " | ".join(str(m["failures"][mode]) for mode in modes) + " |")
    if len(models) > 1:
        lines += ["", f"## Paired against `{first}`", "",
                  f"Difference of `correct` (model − {first}) over the tasks both ran, paired bootstrap {pct} "
                  "interval; exact McNemar test on the episodes (b: only the reference right, c: only the model "
                  "right).", "", "| model | tasks | difference | b | c | McNemar p |", "|---|---:|---|---:|---:|---:|"]
        for m in models[1:]:
            c = m["vs_first"]
            lines.append(f"| {m['label']} | {c['tasks']} | {_score(c['diff'])} | {c['b']} | {c['c']} | "
                         f"{c['p_value']:.4g} |")
    return "\n".join(lines) + "\n"


def plot_scores(report: dict[str, Any], path: str | Path) -> Path:
    """Bar chart of ``correct`` with its interval as error bars: one group for all tasks and one per kind,
    one bar per model. Rendered with the Agg canvas (no display needed), written atomically."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = report["models"]
    kinds = sorted({k for m in models for k in m["by_kind"]})
    groups = ["all", *kinds] if len(kinds) > 1 else ["all"]
    fig = Figure(figsize=(max(4.0, 1.6 * len(groups) * max(1, len(models)) / 2 + 2), 3.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(models))
    for i, m in enumerate(models):
        means, lows, highs = [], [], []
        for g in groups:
            est = m["metrics"]["correct"] if g == "all" else (m["by_kind"].get(g) or {}).get("metrics", {}).get(
                "correct", {"mean": None})
            mean = est["mean"]
            means.append(mean or 0.0)
            lows.append(0.0 if mean is None else mean - est["low"])
            highs.append(0.0 if mean is None else est["high"] - mean)
        xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, means, width, yerr=[lows, highs], capsize=3, label=m["label"])
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"correct ({report['confidence']:.0%} CI)")
    ax.set_title(report["title"])
    ax.legend(fontsize="small")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    path = Path(path)
    atomic_write_bytes(path, buf.getvalue())
    return path


def write_report(report: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``scores.png`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "md": out / "report.md", "png": out / "scores.png"}
    atomic_write_text(paths["json"], json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(paths["md"], format_markdown(report))
    plot_scores(report, paths["png"])
    return paths
