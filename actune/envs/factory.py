"""``make_env(cfg)``: import the environment's module only when it is used (ALFWorld pulls TextWorld)."""

from __future__ import annotations

import importlib

from actune.envs.base import Environment
from actune.envs.config import EnvConfig

__all__ = ["make_env", "ENV_MODULES"]

#: env name -> module under actune.envs exposing ``from_config(cfg) -> Environment``
ENV_MODULES = {
    "wiki": "wiki_env",
    "fever": "fever_env",
    "docqa": "docqa_env",
    "alfworld": "alfworld_env",
}


def make_env(cfg: EnvConfig) -> Environment:
    """Build the environment ``cfg.name`` names."""
    try:
        module_name = ENV_MODULES[cfg.name]
    except KeyError:
        raise ValueError(f"unknown environment {cfg.name!r}; known: {', '.join(ENV_MODULES)}") from None
    module = importlib.import_module(f"actune.envs.{module_name}")
    return module.from_config(cfg)
