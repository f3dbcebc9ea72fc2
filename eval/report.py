"""The eval report: ``report.json`` (every number), ``report.md`` (the side-by-side tables) and
``scores.png`` (scores with their intervals, per model and task kind), all written atomically.

    report = build_report(results, samples=1000, confidence=0.95, seed=0, title="smollm2-cpu")
    paths = write_report(report, "runs/eval")

The headline metric, ``correct_grounded``, comes first in every table, the plot and the paired tests. Each
model's block in ``report.json`` says what was evaluated (base model, adapter, prompt, endpoint: the key's
variable, never the key), its scores with intervals (overall, per task kind, per phrasing), cost and failures,
and its paired comparison against the first model (and against its ``compare_to`` model).

The rules in full: docs/modules.md, actune.eval.report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from actune.eval.failures import FAILURE_MODES, failure_counts
from actune.eval.stats import HEADLINE, PAIRED_METRICS, cost_per_episode, metric_names, model_stats, paired_comparison
from actune.records.atomic_write import atomic_write_png, atomic_write_text
from actune.records.jsonl import json_object
from actune.records.trajectory import Trajectory
from actune.runtime.provenance import provenance_markdown
from actune.world.phrasings import report_groups

__all__ = ["ModelResult", "build_report", "format_markdown", "headline_sentence", "plot_scores", "write_report"]


@dataclass
class ModelResult:
    """One evaluated system and its records."""

    label: str
    model: str = ""
    """Its base model (``eval.models[i].model``)."""
    adapter: str | None = None
    """Adapter folder (None: the base model as it is)."""
    adapter_name: str | None = None
    """The adapter's name on the server."""
    store: str = ""
    records: list[Trajectory] = field(default_factory=list)
    prompt_spec: str | None = None
    """The prompt spec file applied to its loop (an adapter's or a merged model's); None: ``eval.agent``."""
    agent_overrides: dict[str, Any] = field(default_factory=dict)
    """Its ``eval.models[i].agent`` overrides of ``eval.agent``."""
    endpoint: dict[str, Any] | None = None
    """What served it (:func:`actune.eval.run.endpoint_note`): kind, endpoint URLs, the key's variable."""
    compare_to: str | None = None
    """Another model's label it is also paired against (``vs_reference``)."""


def phrasing_breakdown(results: Sequence[ModelResult], *, samples: int, confidence: float,
                       seed: int) -> list[dict[str, Any]]:
    """Per model, its world tasks by phrasing group (:data:`actune.world.phrasings.PHRASING_GROUPS`: seen
    wording, a held-out wording of a trained relation, a relation training never asks): the paired metrics'
    estimates and, but for the first model, the paired comparison against the first on that group's tasks.
    Inside the held-out wordings, their far half (``new_phrasing_far``) and, in a world whose splits share facts,
    the questions no training question shares a fact with (:func:`actune.world.phrasings.report_groups`; a task may
    be in two groups). Empty blocks when no task is a world task (a report of HotpotQA has no such rows)."""

    def split(records: Sequence[Trajectory]) -> dict[str, list[Trajectory]]:
        return {g: [records[i] for i in idx] for g, idx in report_groups([t.task.meta for t in records]).items()}

    first = split(results[0].records) if results else {}
    out = []
    for i, r in enumerate(results):
        blocks = {}
        for g, recs in split(r.records).items():
            block = model_stats(recs, samples=samples, confidence=confidence, seed=seed, metrics=PAIRED_METRICS,
                                per_kind=False)
            block["vs_first"] = None if i == 0 else {
                m: paired_comparison(first.get(g, []), recs, metric=m, samples=samples, confidence=confidence,
                                     seed=seed).to_dict() for m in PAIRED_METRICS}
            blocks[g] = block
        out.append(blocks)
    return out


def _paired(a: ModelResult, b: ModelResult, samples: int, confidence: float, seed: int) -> dict[str, Any]:
    """``b`` against ``a`` on each paired metric."""
    return {m: paired_comparison(a.records, b.records, metric=m, samples=samples, confidence=confidence,
                                 seed=seed).to_dict() for m in PAIRED_METRICS}


