"""A round's supervised fine-tuning, per method: its kept episodes (and those :mod:`round_inputs` adds) exported
as a training set, then an adapter trained on it in a child process."""

from __future__ import annotations

from pathlib import Path

from actune.bootstrap.export import ExportSummary
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import StageEstimate
from actune.quickstart.round_inputs import export_stores, round_train_config
from actune.quickstart.stage import Stage
from actune.quickstart.train_child import train_in_child_process

__all__ = ["fine_tune_stages", "export_round", "export_method_round", "train_method_round"]


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
    from actune.bootstrap.export import export_dataset

    export_cfg = cfg.bootstrap.export.model_copy(update={"steps_method": method, "seed": cfg.seed})
    return export_dataset(stores, out_dir, cfg.train.wire_format, export_cfg)


def export_method_round(run: RunContext, method: str, r: int) -> None:
    stores = export_stores(run.cfg, run.layout, method, r)
    summary = export_round(run.cfg, stores, method, run.layout.dataset(method, r))
    run.log(f"export {method} round {r}: {summary.exported} examples from {len(stores)} store(s)")


def train_method_round(run: RunContext, method: str, r: int) -> None:
    train_in_child_process(round_train_config(run.cfg, run.layout, method, r))
