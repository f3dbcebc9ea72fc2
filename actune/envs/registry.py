"""Which environment ``env.name`` names: a built-in, an ``actune.envs`` entry point, or ``module:function``.

    factory = env_factory("examples.inventory.inventory_env:make_env")
    env = factory(cfg)          # what make_env does, then checks the result

A factory is called with the whole :class:`~actune.envs.config.EnvConfig` (a custom one reads its own settings
from ``cfg.options``) and returns an environment (:class:`~actune.envs.base.Environment`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from actune.envs.base import Environment
from actune.runtime.plugins import PluginKind, plugin_name, resolve_plugin

__all__ = ["ENV_GROUP", "ENV_MODULES", "EnvFactory", "EnvName", "env_factory", "is_builtin_env"]

ENV_GROUP = "actune.envs"
"""The entry point group an installed package registers its environments under."""

#: env name -> module under actune.envs exposing ``from_config(cfg) -> Environment``
ENV_MODULES = {
    "wiki": "wiki_env",
    "fever": "fever_env",
    "docqa": "docqa_env",
    "alfworld": "alfworld_env",
}

EnvFactory = Callable[[Any], Environment]


def _builtin(module_name: str) -> EnvFactory:
    def build(cfg: Any) -> Environment:
        # imported only when used: ALFWorld pulls TextWorld
        return importlib.import_module(f"actune.envs.{module_name}").from_config(cfg)

    return build


ENVIRONMENTS = PluginKind("environment", ENV_GROUP, {name: _builtin(m) for name, m in ENV_MODULES.items()},
                          example="examples.inventory.inventory_env:make_env")

EnvName = plugin_name(ENVIRONMENTS)
"""The type of ``env.name``: a name :func:`env_factory` resolves."""


def is_builtin_env(name: str) -> bool:
    return name in ENV_MODULES


def env_factory(name: str) -> EnvFactory:
    """The factory ``name`` names; :class:`actune.runtime.plugins.PluginError` (a ValueError) saying what would work."""
    return resolve_plugin(name, ENVIRONMENTS)