def _yardstick_block(ys: Sequence[ModelResult], metrics: list[str], samples: int, confidence: float,
                     seed: int) -> tuple[list[dict[str, Any]], ModelResult | None]:
    """Each yardstick's row (its stats, computed once) and the best: the highest headline mean, ``correct``
    breaking ties, the first of equals."""
    stats = [model_stats(y.records, samples=samples, confidence=confidence, seed=seed, metrics=metrics) for y in ys]
    means = [(st["metrics"][HEADLINE]["mean"] or 0.0, st["metrics"]["correct"]["mean"] or 0.0) for st in stats]
    best = ys[max(range(len(ys)), key=means.__getitem__)] if ys else None
    rows = [{"label": y.label, "policy": y.model, "best": y is best, **st} for y, st in zip(ys, stats)]
    return rows, best


def build_report(results: Sequence[ModelResult], *, samples: int, confidence: float, seed: int,
                 title: str = "eval", extra: dict[str, Any] | None = None,
                 yardsticks: Sequence[ModelResult] = ()) -> dict[str, Any]:
    """Every number of the report (see the module docstring); ``yardsticks`` (content-free policies on the same
    tasks, :mod:`actune.eval.yardsticks`) become rows of their own and every model is paired against the best."""
    metrics = metric_names([t for r in results for t in r.records])
    ys_rows, best = _yardstick_block(yardsticks, metrics, samples, confidence, seed)
    models = []
    phrasings = phrasing_breakdown(results, samples=samples, confidence=confidence, seed=seed)
    for i, r in enumerate(results):
        stats = model_stats(r.records, samples=samples, confidence=confidence, seed=seed, metrics=metrics)
        vs_first = _paired(results[0], r, samples, confidence, seed) if i > 0 else None
        reference = next((x for x in results if r.compare_to and x.label == r.compare_to), None)
        vs_reference = ({"label": reference.label, **_paired(reference, r, samples, confidence, seed)}
                        if reference is not None else None)
        models.append({
            "label": r.label, "model": r.model, "adapter": r.adapter, "adapter_name": r.adapter_name,
            "prompt_spec": r.prompt_spec, "agent_overrides": dict(r.agent_overrides),
            "endpoint": dict(r.endpoint) if r.endpoint else None, "store": r.store, **stats,
            "cost": cost_per_episode(r.records), "failures": failure_counts(r.records), "vs_first": vs_first,
            "vs_reference": vs_reference,
            "vs_yardstick": ({"label": best.label, **_paired(best, r, samples, confidence, seed)}
                             if best is not None else None),
            "by_phrasing": phrasings[i],
        })
    return {"title": title, "confidence": confidence, "bootstrap_samples": samples, "seed": seed,
            "headline": HEADLINE, "metrics": metrics, "paired_metrics": list(PAIRED_METRICS),
            "total_episodes": sum(len(r.records) for r in results), **(extra or {}),
            "evidence_unknown_tasks": _evidence_unknown(results), "yardsticks": ys_rows,
            "best_yardstick": best.label if best is not None else None, "models": models}


def _evidence_unknown(results: Sequence[ModelResult]) -> int:
    """Tasks whose source lacks the supporting sentences (scored apart: no evidence-level headline value)."""
    return len({t.task.id for r in results for t in r.records if t.task.meta.get("evidence_known") is False})


def _score(est: dict[str, Any]) -> str:
    if est["mean"] is None:
        return "–"
    return f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"


def _signed(est: dict[str, Any]) -> str:
    if est["mean"] is None:
        return "–"
    return f"{est['mean']:+.3f} [{est['low']:+.3f}, {est['high']:+.3f}]"


def _mean(v: float | None, digits: int) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _prompt(m: dict[str, Any]) -> str:
    """How the model's loop was configured: ``eval.agent``, its overrides, then a prompt spec."""
    parts = ["eval.agent"]
    parts += [f"{k}={json.dumps(v)}" for k, v in (m.get("agent_overrides") or {}).items()]
    if m.get("prompt_spec"):
        parts.append(f"spec {m['prompt_spec']}")
    return " + ".join(parts)


