"""The training stage's one entry point: the objective ``train.objective`` names, trained.

    train_objective(cfg)                                    # sft or dpo: a dataset folder in, an adapter out
    train_objective(cfg, rollouts=RolloutSpec(...), serve=serve_cfg)   # grpo: tasks played on a server

``actune train`` and the quickstart's training child both call it, so an objective added here reaches both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from actune.train.common import TrainError
from actune.train.config import TrainConfig
from actune.train.dpo import train_dpo
from actune.train.grpo import train_grpo
from actune.train.sft import train

if TYPE_CHECKING:
    from actune.serve.config import ServeConfig
    from actune.train.grpo import RolloutSpec

__all__ = ["train_objective"]


def train_objective(cfg: TrainConfig, *, rollouts: RolloutSpec | None = None, serve: ServeConfig | None = None,
                    log: Callable[[str], None] | None = None) -> Any:
    """Train ``cfg`` with its objective; returns what the trainer did. GRPO needs ``rollouts`` (the tasks,
    environment and agent its episodes play) and ``serve`` (how to start its LoRA-enabled server)."""
    if cfg.objective == "grpo":
        if rollouts is None or serve is None:
            raise TrainError("train.objective grpo needs the tasks its rollouts play and a serve section")
        return train_grpo(cfg, rollouts, serve, log=log)
    if cfg.objective == "dpo":
        return train_dpo(cfg, log=log)

    return train(cfg, log=log)
