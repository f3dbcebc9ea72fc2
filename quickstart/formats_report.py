"""The Figure 3 table of the quickstart report (``formats``): per step format, the prompted model against the one
fine-tuned on the run's ReAct episodes in that format, paired on the same questions.

The metric is ``correct`` (exact match for QA, label accuracy for FEVER), the ReAct paper's: Standard and CoT read
no pages, so correct & grounded cannot credit them (it is given for Act and ReAct beside it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actune.agent.method_registry import reads_no_pages
from actune.bootstrap.export import SUMMARY_FILE
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.formats import PROMPTED, TUNED
from actune.quickstart.layout import Layout
from actune.records.atomic_write import atomic_write_png
from actune.train.common import TRAINING_META_FILE

__all__ = ["FORMATS_METRIC", "FIGURE3_PNG", "format_rows", "formats_markdown", "plot_formats"]

FIGURE3_PNG = "figure3.png"
"""The Figure 3 plot, beside the report."""

FORMATS_METRIC = "correct"
_GROUNDED = "correct_grounded"


def _json(path: Any) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _row(fmt: str, report: dict[str, Any], summary: dict[str, Any] | None,
         meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """One format's row from its eval report, export summary and training meta; None until both models are in."""
    models = {m["label"]: m for m in report["models"]}
    if PROMPTED not in models or TUNED not in models:
        return None
    prompted, tuned = models[PROMPTED]["metrics"], models[TUNED]["metrics"]
    grounded = None if reads_no_pages(fmt) else {"prompted": prompted.get(_GROUNDED), "tuned": tuned.get(_GROUNDED)}
    return {"format": fmt, "prompted": prompted[FORMATS_METRIC], "tuned": tuned[FORMATS_METRIC],
            "vs_prompted": (models[TUNED].get("vs_first") or {}).get(FORMATS_METRIC), "correct_grounded": grounded,
            "examples": (summary or {}).get("exported"), "tasks": (summary or {}).get("tasks"),
            "steps": (meta or {}).get("steps")}


def format_rows(cfg: QuickstartConfig, layout: Layout) -> list[dict[str, Any]]:
    """A row per format of ``cfg.formats`` whose eval has reported both models, in ``formats`` order."""
    rows = []
    for fmt in cfg.formats:
        report = _json(layout.format_eval_dir(fmt) / "report.json")
        row = report and _row(fmt, report, _json(layout.format_dataset(fmt) / SUMMARY_FILE),
                              _json(layout.format_adapter(fmt) / TRAINING_META_FILE))
        if row:
            rows.append(row)
    return rows


def _mean(est: dict[str, Any] | None) -> str:
    return "–" if not est or est.get("mean") is None else f"{est['mean']:.3f}"


def _interval(est: dict[str, Any]) -> str:
    if est.get("mean") is None:
        return "–"
    text = f"{est['mean'] * 100:+.1f} pts"
    return text if est.get("low") is None else f"{text} [{est['low'] * 100:+.1f}, {est['high'] * 100:+.1f}]"


def formats_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The report's Figure 3 section ([] without rows)."""
    if not rows:
        return []
    lines = ["## Figure 3: step formats, prompted vs fine-tuned", "",
             "Each format's adapter learnt from the same bootstrapped ReAct episodes (one a solved training task), "
             "converted: Standard the answer, CoT the thoughts as one reasoning, Act the actions and observations. "
             f"`{FORMATS_METRIC}` (Standard and CoT read no pages: correct & grounded cannot credit them), the tuned "
             "model paired against the prompted one in the same method (difference with its 95% interval, b / c: "
             f"questions only the prompted / only the tuned model got right, exact McNemar p). Plot: `{FIGURE3_PNG}`.",
             "",
             "| format | prompted | tuned | gain | b / c | McNemar p | correct & grounded (prompted → tuned) "
             "| examples (tasks) | steps |",
             "|---|---:|---:|---|---|---:|---|---|---:|"]
    for r in rows:
        vs = r["vs_prompted"]
        gain, bc, p = ("–", "–", "–") if not vs else (_interval(vs["diff"]), f"{vs['b']} / {vs['c']}",
                                                      f"{vs['p_value']:.2g}")
        g = r["correct_grounded"]
        grounded = "reads no pages" if g is None else f"{_mean(g['prompted'])} → {_mean(g['tuned'])}"
        lines.append(f"| {r['format']} | {_mean(r['prompted'])} | {_mean(r['tuned'])} | {gain} | {bc} | {p} | "
                     f"{grounded} | {r['examples']} ({r['tasks']}) | {r['steps']} |")
    return lines + ["", "Each format's own tables: `formats/<format>/eval/report.md`.", ""]


def plot_formats(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """The Figure 3 plot: per format, the prompted and the tuned model's ``correct`` with its 95% interval."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4.5, 1.3 * len(rows) + 1.5), 3.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for i, key in enumerate((PROMPTED, TUNED)):
        ests = [r[key] for r in rows]
        means = [e["mean"] for e in ests]
        err = [[m - e.get("low", m) for m, e in zip(means, ests)], [e.get("high", m) - m for m, e in zip(means, ests)]]
        bars = ax.bar([j + (i - 0.5) * 0.4 for j in range(len(rows))], means, 0.4, yerr=err, capsize=3, label=key)
        ax.bar_label(bars, labels=[f"{m:.2f}" for m in means], fontsize="x-small", padding=2)  # a 0 bar shows too
    ax.set_xticks(range(len(rows)), [r["format"] for r in rows])
    ax.set_ylim(0, 1.0)
    ax.set_ylabel(f"{FORMATS_METRIC} (95% CI)")
    ax.set_title(f"{title}: Figure 3")
    ax.legend(fontsize="small")
    atomic_write_png(fig, path)
