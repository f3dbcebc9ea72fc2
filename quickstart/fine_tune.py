"""A round's supervised fine-tuning, per method: its kept episodes (and those :mod:`round_inputs` adds) exported
as a training set, then an adapter trained on it in a child process."""

from __future__ import annotations

import json
from pathlib import Path

from actune.bootstrap.export import ExportSummary, export_dataset
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import StageEstimate
from actune.quickstart.layout import SAME_AS_FILE, Layout
from actune.quickstart.round_inputs import export_stores, round_epochs, round_train_config, trains_on_previous
from actune.quickstart.stage import Stage
from actune.quickstart.train_child import train_in_child_process
from actune.records.atomic_write import atomic_write_text

__all__ = ["fine_tune_stages", "export_round", "export_method_round", "train_method_round", "adds_no_data"]


def fine_tune_stages(run: RunContext, r: int, est: StageEstimate) -> list[Stage]:
    """Round ``r``'s export and training stages, method by method."""
    n_trainings = len(run.cfg.methods) * run.cfg.rounds
    stages = []
    for m in run.cfg.methods:
        stages.append(Stage(f"export {m} round {r}", 10, lambda m=m: export_method_round(run, m, r)))
        stages.append(Stage(f"train {m} round {r}", est.train / n_trainings, lambda m=m: train_method_round(run, m, r)))
    return stages


def export_round(cfg: QuickstartConfig, stores: list[Path], method: str, out_dir: Path) -> ExportSummary:
    """Export ``stores`` as ``method``'s training set in ``out_dir`` with the run's export settings and seed."""
    export_cfg = cfg.bootstrap.export.model_copy(update={"steps_method": method, "seed": cfg.seed})
    return export_dataset(stores, out_dir, cfg.train.wire_format, export_cfg)


def export_method_round(run: RunContext, method: str, r: int) -> None:
    stores = export_stores(run.cfg, run.layout, method, r)
    summary = export_round(run.cfg, stores, method, run.layout.dataset(method, r))
    run.log(f"export {method} round {r}: {summary.exported} examples from {len(stores)} store(s)")


def train_method_round(run: RunContext, method: str, r: int) -> None:
    """Round ``r``'s adapter, or none when the round added no training data: training again on round r-1's exact
    data with the same recipe would make round r-1's model again, and evaluate it twice as two models."""
    layout = run.layout
    if r > 1 and (layout.trained_round(method, r) != r or adds_no_data(run.cfg, layout, method, r)):
        same = layout.trained_round(method, r - 1)
        why = f"round {r}'s training set is round {r - 1}'s, the recipe the same"
        atomic_write_text(layout.round_dir(method, r) / SAME_AS_FILE, json.dumps({"round": same, "why": why}) + "\n")
        run.log(f"train {method} round {r}: skipped, the round added no training data ({why}); its model is "
                f"round {same}'s (tuned-r{same})")
        return
    train_in_child_process(round_train_config(run.cfg, layout, method, r))


def adds_no_data(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> bool:
    """Round ``r`` would train ``method`` from the base model on round r-1's exact training set, for as long."""
    from datasets import load_from_disk

    if trains_on_previous(cfg, r, method) or round_epochs(cfg, r, method) != round_epochs(cfg, r - 1, method):
        return False
    now, before = layout.dataset(method, r), layout.dataset(method, r - 1)
    return before.is_dir() and load_from_disk(str(now)).to_list() == load_from_disk(str(before)).to_list()
