"""``actune world generate [CONFIG] [key=value ...] --out DIR``: write a synthetic encyclopedia and its questions."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("world", help="generate the synthetic world (invented encyclopedia + questions)")
    wsub = p.add_subparsers(dest="world_command", metavar="ACTION", required=True)
    gen = wsub.add_parser(
        "generate",
        help="write corpus.jsonl, train/dev/test.jsonl and world.json into a folder",
        description="Write a fictional encyclopedia (corpus.jsonl, served by the wiki env) and graded "
        "questions (train/dev/test.jsonl; held-out phrasings only in dev/test). Same config, same bytes. "
        "The config is a YAML file of WorldConfig fields (configs/world.yaml lists them all), key=value "
        "overrides on top: actune world generate configs/world.yaml n_test=300 phrasings=families --out runs/w",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gen.add_argument("items", nargs="*", metavar="[CONFIG] [key=value ...]",
                     help="a WorldConfig YAML file (optional), then overrides such as n_people=200 phrasings=families")
    gen.add_argument("--out", required=True, help="output folder (created)")
    gen.add_argument("--seed", type=int, help="random seed (the same as seed=N; default 0)")
    gen.set_defaults(func=_generate)


def _generate(args: argparse.Namespace) -> int:
    from actune.cli.config_items import config_and_overrides
    from actune.config import ConfigError, load_config
    from actune.world import WorldConfig, write_world

    config, overrides = config_and_overrides(list(args.items), "a WorldConfig YAML file")
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    cfg = load_config(WorldConfig, config, overrides)
    try:
        gen = write_world(cfg, args.out)
    except ValueError as e:  # a world too small for the questions asked; an out folder that is not a world
        raise ConfigError(str(e)) from None
    c = gen.manifest["counts"]
    print(f"wrote {args.out}: {c['pages']} pages ({c['people']} people, {c['companies']} companies, "
          f"{c['cities']} cities); questions train {c['train']}, dev {c['dev']}, test {c['test']}")
    return 0
