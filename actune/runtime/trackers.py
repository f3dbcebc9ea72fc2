"""Bootstrap's and eval's figures sent to the experiment trackers training reports to (``report_to``:
tensorboard, trackio, wandb, mlflow), so a run's data, training and scores sit side by side in one tool.

    log_to_trackers(["tensorboard"], run_name="quickstart-full-r1", stage="eval", metrics={...}, config={...},
                    log_dir=Path("runs/eval/runs"))

One record per stage run, logged once the stage ends (its summary or report), each tracker's own client used as
TRL's callbacks use it. ``config`` must be public (:func:`actune.config.public_dump`: secrets masked).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from actune.config import ConfigError

__all__ = ["Tracker", "TRACKERS", "bootstrap_metrics", "check_trackers", "eval_metrics", "log_to_trackers"]

Tracker = Literal["tensorboard", "trackio", "wandb", "mlflow"]
TRACKERS: tuple[str, ...] = get_args(Tracker)
PROJECT = "actune"
"""The project (wandb, trackio) or experiment (mlflow) the records go to; wandb's WANDB_PROJECT overrides it."""


def check_trackers(report_to: list[str], key: str) -> None:
    """A :class:`~actune.config.ConfigError` naming ``key`` and what to install, for a tracker that is not."""
    missing = [t for t in report_to if importlib.util.find_spec(t) is None]
    if missing:
        raise ConfigError(f"{key}: not installed: {', '.join(missing)} (pip install {' '.join(missing)})")


def bootstrap_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """A bootstrap summary (:func:`actune.bootstrap.summary.summarize`) as flat numbers, per task kind too."""
    out = {f"bootstrap/{k}": float(summary[k]) for k in ("episodes", "kept", "correct", "grounded", "keep_rate",
                                                         "tasks_with_kept")}
    for kind, row in summary.get("by_kind", {}).items():
        out[f"bootstrap/{kind}/kept"] = float(row["kept"])
        out[f"bootstrap/{kind}/episodes"] = float(row["attempts"])
    return out


def eval_metrics(report: Mapping[str, Any]) -> dict[str, float]:
    """An eval report's scores per model (mean and interval of every metric) and each paired test's p."""
    out: dict[str, float] = {}
    for m in report["models"]:
        for metric, est in m["metrics"].items():
            for k in ("mean", "low", "high"):
                if est.get(k) is not None:
                    out[f"eval/{m['label']}/{metric}" + ("" if k == "mean" else f"_{k}")] = float(est[k])
        for paired in (m.get("vs_first") or {}).values():
            if isinstance(paired, dict) and paired.get("p_value") is not None:
                out[f"eval/{m['label']}/vs_first/{paired['metric']}_p"] = float(paired["p_value"])
    return out


def log_to_trackers(report_to: list[str], *, run_name: str, stage: str, metrics: Mapping[str, float],
                    config: Mapping[str, Any], log_dir: Path) -> None:
    """One record of ``metrics`` (at step 0) and ``config`` in each tracker of ``report_to``; tensorboard writes its
    event file under ``log_dir/<run_name>``. A tracker that is not installed raises ImportError naming it."""
    for name in report_to:
        if name == "tensorboard":
            _tensorboard(log_dir / run_name, metrics, config)
        elif name == "wandb":
            import wandb

            run = wandb.init(project=PROJECT, name=run_name, job_type=stage, config=dict(config), reinit="create_new")
            run.log(dict(metrics))
            run.finish()
        elif name == "trackio":
            import trackio

            trackio.init(project=PROJECT, name=run_name, config=dict(config))
            trackio.log(dict(metrics))
            trackio.finish()
        elif name == "mlflow":
            import mlflow

            mlflow.set_experiment(PROJECT)
            with mlflow.start_run(run_name=run_name, tags={"stage": stage}):
                mlflow.log_dict(dict(config), "config.json")
                mlflow.log_metrics({k.replace("/", "."): v for k, v in metrics.items()})
        elif name != "none":
            raise ValueError(f"report_to: {name!r} is not one of {', '.join(TRACKERS)}")


def _tensorboard(folder: Path, metrics: Mapping[str, float], config: Mapping[str, Any]) -> None:
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(folder))
    try:
        writer.add_text("config", "```json\n" + json.dumps(config, indent=2, default=str) + "\n```", 0)
        for key, value in metrics.items():
            writer.add_scalar(key, value, 0)
    finally:
        writer.close()
