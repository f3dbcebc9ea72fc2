"""Which task loader ``tasks.format`` names: a built-in, an ``actune.tasks`` entry point, or ``module:function``.

A custom loader is called with the whole :class:`~actune.tasks.config.TaskConfig` (its own settings in
``cfg.options``; ``path``, ``split`` and ``env`` are there too) and returns the tasks
(:class:`actune.records.task_record.Task`), which ``load_tasks`` then subsets, filters, offsets and limits like any
other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actune.runtime.plugins import PluginKind, plugin_name, resolve_plugin

__all__ = ["BUILTIN_FORMATS", "TASK_GROUP", "TaskFormat", "task_loader"]

BUILTIN_FORMATS = ("hotpotqa", "fever", "custom", "alfworld")
"""The formats :func:`actune.tasks.loading.load_tasks` reads itself."""

TASK_GROUP = "actune.tasks"
"""The entry point group an installed package registers its task loaders under."""

TASK_LOADERS = PluginKind("task format", TASK_GROUP, dict.fromkeys(BUILTIN_FORMATS), example="mypkg.tasks:load")

TaskFormat = plugin_name(TASK_LOADERS)
"""The type of ``tasks.format``: a name :func:`task_loader` resolves."""


def task_loader(fmt: str) -> Callable[[Any], Any] | None:
    """The custom loader ``fmt`` names; None for a built-in format; :class:`actune.runtime.plugins.PluginError` (a
    ValueError) saying what would work for anything else."""
    return resolve_plugin(fmt, TASK_LOADERS)
