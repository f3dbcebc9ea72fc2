"""``actune presets [NAME]``: the quickstart presets by name, each with what it is; with a name, its YAML as it
ships (what ``actune quickstart --preset NAME`` runs, before overrides)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("presets", help="list the quickstart presets, or print one",
                       description="Without NAME: every preset a quickstart run can name, with the first line of "
                       "its description. With NAME: the preset's YAML file, comments included.")
    p.add_argument("name", nargs="?", help="a preset to print (smoke, full, hotpotqa, ...)")
    p.set_defaults(func=_presets)


def _summary(text: str) -> str:
    """The first sentence of a preset file's leading comment (its own description)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("# ").strip())
    words = " ".join(x for x in lines if x)
    return words.split(": ", 1)[-1].split(". ")[0].rstrip(".") if words else "(no description)"


def _presets(args: argparse.Namespace) -> int:
    from actune.config import ConfigError
    from actune.quickstart.config import PRESETS, preset_path

    if args.name:
        path = preset_path(args.name)
        try:
            print(path.read_text(encoding="utf-8"), end="")
        except UnicodeDecodeError:
            raise ConfigError(f"{path}: not UTF-8 text, not a preset") from None
        return 0
    width = max(map(len, PRESETS))
    for name in PRESETS:
        print(f"{name:<{width}}  {_summary(preset_path(name).read_text(encoding='utf-8'))}")
    print("\nactune presets NAME prints one; actune quickstart --preset NAME runs it (key=value overrides on top).")
    return 0
