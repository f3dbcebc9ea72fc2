"""``actune config show FILE [key=value ...]``: print a resolved, validated config.

Run configs (``configs/*.yaml``) are the common case; the section configs users keep beside them
(``configs/envs/``, ``configs/tasks/``, ``configs/world.yaml``) are recognised by their keys, or named
with ``--kind``.
"""

from __future__ import annotations

import argparse
import importlib

# kind -> "module:Class"; imported on use so `actune --help` stays fast.
CONFIG_KINDS = {
    "run": "actune.cli.run_config:RunConfig",
    "serve": "actune.serve.config:ServeConfig",
    "bootstrap": "actune.bootstrap.config:BootstrapConfig",
    "train": "actune.train.config:TrainConfig",
    "eval": "actune.eval.config:EvalConfig",
    "agent": "actune.agent.config:AgentConfig",
    "env": "actune.envs.config:EnvConfig",
    "tasks": "actune.tasks.config:TaskConfig",
    "world": "actune.world.config:WorldConfig",
    "quickstart": "actune.quickstart.config:QuickstartConfig",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="inspect configs")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    show = csub.add_parser("show", help="print the resolved config (file + overrides, validated)")
    show.add_argument("file", nargs="?", help="a config YAML (omit for the run config's defaults)")
    show.add_argument("overrides", nargs="*", help="key.path=value overrides")
    show.add_argument(
        "--kind",
        choices=["auto", *CONFIG_KINDS],
        default="auto",
        help="which config the file is (default: recognised from its keys; run when it has none); with "
             "quickstart, FILE may be a preset's name (actune presets)",
    )
    show.add_argument("--explain", metavar="KEY",
                      help="print what KEY (a.b.c, as in overrides) means: its type, default and documentation")
    show.set_defaults(func=_show)


def config_class(kind: str) -> type:
    module, name = CONFIG_KINDS[kind].split(":")
    return getattr(importlib.import_module(module), name)


def guess_kind(keys: set[str]) -> str:
    """The config kind whose fields cover the most of ``keys`` (ties and no keys: ``run``)."""
    best, best_hits = "run", len(keys & set(config_class("run").model_fields))
    if not keys or best_hits == len(keys):
        return best
    for kind in CONFIG_KINDS:
        hits = len(keys & set(config_class(kind).model_fields))
        if hits > best_hits:
            best, best_hits = kind, hits
    return best


def _show(args: argparse.Namespace) -> int:
    from pathlib import Path

    from actune.cli.config_items import optional_config
    from actune.config import dump_yaml, is_secret_name, load_config, read_yaml

    file, overrides = optional_config(args.file, args.overrides)
    kind = args.kind
    if kind == "quickstart" and file is not None and not Path(file).exists():
        from actune.quickstart.config import preset_path

        file = str(preset_path(file))  # a preset's name, as `actune quickstart --preset` takes it
    if kind == "auto":
        kind = guess_kind(set(read_yaml(Path(file)))) if file is not None else "run"
    if kind == "run":
        overrides = qualify_short_keys(overrides)
    if args.explain:
        print(explain(config_class(kind), args.explain))
        value = load_config(config_class(kind), file, overrides)
        for part in args.explain.split("."):
            value = getattr(value, part, None)
        shown = "***" if value is not None and is_secret_name(args.explain.split(".")[-1]) else repr(value)
        print(f"value in {file or 'the defaults'}{' with the overrides' if overrides else ''}: {shown}")
        return 0
    print(f"# {kind} config ({CONFIG_KINDS[kind].replace(':', '.')})")
    print(dump_yaml(load_config(config_class(kind), file, overrides)), end="")
    return 0


def explain(cls: type, key: str) -> str:
    """``key``'s type, default and field documentation in the config class ``cls`` (a ``ConfigError`` naming the
    first part that is no field)."""
    import typing

    from pydantic import BaseModel

    from actune.config import ConfigError

    model, parts = cls, key.split(".")
    for i, part in enumerate(parts):
        field = model.model_fields.get(part)
        if field is None:
            known = ", ".join(sorted(model.model_fields))
            raise ConfigError(f"--explain {key}: {'.'.join(parts[:i + 1])} is not a key (keys here: {known})")
        if i == len(parts) - 1:
            break
        inner = [a for a in (field.annotation, *typing.get_args(field.annotation))
                 if isinstance(a, type) and issubclass(a, BaseModel)]
        if not inner:
            raise ConfigError(f"--explain {key}: {'.'.join(parts[:i + 1])} is a value, not a section")
        model = inner[0]
    default = "required" if field.is_required() else repr(field.get_default(call_default_factory=True))
    kind = getattr(field.annotation, "__name__", None) or str(field.annotation).replace("typing.", "")
    doc = " ".join((field.description or "(no documentation)").split())
    return f"{key}: {kind}, default {default}\n{doc}"


def qualify_short_keys(overrides: list[str]) -> list[str]:
    """The stage commands' short keys (``concurrency=3`` for ``bootstrap.concurrency=3``) in a run config's
    overrides: a key of one section only gets its section; a key of several is a ``ConfigError`` naming them."""
    from actune.cli.run_config import RunConfig, qualify_section_overrides
    from actune.config import ConfigError, split_override

    sections = [name for name, f in RunConfig.model_fields.items() if hasattr(f.annotation, "model_fields")]
    out = []
    for item in overrides:
        head = split_override(item)[0].split(".", 1)[0]
        owners = [s for s in sections if head not in RunConfig.model_fields
                  and head in RunConfig.model_fields[s].annotation.model_fields]
        if len(owners) > 1:
            raise ConfigError(f"override {head}: a key of several sections ({', '.join(f'{s}.{head}' for s in owners)}"
                              f"); write it with its section (actune {' and actune '.join(owners)} take the short "
                              "form for their own)")
        out += qualify_section_overrides([item], owners[0]) if owners else [item]
    return out
