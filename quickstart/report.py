"""The quickstart's own report: the headline of every method's eval, judged against the claim it tests.

    paths = write_quickstart_report(cfg, layout)    # report.md, report.json, scores.png in layout.out

It reads each method's eval report (``eval/<method>/report.json``) and states, for every tuned model
against the prompted model with the generic prompt, the headline metric (correct AND grounded), the
paired difference with its interval, McNemar's exact p-value, the ratio, and whether the project's
bar is met: at least 2x the prompted rate, at least 10 points higher, p < 0.01. A miss is reported as
a miss, with what was measured, beside what each tuned model learnt from (examples by source method,
tasks, steps, epochs, rank).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actune.bootstrap.export import SUMMARY_FILE
from actune.config import public_dump
from actune.eval.yardsticks import YARDSTICK_PREFIX
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.evaluation import objective_label
from actune.quickstart.formats_report import FIGURE3_PNG, format_rows, formats_markdown, plot_formats
from actune.quickstart.layout import Layout
from actune.quickstart.round_inputs import round_epochs, trains_on_previous
from actune.records.atomic_write import atomic_write_png, atomic_write_text
from actune.runtime.provenance import provenance, provenance_markdown
from actune.serve.hardware import served_dtype
from actune.train.common import TRAINING_META_FILE

__all__ = ["HEADLINE", "BAR", "headline_rows", "training_rows", "write_quickstart_report", "yardstick_rows"]

HEADLINE = "correct_grounded"
BAR = {"ratio": 2.0, "points": 0.10, "p": 0.01, "yardstick_points": 0.05}
"""What counts as a clear gain of a tuned model over its prompted self (issue #7), and over the best content-free
policy on the same questions (issue #48: a gain a shortcut explains is no gain), each at p < ``p``."""


def _comparison(model: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """The paired comparison of ``model`` against the first model of its report, for ``metric``."""
    return (model.get("vs_first") or {}).get(metric)


def headline_rows(report: dict[str, Any], method: str, bar: bool = True) -> list[dict[str, Any]]:
    """One row per model of a method's eval report, with the bar's verdict for tuned models when ``bar`` (our
    presets; a user's own run gets the figures and tests alone)."""
    rows = []
    for m in report["models"]:
        est = m["metrics"].get(HEADLINE) or {"mean": None, "low": None, "high": None, "n": 0}
        correct = m["metrics"].get("correct") or {"mean": None}
        row: dict[str, Any] = {"method": method, "label": m["label"], "model": m.get("model"), HEADLINE: est,
                               "correct": correct, "cost": m.get("cost")}
        cmp = _comparison(m, HEADLINE)
        if cmp is not None:
            a, b = cmp.get("mean_a"), cmp.get("mean_b")
            ratio = (b / a) if a else (float("inf") if b else None)
            row["vs_prompted"] = {**cmp, "ratio": ratio}
            if bar and m["label"].startswith("tuned"):
                checks = {
                    "ratio": ratio is not None and ratio >= BAR["ratio"],
                    # rates are fractions of a whole number of questions: compare with a hair of slack for float sums
                    "points": a is not None and b is not None and b - a >= BAR["points"] - 1e-9,
                    "p": cmp["p_value"] < BAR["p"],
                }
                ys = m.get("vs_yardstick")
                if ys:
                    y = ys[HEADLINE]
                    checks["yardstick"] = (y["diff"]["mean"] is not None
                                           and y["diff"]["mean"] >= BAR["yardstick_points"] - 1e-9
                                           and y["p_value"] < BAR["p"])
                row["bar"] = {**checks, "met": all(checks.values())}
        if m.get("vs_yardstick"):
            row["vs_yardstick"] = {"label": m["vs_yardstick"]["label"], **m["vs_yardstick"][HEADLINE]}
        ref = m.get("vs_reference")
        if ref:  # an after_sft model against the SFT model it started from
            row["vs_reference"] = {"label": ref["label"], **ref[HEADLINE]}
        row["by_phrasing"] = {g: {HEADLINE: b["metrics"][HEADLINE], "tasks": b["tasks"],
                                  "vs_prompted": (b.get("vs_first") or {}).get(HEADLINE)}
                              for g, b in (m.get("by_phrasing") or {}).items()}
        rows.append(row)
    return rows


def yardstick_rows(report: dict[str, Any], method: str) -> list[dict[str, Any]]:
    """The best content-free policy of a method's eval report as a row of its own (no bar: it is the bar), shown
    beside the models in the table and the plot, kept apart from them in report.json (``yardsticks``)."""
    best = next((y for y in report.get("yardsticks") or [] if y.get("best")), None)
    if best is None:
        return []
    return [{"method": method, "label": best["label"], "model": best.get("policy"), HEADLINE: best["metrics"][HEADLINE],
             "correct": best["metrics"]["correct"], "cost": None, "yardstick": True,
             "by_phrasing": {}}]


def _beside(rows: list[dict[str, Any]], yardsticks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The models' rows with each method's best yardstick after its prompted row, as the table and plot show them."""
    out: list[dict[str, Any]] = []
    for r in rows:
        out.append(r)
        if r["label"] == "prompted":
            out += [y for y in yardsticks if y["method"] == r["method"]]
    return out


def _pct(est: dict[str, Any]) -> str:
    if est.get("mean") is None:
        return "–"
    if est.get("low") is None:
        return f"{est['mean']:.3f}"
    return f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"


def training_rows(cfg: QuickstartConfig, layout: Layout) -> list[dict[str, Any]]:
    """What each tuned model learnt from (the issue's "data size x epochs x rank against gain"): per method and
    round, the model it trained on (``round_start``), the exported examples by source method and their tasks
    (``export_summary.json``), and the steps, epochs and dev-picked step of its training
    (``training_meta.json``). Rounds not yet trained are left out."""
    rows = []
    for method in cfg.methods:
        for r in range(1, cfg.rounds + 1):
            if layout.trained_round(method, r) != r:  # added no data: not trained, its model an earlier round's
                rows.append({"method": method, "round": r, "same_as": layout.trained_round(method, r)})
                continue
            summary_path = layout.dataset(method, r) / SUMMARY_FILE
            meta_path = layout.adapter(method, r) / TRAINING_META_FILE
            if not (summary_path.is_file() and meta_path.is_file()):
                continue
            summary = json.loads(summary_path.read_text(encoding="utf-8"))
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            rows.append({"method": method, "round": r, "exported": summary["exported"], "tasks": summary["tasks"],
                         "by_source": {m: c["exported"] for m, c in summary["methods"].items() if c["exported"]},
                         "by_store": {_store_label(layout, p): n for p, n in summary.get("by_store", {}).items()},
                         "train_examples": meta.get("train_examples"), "dev_examples": meta.get("dev_examples"),
                         "steps": meta.get("steps"), "best_step": meta.get("best_step"),
                         "trained_on": f"tuned-r{r - 1}" if trains_on_previous(cfg, r, method) else "base",
                         "epochs": round_epochs(cfg, r, method), "lora_r": cfg.train.lora.r})
    return rows


def _store_label(layout: Layout, store: str) -> str:
    """A store as the report names it: its folder within the run (``react/round1``, ``imports/0``), else its path."""
    path = Path(store)
    try:
        return str(path.parent.relative_to(layout.out))
    except ValueError:
        return store


def _training_markdown(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["## Training data", "",
             "| model | trained on | examples (by source method) | from (store: examples) | tasks "
             "| trained / dev slice | steps (dev-picked) | epochs | LoRA r |",
             "|---|---|---|---|---:|---|---|---:|---:|"]
    for t in rows:
        if "same_as" in t:
            lines.append(f"| {t['method']} tuned-r{t['round']} | not trained: the round added no training data; its "
                         f"model is tuned-r{t['same_as']}, evaluated once under that name | | | | | | | |")
            continue
        sources = ", ".join(f"{m} {n}" for m, n in t["by_source"].items())
        stores = ", ".join(f"{s} {n}" for s, n in (t.get("by_store") or {}).items()) or "–"
        lines.append(f"| {t['method']} tuned-r{t['round']} | {t['trained_on']} | {t['exported']} ({sources}) | "
                     f"{stores} | {t['tasks']} | "
                     f"{t['train_examples']} / {t['dev_examples']} | {t['steps']} ({t['best_step']}) | "
                     f"{t['epochs']:g} | {t['lora_r']} |")
    return lines + [""]


def _phrasing_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The method's headline per phrasing group (world tasks only), each tuned model paired against the
    prompted model on that group's questions."""
    groups = list(dict.fromkeys(g for r in rows for g in r.get("by_phrasing") or {}))
    if not groups:
        return []
    lines = ["", "By phrasing (seen: a wording trained on; new_phrasing: a held-out wording of a trained relation; "
             "new_relation: a relation no training question asks): correct & grounded, then the difference from "
             "`prompted` on the same questions, b / c and McNemar p.", "",
             "| model | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
    for r in rows:
        cells = []
        for g in groups:
            block = (r.get("by_phrasing") or {}).get(g)
            if block is None:
                cells.append("–")
                continue
            cell = f"{_pct(block[HEADLINE])} (n={block['tasks']})"
            vs = block.get("vs_prompted")
            if vs is not None:
                cell += f"; {_signed(vs['diff'])}, {vs['b']} / {vs['c']}, p {vs['p_value']:.2g}"
            cells.append(cell)
        lines.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    return lines


def _reference_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The after_sft models against the SFT model each started from."""
    rows = [r for r in rows if r.get("vs_reference")]
    if not rows:
        return []
    lines = ["", "Against the SFT model each started from (correct & grounded, paired):", "",
             "| model | against | difference | b / c | McNemar p |", "|---|---|---|---|---:|"]
    for r in rows:
        ref = r["vs_reference"]
        lines.append(f"| {r['label']} | {ref['label']} | {_pct(ref['diff'])} | {ref['b']} / {ref['c']} | "
                     f"{ref['p_value']:.2g} |")
    return lines


def _signed(est: dict[str, Any]) -> str:
    return "–" if est.get("mean") is None else f"{est['mean'] * 100:+.1f} pts"


def _row_labels(rows: list[dict[str, Any]]) -> str:
    """What each row label of the report means, for the labels it has."""
    labels = {r["label"] for r in rows}
    said = ["`prompted`: the base model with the generic few-shot prompt"]
    if "prompted-oracle" in labels:
        said.append("`prompted-oracle`: the same model given exemplars of each question's own type "
                    "(`exemplar_kinds: [task]`), a reference for prompting at its best, which no user has for a new "
                    "question")
    if any(lab.startswith("tuned-r") for lab in labels):
        said.append("`tuned-rN`: the model tuned after round N (round 1 on the first episodes kept, each later round "
                    "adding the tuned model's own)")
    for objective, how in (("dpo", "by DPO on its own kept-versus-failed episode pairs"),
                           ("grpo", "by GRPO with the task's reward")):
        if objective_label(objective) in labels:
            said.append(f"`{objective_label(objective)}`: the last round's model trained further {how} "
                        f"(`after_sft: [{objective}]`)")
    if any(lab.startswith(YARDSTICK_PREFIX) for lab in labels):
        said.append("`yardstick:NAME`: a content-free policy, no model (a constant answer, answers read off the "
                    "question, with and without opening the pages it names)")
    return "Rows: " + "; ".join(said) + "."


def _markdown(title: str, rows: list[dict[str, Any]], stages: dict[str, Any], cfg: dict[str, Any],
              training: list[dict[str, Any]], command: str | None = None, sections: list[str] | None = None) -> str:
    """The report's text; ``sections``: lines placed after the methods' tables (the Figure 3 table)."""
    split = "test questions" if cfg.get("eval_split", "test") == "test" else "dev questions (a pilot: not a result)"
    lines = [f"# {title}", "", *([f"**{cfg['scale_note']}**", ""] if cfg.get("scale_note") else []),
             f"Headline: `{HEADLINE}` — the answer is right AND the sentences it rests on were shown in the "
             "episode's observations where the question names them (else every page it rests on was opened; a "
             f"comparison answered by luck does not count). Means over held-out {split} with 95% bootstrap "
             "intervals; tuned models are paired against `prompted` (the generic few-shot prompt) with an exact "
             "McNemar test, and against the best yardstick (content-free policies: a constant answer, answers read "
             "off the question, with and without opening the pages it names; `yardstick:` rows)."
             + (f" The bar (this project's, on its presets): >= {BAR['ratio']:g}x the prompted rate, >= "
                f"{BAR['points'] * 100:g} points higher, p < {BAR['p']:g}; and >= {BAR['yardstick_points'] * 100:g} "
                f"points above the best yardstick, p < {BAR['p']:g}." if cfg.get("bar") else ""),
             "", _row_labels(rows), ""]
    for method in dict.fromkeys(r["method"] for r in rows):
        bar_column = " bar |" if cfg.get("bar") else ""
        lines += [f"## {method}", "",
                  "| model | correct & grounded | correct | vs prompted (diff) | b / c | McNemar p | ratio | "
                  "vs best yardstick (diff, b / c, p) |" + bar_column,
                  "|---|---|---|---|---|---:|---:|---|" + ("---|" if bar_column else "")]
        for r in (r for r in rows if r["method"] == method):
            vs = r.get("vs_prompted")
            bar = r.get("bar")
            verdict = "–" if bar is None else ("**met**" if bar["met"] else "missed (" + ", ".join(
                k for k in ("ratio", "points", "p", "yardstick") if k in bar and not bar[k]) + ")")
            ys = r.get("vs_yardstick")
            vs_y = "–" if not ys else f"{_pct(ys['diff'])}, {ys['b']} / {ys['c']}, p = {ys['p_value']:.2g}"
            ratio = "–" if not vs or vs["ratio"] is None else f"{vs['ratio']:.2f}x"
            diff, bc, p = ("–", "–", "–") if not vs else (_pct(vs["diff"]), f"{vs['b']} / {vs['c']}",
                                                          f"{vs['p_value']:.2g}")
            lines.append(f"| {r['label']} | {_pct(r[HEADLINE])} | {_pct(r['correct'])} | {diff} | {bc} | {p} | "
                         f"{ratio} | {vs_y} |" + (f" {verdict} |" if bar_column else ""))
        lines += _reference_markdown([r for r in rows if r["method"] == method])
        lines += _phrasing_markdown([r for r in rows if r["method"] == method])
        lines += ["", f"Per-kind tables, costs and failure modes: `eval/{method}/report.md`; plot: `scores.png`.", ""]
    lines += [*(sections or []), *_training_markdown(training)]
    if stages:
        total = sum(s.get("wall_s", 0) for s in stages.values())
        lines += ["## Stages (wall time)", "", "| stage | minutes |", "|---|---:|"]
        lines += [f"| {name} | {s.get('wall_s', 0) / 60:.1f} |" for name, s in stages.items()]
        lines += [f"| **total** | {total / 60:.1f} |", ""]
    if command:
        lines += [f"Reproduce: `{command}` (the same folder resumes).", ""]
    else:
        lines += [f"Reproduce: `actune quickstart` with this run's preset and `--seed {cfg.get('seed')}` (its full "
                  "config is in report.json; the same folder resumes).", ""]
    return "\n".join(lines)


def _plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """One group of bars per method and, for world tasks, per method and phrasing group; one bar per model."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    groups = []  # (method, phrasing group or None for all questions)
    for m in dict.fromkeys(r["method"] for r in rows):
        phrasings = dict.fromkeys(g for r in rows if r["method"] == m for g in r.get("by_phrasing") or {})
        groups += [(m, None), *((m, g) for g in phrasings)]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    fig = Figure(figsize=(max(4.5, 0.5 * len(labels) * len(groups) + 2.5), 3.8), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        means, err_lo, err_hi, texts = [], [], [], []
        for m, g in groups:
            row = next((r for r in rows if r["method"] == m and r["label"] == label), None)
            est = {"mean": None} if row is None else (row[HEADLINE] if g is None else
                                                      (row["by_phrasing"].get(g) or {}).get(HEADLINE, {"mean": None}))
            mean = est.get("mean")
            means.append(mean or 0.0)
            texts.append("–" if mean is None else f"{mean:.2f}")
            err_lo.append(0.0 if mean is None or est.get("low") is None else mean - est["low"])
            err_hi.append(0.0 if mean is None or est.get("high") is None else est["high"] - mean)
        xs = [j + (i - (len(labels) - 1) / 2) * width for j in range(len(groups))]
        bars = ax.bar(xs, means, width, yerr=[err_lo, err_hi], capsize=3, label=label)
        # each bar's value written above it: a score of 0 is otherwise an invisible bar ("–": not evaluated)
        ax.bar_label(bars, labels=texts, fontsize="x-small", padding=2)
    ax.set_xticks(range(len(groups)), [m if g is None else f"{m}\n{g}" for m, g in groups], fontsize="small")
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("correct & grounded (95% CI)")
    ax.set_title(title)
    ax.legend(fontsize="small")
    atomic_write_png(fig, path)


def write_quickstart_report(cfg: QuickstartConfig, layout: Layout) -> dict[str, Path]:
    """report.md, report.json and scores.png in ``layout.out``, from every method's eval report and the run's
    state; the paths by kind (``md``, ``json``, ``png``)."""
    rows: list[dict[str, Any]] = []
    yardsticks: list[dict[str, Any]] = []
    for method in cfg.methods:
        path = layout.eval_dir(method) / "report.json"
        report = json.loads(path.read_text(encoding="utf-8"))
        rows += headline_rows(report, method, cfg.bar)
        yardsticks += yardstick_rows(report, method)
    state = json.loads(layout.state.read_text(encoding="utf-8")) if layout.state.exists() else {}
    stages = state.get("done", {})
    title = f"Quickstart {cfg.name}, seed {cfg.seed}"
    paths = {"md": layout.out / "report.md", "json": layout.out / "report.json", "png": layout.out / "scores.png"}
    training = training_rows(cfg, layout)
    formats = format_rows(cfg, layout)
    block = provenance(served_dtype(cfg.serve))
    atomic_write_text(paths["json"], json.dumps({"title": title, "headline": HEADLINE,
                                                 "bar": BAR if cfg.bar else None, "rows": rows,
                                                 "yardsticks": yardsticks,
                                                 "training": training, "formats": formats, "stages": stages,
                                                 "config": public_dump(cfg), "provenance": block}, indent=2) + "\n")
    markdown = _markdown(title, _beside(rows, yardsticks), stages, public_dump(cfg), training, state.get("command"),
                         formats_markdown(formats))
    atomic_write_text(paths["md"], markdown + "\n" + "\n".join(provenance_markdown(block)))
    _plot(_beside(rows, yardsticks), paths["png"], title)
    if formats:
        paths["figure3"] = layout.out / FIGURE3_PNG
        plot_formats(formats, paths["figure3"], title)
    return paths
