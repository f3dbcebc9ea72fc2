"""``actune world generate --seed S --out DIR``: write a synthetic encyclopedia and its questions."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("world", help="generate the synthetic world (invented encyclopedia + questions)")
    wsub = p.add_subparsers(dest="world_command", metavar="ACTION", required=True)
    gen = wsub.add_parser(
        "generate",
        help="write corpus.jsonl, train/dev/test.jsonl and world.json into a folder",
        description="Write a fictional encyclopedia (corpus.jsonl, served by the wiki env) and graded "
        "questions (train/dev/test.jsonl; held-out templates only in dev/test). Same seed, same bytes.",
    )
    gen.add_argument("--out", required=True, help="output folder (created)")
    gen.add_argument("--config", help="a YAML file of WorldConfig fields (flags below override it)")
    gen.add_argument("--seed", type=int, help="random seed (default 0)")
    for flag, help_ in (
        ("n-people", "people pages (>= companies)"),
        ("n-companies", "company pages"),
        ("n-cities", "city pages"),
        ("n-provinces", "invented provinces"),
        ("n-train", "training questions"),
        ("n-dev", "development questions"),
        ("n-test", "test questions"),
    ):
        gen.add_argument(f"--{flag}", type=int, help=help_)
    gen.add_argument("--mix", help="fractions single,bridge,comparison, e.g. 0.4,0.4,0.2 (must add up to 1)")
    gen.add_argument("--late-fact-prob", type=float, help="chance a page's key fact sits after sentence 5")
    gen.add_argument("--phrasings", choices=("templates", "families"),
                     help="one wording per relation, or families of wordings with whole families held out")
    gen.set_defaults(func=_generate)


def _generate(args: argparse.Namespace) -> int:
    from actune.config import ConfigError, load_config
    from actune.world import WorldConfig, write_world

    overrides = []
    for name in ("seed", "n_people", "n_companies", "n_cities", "n_provinces", "n_train", "n_dev", "n_test",
                 "late_fact_prob", "phrasings"):
        value = getattr(args, name)
        if value is not None:
            overrides.append(f"{name}={value}")
    if args.mix:
        parts = args.mix.split(",")
        if len(parts) != 3:
            raise ConfigError(f"--mix {args.mix!r}: expected three fractions single,bridge,comparison")
        overrides += [f"mix.{k}={v.strip()}" for k, v in zip(("single", "bridge", "comparison"), parts)]
    cfg = load_config(WorldConfig, args.config, overrides)
    try:
        gen = write_world(cfg, args.out)
    except ValueError as e:  # a world too small for the questions asked
        raise ConfigError(str(e)) from None
    c = gen.manifest["counts"]
    print(f"wrote {args.out}: {c['pages']} pages ({c['people']} people, {c['companies']} companies, "
          f"{c['cities']} cities); questions train {c['train']}, dev {c['dev']}, test {c['test']}")
    return 0