def _served_by(m: dict[str, Any]) -> str:
    """What served the model: the endpoint kind, and the hosts of given endpoints."""
    note = m.get("endpoint")
    if not note:
        return "–"
    hosts = ", ".join(dict.fromkeys(urlsplit(u).netloc for u in note.get("endpoints") or []))
    return f"{note['kind']} ({hosts})" if hosts else note["kind"]


def headline_sentence(report: dict[str, Any]) -> str:
    """One sentence: every model's headline score, and each one's difference from the first."""
    h = report["headline"]
    models = report["models"]
    scores = ", ".join(f"`{m['label']}` {_score(m['metrics'][h])}" for m in models)
    text = f"**Headline, `{h}`** (correct and grounded: {GROUNDED_MEANS}): {scores}"
    if len(models) > 1:
        first = models[0]["label"]
        diffs = []
        for m in models[1:]:
            c = m["vs_first"][h]
            diffs.append(f"`{m['label']}` − `{first}` {_signed(c['diff'])} (McNemar p = {c['p_value']:.4g})")
        text += "; " + ", ".join(diffs)
    best = report.get("best_yardstick")
    if best:
        row = next(y for y in report["yardsticks"] if y["label"] == best)
        diffs = [f"`{m['label']}` − it {_signed(m['vs_yardstick'][h]['diff'])} "
                 f"(p = {m['vs_yardstick'][h]['p_value']:.4g})" for m in models if m.get("vs_yardstick")]
        text += f". The best content-free policy, `{best}`, scores {_score(row['metrics'][h])}: " + ", ".join(diffs)
    return text + "."


GROUNDED_MEANS = ("the supporting sentences shown in the episode's observations where the task names them, else "
                  "every supporting page opened")


