"""The CLI's one shape for what configures a command: ``[CONFIG] [key=value ...]``, a YAML file first (optional
where the command has defaults for everything) and overrides after it."""

from __future__ import annotations

from pathlib import Path

from actune.config import ConfigError

__all__ = ["config_and_overrides", "is_override", "optional_config"]


def is_override(item: str) -> bool:
    """Whether a command-line item is a ``key=value`` override rather than a config path: it holds ``=`` and is
    not a ``.yaml`` path (a file may be named ``a=b.yaml``). The one rule every command tells them apart by."""
    return "=" in item and not item.endswith((".yaml", ".yml"))


def config_and_overrides(items: list[str], what: str) -> tuple[str | None, list[str]]:
    """The config file (the first item, when it is not a ``key=value``: :func:`is_override`) and the overrides;
    ``what`` names the file's kind in the error for a file that is not there."""
    if not items or is_override(items[0]):
        return None, list(items)
    if not Path(items[0]).is_file():
        raise ConfigError(f"{items[0]}: no such config file (give {what}, or key=value overrides)")
    return items[0], list(items[1:])


def optional_config(file: str | None, overrides: list[str]) -> tuple[str | None, list[str]]:
    """``[CONFIG] [key=value ...]`` as argparse hands it over (an optional positional, then the rest): a first
    positional that is a ``key=value`` (:func:`is_override`; ``actune serve port=8001``) is the first override."""
    if file is not None and is_override(file):
        return None, [file, *overrides]
    return file, list(overrides)
