"""The eval table in the model cards of a run's tuned models: written once the run's eval has scored them, and
found again by ``actune card`` for an adapter of a quickstart run."""

from __future__ import annotations

from pathlib import Path

from actune.quickstart.context import RunContext
from actune.quickstart.layout import Layout
from actune.train.model_card import write_folder_card

__all__ = ["as_named_in_card", "run_eval_report", "write_eval_cards"]


def as_named_in_card(report: Path) -> Path:
    """``report`` as a card names it: relative to the current folder when below it, not this machine's absolute
    path (eval writes its paths from the current folder, so the card's reader finds it the same way)."""
    return report.relative_to(Path.cwd()) if report.is_relative_to(Path.cwd()) else report


def run_eval_report(path: str | Path) -> Path | None:
    """The eval ``report.json`` of the quickstart run ``path`` (an adapter folder or its ``merged/``) belongs to,
    when the run wrote one; None for a folder outside a quickstart run's layout."""
    folder = Path(path).resolve()
    adapter = folder.parent if folder.name == "merged" else folder
    round_dir = adapter.parent
    number = round_dir.name.removeprefix("round")
    layout, method = Layout(round_dir.parent.parent), round_dir.parent.name
    if not number.isdigit() or layout.adapter(method, int(number)) != adapter or not layout.state.is_file():
        return None
    report = layout.eval_dir(method) / "report.json"
    if not report.is_file():
        return None
    return as_named_in_card(report)


def write_eval_cards(run: RunContext, method: str) -> None:
    """Rewrite each tuned round's model cards (adapter and merged/) with the eval table: `actune train`
    wrote them before there was an eval, so a push right after the quickstart would ship no scores."""
    report = as_named_in_card(run.layout.eval_dir(method) / "report.json")
    for r in range(1, run.cfg.rounds + 1):
        adapter = run.layout.adapter(method, r)
        for folder in (adapter, adapter / "merged"):
            if (folder / "README.md").is_file():
                write_folder_card(folder, report=report)
    run.log(f"cards {method}: eval table of {report} in each tuned model's card")