def _phrasing_markdown(models: list[dict[str, Any]], first: str) -> list[str]:
    """The headline per phrasing group, each model paired against the first on that group's tasks."""
    groups = list(dict.fromkeys(g for m in models for g in m.get("by_phrasing") or {}))
    if not groups:
        return []
    lines = ["", f"## Per phrasing (`{HEADLINE}`)", "",
             "seen: a wording training used; new_phrasing: a held-out wording of a trained relation (of them, "
             "new_phrasing_far: the half farthest in word edits from any trained wording; new_phrasing_fact_free: "
             "those asking no training question's fact); new_relation: "
             f"a relation no training question asks. Beside each score: the difference from `{first}` on the same "
             "tasks and its McNemar p.", "", "| label | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
    for m in models:
        cells = []
        for g in groups:
            block = (m.get("by_phrasing") or {}).get(g)
            if block is None:
                cells.append("–")
                continue
            cell = f"{_score(block['metrics'][HEADLINE])} (n={block['tasks']})"
            c = (block.get("vs_first") or {}).get(HEADLINE)
            if c is not None:
                cell += f", {_signed(c['diff'])}, p = {c['p_value']:.3g}"
            cells.append(cell)
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    return lines


def _yardstick_markdown(report: dict[str, Any], metrics: list[str], pct: str) -> list[str]:
    """The content-free policies' scores, then every model paired against the best of them."""
    ys = report.get("yardsticks") or []
    lines: list[str] = []
    if report.get("evidence_unknown_tasks"):
        lines += ["", f"{report['evidence_unknown_tasks']} tasks name no supporting sentences (the source lacks them): "
                  f"they have no `{HEADLINE}` value and are scored apart, on `correct` and `correct_pages_read`."]
    if not ys:
        return lines
    lines += ["", "## Yardsticks: content-free policies on the same tasks", "",
              "Each answers from the question and the training answers alone (`actune.eval.yardsticks`); "
              "`+search` opens the pages the question names first, which never changes its answer. The best "
              f"(by `{HEADLINE}`) is marked *.", "", "| policy | tasks | " + " | ".join(metrics) + " |",
              "|---|---:|" + "---|" * len(metrics)]
    for y in ys:
        lines.append(f"| {y['label']}{' *' if y['best'] else ''} | {y['tasks']} | "
                     + " | ".join(_score(y["metrics"][k]) for k in metrics) + " |")
    lines += ["", f"### Paired against `{report['best_yardstick']}`", "",
              f"Difference (model − yardstick), paired bootstrap {pct} interval; exact McNemar test.", "",
              "| label | metric | tasks | difference | b | c | McNemar p |", "|---|---|---:|---|---:|---:|---:|"]
    for m in report["models"]:
        for metric in report["paired_metrics"]:
            c = m["vs_yardstick"][metric]
            lines.append(f"| {m['label']} | {metric} | {c['tasks']} | {_signed(c['diff'])} | {c['b']} | {c['c']} | "
                         f"{c['p_value']:.4g} |")
    return lines


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: the headline, scores, per kind, cost, failure modes, paired tests against the
    first model."""
    pct = f"{report['confidence']:.0%}"
    metrics = report["metrics"]
    models = report["models"]
    first = models[0]["label"] if models else ""
    lines = [f"# Eval: {report['title']}", ""]
    if models:
        lines += [headline_sentence(report), ""]
    lines += [f"Scores are means over tasks (a task's attempts averaged) with {pct} percentile bootstrap intervals "
              f"({report['bootstrap_samples']} resamples, seed {report['seed']}). `correct` is the task's own "
              "correctness flag (exact match for QA); `correct_grounded` also needs the judge's grounding verdict "
              f"({GROUNDED_MEANS}; `correct_pages_read` is the page-level figure), so a lucky guess does not count; "
              "a method that reads no pages (CoT) "
              "scores 0 on it, and a record without a verdict (written before eval judged episodes) is left out "
              "of it, not counted as wrong.", "", "## Scores", ""]
    lines.append("| label | model | served by | adapter | prompt | episodes | tasks | " + " | ".join(metrics) + " |")
    lines.append("|---|---|---|---|---|---:|---:|" + "---|" * len(metrics))
    for m in models:
        lines.append(f"| {m['label']} | {m['model'] or '–'} | {_served_by(m)} | {m['adapter_name'] or '–'} | "
                     f"{_prompt(m)} | "
                     f"{m['episodes']} | {m['tasks']} | " + " | ".join(_score(m["metrics"][k]) for k in metrics) + " |")
    kinds = sorted({k for m in models for k in m["by_kind"]})
    if kinds:
        for metric in report["paired_metrics"]:
            lines += ["", f"## Per task kind (`{metric}`)", "", "| label | " + " | ".join(kinds) + " |",
                      "|---|" + "---|" * len(kinds)]
            for m in models:
                cells = []
                for k in kinds:
                    block = m["by_kind"].get(k)
                    cells.append(f"{_score(block['metrics'][metric])} (n={block['tasks']})" if block else "–")
                lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    lines += _yardstick_markdown(report, metrics, pct)
    lines += _phrasing_markdown(models, first)
    lines += ["", "## Cost per episode", "", "| label | episodes | prompt tokens | completion tokens | wall s |",
              "|---|---:|---:|---:|---:|"]
    for m in models:
        c = m["cost"]
        lines.append(f"| {m['label']} | {c['episodes']} | {_mean(c['prompt_tokens'], 1)} | "
                     f"{_mean(c['completion_tokens'], 1)} | {_mean(c['wall_s'], 2)} |")
    lines += ["", f"Total: {report['total_episodes']} episodes."]
    modes = [mode for mode in FAILURE_MODES if any(m["failures"][mode] for m in models)]
    if modes:
        lines += ["", "## Outcomes (episodes)", "", "| label | " + " | ".join(modes) + " |",
                  "|---|" + "---:|" * len(modes)]
        for m in models:
            lines.append(f"| {m['label']} | " + " | ".join(str(m["failures"][mode]) for mode in modes) + " |")
    if len(models) > 1:
        lines += ["", f"## Paired against `{first}`", "",
                  f"Difference (model − {first}) over the tasks both ran, paired bootstrap {pct} interval; exact "
                  "McNemar test on the episodes (b: only the reference right, c: only the model right).", "",
                  "| label | metric | tasks | pairs | difference | b | c | McNemar p |",
                  "|---|---|---:|---:|---|---:|---:|---:|"]
        for m in models[1:]:
            for metric in report["paired_metrics"]:
                c = m["vs_first"][metric]
                lines.append(f"| {m['label']} | {metric} | {c['tasks']} | {c['pairs']} | {_signed(c['diff'])} | "
                             f"{c['b']} | {c['c']} | {c['p_value']:.4g} |")
    referenced = [m for m in models if m.get("vs_reference")]
    if referenced:
        lines += ["", "## Paired against the model each was trained on from", "",
                  "| label | against | metric | tasks | difference | b | c | McNemar p |",
                  "|---|---|---|---:|---|---:|---:|---:|"]
        for m in referenced:
            ref = m["vs_reference"]
            for metric in report["paired_metrics"]:
                c = ref[metric]
                lines.append(f"| {m['label']} | {ref['label']} | {metric} | {c['tasks']} | {_signed(c['diff'])} | "
                             f"{c['b']} | {c['c']} | {c['p_value']:.4g} |")
    if report.get("provenance"):
        lines += ["", *provenance_markdown(report["provenance"])]
    return "\n".join(lines) + "\n"


def plot_scores(report: dict[str, Any], path: str | Path) -> Path:
    """Bar charts of ``correct_grounded`` (top, the headline) and ``correct`` (below) with their intervals as
    error bars: one group for all tasks and one per kind, one bar per model. Rendered with the Agg canvas
    (no display needed), written atomically."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    best = next((y for y in report.get("yardsticks") or [] if y["best"]), None)
    models = [*report["models"], *([best] if best else [])]  # the best yardstick as a bar of its own
    metrics = report["paired_metrics"]
    kinds = sorted({k for m in models for k in m["by_kind"]})
    groups = ["all", *kinds] if len(kinds) > 1 else ["all"]
    panel_w = max(4.0, 1.6 * len(groups) * max(1, len(models)) / 2 + 2)
    fig = Figure(figsize=(panel_w, 3.2 * len(metrics)), dpi=100)
    FigureCanvasAgg(fig)
    width = 0.8 / max(1, len(models))
    for p, metric in enumerate(metrics):
        ax = fig.add_subplot(len(metrics), 1, p + 1)
        for i, m in enumerate(models):
            means, lows, highs = [], [], []
            for g in groups:
                est = m["metrics"][metric] if g == "all" else (m["by_kind"].get(g) or {}).get("metrics", {}).get(
                    metric, {"mean": None})
                mean = est["mean"]
                means.append(mean or 0.0)
                lows.append(0.0 if mean is None else mean - est["low"])
                highs.append(0.0 if mean is None else est["high"] - mean)
            xs = [j + (i - (len(models) - 1) / 2) * width for j in range(len(groups))]
            ax.bar(xs, means, width, yerr=[lows, highs], capsize=3, label=m["label"],
                   hatch="//" if m is best else None)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(f"{metric} ({report['confidence']:.0%} CI)")
        ax.set_title(f"{report['title']}: {metric}")
        ax.legend(fontsize="small")
    return atomic_write_png(fig, path)


REPORT_FILES = ("report.json", "report.md", "scores.png")
"""What :func:`write_report` writes into ``out_dir``, ``report.json`` first."""


def foreign_report_file(out_dir: str | Path) -> Path | None:
    """The first of :data:`REPORT_FILES` in ``out_dir`` that no eval wrote, or None: an eval's ``report.json`` (written
    first) is a JSON object with ``title`` and ``models``; without it, any of the three is someone else's."""
    out = Path(out_dir)
    report = json_object(out / REPORT_FILES[0])
    if report is not None and {"title", "models"} <= report.keys():
        return None
    return next((out / n for n in REPORT_FILES if (out / n).exists() or (out / n).is_symlink()), None)


def write_report(report: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``scores.png`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "md": out / "report.md", "png": out / "scores.png"}
    atomic_write_text(paths["json"], json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(paths["md"], format_markdown(report))
    plot_scores(report, paths["png"])
    return paths
