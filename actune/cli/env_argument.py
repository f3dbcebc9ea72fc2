"""``--env NAME`` of ``actune run`` and ``actune import``: any name ``env.name`` takes, checked as it is parsed.

A built-in, an ``actune.envs`` entry point or ``module:function`` (:mod:`actune.envs.registry`); anything else
is a command-line error (exit 2) that lists what would work.
"""

from __future__ import annotations

import argparse

__all__ = ["ENV_HELP", "IMPORT_BUILTINS", "env_name", "import_env_name"]

ENV_HELP = ("environment: wiki, fever, docqa, alfworld, an actune.envs entry point, or your own by import path, "
            "module:function (e.g. examples.inventory.inventory_env:make_env, from the repository root)")

#: The built-ins whose actions ``actune import`` knows without their data (spelled here, not imported from the
#: importer: building the parser imports no stage; a test holds them to ``IMPORT_ENVS``).
IMPORT_BUILTINS = ("wiki", "fever")


def env_name(text: str) -> str:
    """``text`` when it names an environment, else an argparse error saying what would."""
    from actune.envs.registry import env_factory
    from actune.runtime.plugins import PluginError

    try:
        env_factory(text)
    except PluginError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def import_env_name(text: str) -> str:
    """:func:`env_name` less the built-ins whose actions need their data (docqa, alfworld)."""
    from actune.envs.registry import is_builtin_env

    if is_builtin_env(text) and text not in IMPORT_BUILTINS:
        raise argparse.ArgumentTypeError(f"{text!r}: imported steps are checked against an environment whose actions "
                                         f"are known without its data: {', '.join(IMPORT_BUILTINS)}, or your own "
                                         "(module:function or an actune.envs entry point)")
    return env_name(text)
