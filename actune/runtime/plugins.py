"""A user's own environment or task loader, named in a config: a built-in name, an entry point, or an import path.

    factory = resolve_plugin("mypkg.envs:make_env", PluginKind("environment", "actune.envs", builtins))

A name resolves, in this order, to

1. a built-in (``wiki``, ``hotpotqa``...);
2. an entry point of the kind's group (``[project.entry-points."actune.envs"] inventory = "mypkg.envs:make_env"``
   in the plugin's ``pyproject.toml``): the name is the entry point's;
3. ``module:function``, a callable by import path. The module is imported as Python would, and when it is not
   installed, from the current directory (as ``python -m`` would, and as uvicorn loads ``module:app``): a plain
   checkout's ``examples.inventory.inventory_env:make_env`` works from the repository root.

Anything else is a :class:`PluginError` that lists the built-ins, the entry points installed and the import form.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator

__all__ = ["PluginError", "PluginKind", "entry_point_names", "load_callable", "plugin_name", "resolve_plugin"]


class PluginError(ValueError):
    """A plugin name that resolves to nothing callable; the message says why and what would."""


@dataclass(frozen=True)
class PluginKind:
    """What is being resolved: its words for messages, its entry point group and its built-ins."""

    kind: str
    """``environment``, ``task loader``."""
    group: str
    """The entry point group: ``actune.envs``, ``actune.tasks``."""
    builtins: Mapping[str, Callable[..., Any] | None]
    """Built-in name -> its callable (None: the caller builds the built-ins its own way)."""
    example: str
    """A ``module:function`` example for the error message."""


def entry_point_names(group: str) -> list[str]:
    """The names installed packages register under ``group``, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=group)})


def _on_path(folder: str) -> bool:
    return any(os.path.abspath(p or os.curdir) == folder for p in sys.path)


def _import(module: str) -> Any:
    """``module``, imported from the installed packages or, failing that, from the current directory."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        cwd = os.path.abspath(os.curdir)
        # only when the module itself is missing: a module found that fails on its own import is its error
        if not (module == missing or module.startswith(missing + ".")) or _on_path(cwd):
            raise
        sys.path.append(cwd)
        importlib.invalidate_caches()
    return importlib.import_module(module)


def load_callable(spec: str) -> Callable[..., Any]:
    """The callable ``spec`` (``module:function``, the function may be dotted: ``module:Class.build``) names."""
    module_name, _, attr = spec.partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not module_name or not attr:
        raise PluginError(f"{spec!r} is not of the form module:function")
    try:
        obj: Any = _import(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise PluginError(f"cannot import {module_name!r} (of {spec!r}): no module {e.name!r} is installed or in "
                              f"the current directory ({os.path.abspath(os.curdir)})") from e
        raise PluginError(f"cannot import {module_name!r} (of {spec!r}): {type(e).__name__}: {e}") from e
    except (Exception, SystemExit) as e:  # a module that fails (or exits) on its own import cannot be used either
        raise PluginError(f"cannot import {module_name!r} (of {spec!r}): {type(e).__name__}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PluginError(f"module {module_name!r} has no {attr!r} (of {spec!r})")
        obj = getattr(obj, part)
    return obj


def _unknown(name: str, what: PluginKind) -> PluginError:
    found = entry_point_names(what.group)
    return PluginError(
        f"unknown {what.kind} {name!r}: not a built-in ({', '.join(what.builtins)}), nor an entry point of group "
        f"{what.group} ({', '.join(found) if found else 'none installed'}), nor a callable by import path, "
        f"module:function (e.g. {what.example})")


def resolve_plugin(name: str, what: PluginKind) -> Callable[..., Any] | None:
    """The callable ``name`` stands for (module docstring; a built-in's may be None); :class:`PluginError` when
    there is none."""
    if name in what.builtins:
        return what.builtins[name]
    points = {ep.name: ep for ep in importlib.metadata.entry_points(group=what.group)}
    if name in points:
        try:
            obj = points[name].load()
        except (Exception, SystemExit) as e:
            raise PluginError(f"{what.kind} {name!r}: entry point {points[name].value!r} of group {what.group} "
                              f"does not load: {type(e).__name__}: {e}") from e
    elif ":" in name:
        obj = load_callable(name)
    else:
        raise _unknown(name, what)
    if not callable(obj):
        raise PluginError(f"{what.kind} {name!r} names a {type(obj).__name__}, not a function to call")
    return obj


def plugin_name(what: PluginKind) -> Any:
    """The type of a config field that names a ``what``: a str that must resolve, or the field's key is an error
    saying what would (``name: EnvName = "wiki"``)."""
    def resolves(name: str) -> str:
        resolve_plugin(name, what)  # a PluginError is a ValueError: pydantic names the key
        return name

    return Annotated[str, AfterValidator(resolves)]
