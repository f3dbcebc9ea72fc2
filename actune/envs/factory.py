"""``make_env(cfg)``: build the environment ``cfg.name`` names (:mod:`actune.envs.registry`) and check it is one."""

from __future__ import annotations

from actune.config import ConfigError
from actune.envs.base import Environment
from actune.envs.config import EnvConfig
from actune.envs.registry import ENV_MODULES, env_factory, is_builtin_env
from actune.runtime.plugins import PluginError

__all__ = ["make_env", "ENV_MODULES", "INTERFACE"]

#: What the agent loop uses of an environment (:class:`actune.envs.base.Environment`).
INTERFACE = ("name", "action_names", "finish_action", "reset", "step", "astep", "describe_actions")


def make_env(cfg: EnvConfig) -> Environment:
    """Build the environment ``cfg.name`` names. An unknown name, a custom factory that returns no environment, or
    a built-in one whose files are missing or bad (the corpus, the documents folder) is a :class:`ConfigError`."""
    try:
        factory = env_factory(cfg.name)
    except PluginError as e:
        raise ConfigError(f"env.name: {e}") from None
    if is_builtin_env(cfg.name):
        try:
            return factory(cfg)
        except (ValueError, OSError) as e:  # a missing or bad corpus or documents folder: the config's to mend
            raise ConfigError(f"env ({cfg.name}): {e}") from None
    # a plug-in's own failure (an exception, even sys.exit) is a named error, never "nothing done" with exit 0
    try:
        env = factory(cfg)
    except (Exception, SystemExit) as e:
        raise ConfigError(f"env.name: the plug-in {cfg.name!r} failed building its environment: "
                          f"{type(e).__name__}: {e}") from None
    return checked_env(env, cfg.name)


def checked_env(env: object, name: str) -> Environment:
    """``env`` when it has what the loop uses, else a :class:`ConfigError` saying what it lacks."""
    missing = [a for a in INTERFACE if not hasattr(env, a)]
    if missing:
        raise ConfigError(f"env.name: {name!r} returned a {type(env).__name__} without {', '.join(missing)}: an "
                          "environment subclasses actune.envs.base.Environment (or actune.envs.actions."
                          "ToolEnvironment, whose actions are declared once)")
    names = env.action_names  # type: ignore[attr-defined]
    if not isinstance(env.name, str) or not all(isinstance(a, str) for a in names):  # type: ignore[attr-defined]
        raise ConfigError(f"env.name: {name!r} returned an environment whose name and action_names are not strings")
    try:  # every prompt shows it: a plug-in whose description fails would fail every episode alike
        described = env.describe_actions()  # type: ignore[attr-defined]
    except (Exception, SystemExit) as e:
        raise ConfigError(f"env.name: {name!r}: describe_actions() failed: {type(e).__name__}: {e}") from None
    if not isinstance(described, str):
        raise ConfigError(f"env.name: {name!r}: describe_actions() returned a {type(described).__name__}, not text")
    return env  # type: ignore[return-value]
