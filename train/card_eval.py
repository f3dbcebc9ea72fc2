"""The eval section of a model card: the rows of an eval ``report.json`` that are this folder's model, beside the
report's reference (its first model, the one every ``vs_first`` comparison is against: the prompted baseline in
the quickstart's report).

    lines = eval_section(Path("runs/eval/react/report.json"), Path("runs/adapter"))   # markdown lines

The report is read as ``actune eval`` writes it (``actune.eval.report``: ``models[i]`` with ``label``,
``model``, ``adapter``, ``metrics`` name -> ``{mean, low, high, n}``, ``vs_first`` name -> ``{diff, p_value,
...}``; ``paired_metrics``, ``confidence``, ``bootstrap_samples``, ``seed``, ``title``), by its keys only: a
stage does not import another. A row is this folder's when its ``adapter`` is the adapter folder or its
``model`` the merged folder, either way round: an adapter's card shows its ``merged/`` evaluated, a merged
model's card the adapter it was merged from (the same trained weights). Paths in the report are read from the
current folder, as eval wrote them. A report without such a row is a :class:`ReportError` naming the report
and the models it does evaluate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actune.train.common import MERGED_DIR

__all__ = ["ReportError", "eval_section", "matching_rows", "model_index"]

_ADAPTER_CONFIG = "adapter_config.json"


class ReportError(ValueError):
    """The eval report cannot give this folder's table: unreadable, not an eval report, or about other models."""


def _load(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ReportError(f"{path}: cannot read the eval report ({e.strerror or e})") from None
    except ValueError as e:
        raise ReportError(f"{path}: not valid JSON ({e})") from None
    models = report.get("models") if isinstance(report, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
        raise ReportError(f"{path}: not an eval report (`actune eval` writes report.json with a models list)")
    for key in ("paired_metrics", "confidence", "bootstrap_samples", "seed"):
        if key not in report:
            raise ReportError(f"{path}: not an eval report: no {key!r} key")
    for i, m in enumerate(models):
        for key in ("label", "metrics", "vs_first"):
            if key not in m:
                raise ReportError(f"{path}: models[{i}] has no {key!r} key")
    return report


def _folders(folder: Path) -> tuple[Path | None, Path | None]:
    """(the adapter folder, the merged model folder) of the weights ``folder`` holds, resolved."""
    f = folder.resolve()
    if (f / _ADAPTER_CONFIG).is_file():
        return f, f / MERGED_DIR
    return (f.parent if f.name == MERGED_DIR and (f.parent / _ADAPTER_CONFIG).is_file() else None), f


def _is(path: Any, folder: Path | None) -> bool:
    return folder is not None and isinstance(path, str) and bool(path) and Path(path).resolve() == folder


def matching_rows(report: dict[str, Any], folder: Path) -> list[tuple[int, str]]:
    """(index in ``models``, what was evaluated, told from ``folder``'s side) of each row of ``folder``'s
    weights: ``adapter`` (served as base + LoRA) or ``merged`` (the merged folder)."""
    adapter, merged = _folders(folder)
    out = []
    for i, m in enumerate(report["models"]):
        if _is(m.get("adapter"), adapter):
            out.append((i, "adapter"))
        elif not m.get("adapter") and _is(m.get("model"), merged):
            out.append((i, "merged"))
    return out


def _score(est: dict[str, Any]) -> str:
    if est.get("mean") is None:
        return "–"
    return f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"


def _signed(est: dict[str, Any]) -> str:
    if est.get("mean") is None:
        return "–"
    return f"{est['mean']:+.3f} [{est['low']:+.3f}, {est['high']:+.3f}]"


def _reference(m: dict[str, Any]) -> str:
    text = f"`{m.get('model') or '?'}`"
    if m.get("adapter"):
        return f"{text} with the adapter `{m['adapter']}`"
    return text + (", prompted" if not m.get("prompt_spec") else f", prompt spec `{m['prompt_spec']}`")


def eval_section(report_path: str | Path, folder: Path) -> list[str]:
    """The card's ``## Evaluation`` lines: where the numbers come from and the table (module docstring)."""
    path = Path(report_path)
    report = _load(path)
    models = report["models"]
    rows = matching_rows(report, folder)
    if not rows:
        seen = "; ".join(f"{m['label']}: " + (f"adapter {m['adapter']}" if m.get("adapter") else
                                              f"model {m.get('model') or '?'}") for m in models) or "none"
        raise ReportError(f"{path}: the eval report does not evaluate {folder} (nor its adapter or merged folder); "
                          f"it evaluates {seen} (paths are read from the current folder, as eval wrote them)")
    adapter_card = (folder / _ADAPTER_CONFIG).is_file()
    what = ({"adapter": "this adapter, on its base model", "merged": "this adapter merged into its base (`merged/`)"}
            if adapter_card else
            {"merged": "this merged model", "adapter": "the adapter it was merged from, on its base model"})
    ref = models[0]
    metrics = [m for m in report["paired_metrics"] if isinstance(m, str)]
    lines = ["## Evaluation", "",
             f"From `{path}` (`actune eval`, report `{report.get('title', '?')}`): scores are means over tasks with "
             f"{report['confidence']:.0%} percentile bootstrap intervals ({report['bootstrap_samples']} resamples, "
             f"seed {report['seed']}); Δ is the paired difference from `{ref['label']}` (the report's reference) "
             "over the tasks both ran, p the exact McNemar test on the episodes, n the tasks scored. "
             "`correct_grounded`: the answer is correct and every supporting page was read (the judge's verdict); "
             "`correct`: the task's own success flag (exact match for QA, the label for FEVER, a win for "
             "ALFWorld).", "",
             f"| model | evaluated | metric | score | Δ vs `{ref['label']}` | McNemar p | n |",
             "|---|---|---|---|---|---:|---:|"]
    mine = dict(rows)
    for i in [0, *(i for i in mine if i != 0)]:
        m = models[i]
        described = what[mine[i]] if i in mine else _reference(m)
        for metric in metrics:
            est = m["metrics"].get(metric) or {}
            vs = (m["vs_first"] or {}).get(metric) if i else None
            delta, p = (_signed(vs.get("diff") or {}), f"{vs['p_value']:.4g}") if vs else ("–", "–")
            lines.append(f"| {m['label']} | {described} | `{metric}` | {_score(est)} | {delta} | {p} | "
                         f"{est.get('n', '–')} |")
    return lines


def model_index(report_path: str | Path, folder: Path, name: str) -> list[dict[str, Any]]:
    """The card's ``model-index`` (the Hub's machine-readable results, shown beside the card and read by its
    leaderboards): this folder's first row in the report, one metric per paired metric, the report's title as the
    dataset's name (a user's own tasks: type ``custom``). Empty when the report has no row of this folder
    (:func:`eval_section` says why)."""
    report = _load(Path(report_path))
    rows = matching_rows(report, folder)
    if not rows:
        return []
    m = report["models"][rows[0][0]]
    metrics = [{"type": metric, "name": metric.replace("_", " "), "value": round(float(est["mean"]), 4)}
               for metric in report["paired_metrics"] if isinstance(metric, str)
               and (est := m["metrics"].get(metric) or {}).get("mean") is not None]
    return [{"name": name, "results": [{
        "task": {"type": "text-generation", "name": "agent episodes"},
        "dataset": {"type": "custom", "name": str(report.get("title") or Path(report_path).parent.name)},
        "metrics": metrics}]}]
