"""``actune quickstart [--preset NAME|FILE] [--seed N] [--out DIR] [--rounds N] [key=value ...]``.

The whole experiment in one command: generate a synthetic world, bootstrap trajectories with the
prompted embedded model, export and train a LoRA adapter, optionally iterate (round 2 bootstraps with the
tuned model on the tasks still unsolved), then evaluate prompted and tuned models in the same loop on
held-out questions and write ``report.md``. Rerunning the same command continues where it stopped.

``smoke`` runs every stage at a tiny scale (minutes); ``full`` is the measured experiment of the README;
``gpu`` is it at the papers' scale. ``hotpotqa`` and ``fever`` run on real questions over a local Wikipedia
(``hotpotqa.data_dir=``, ``fever.data_dir=``: the preset files say where the data come from), ``hotpotqa-gpu`` is
the ReAct paper's own experiment for one GPU. Overrides are preset keys (``train.num_train_epochs=2``,
``world.phrasings=families``, ``eval_split=dev``).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quickstart", help="world -> bootstrap -> train -> eval -> report in one command (resumable)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="smoke",
                   help="smoke, full, gpu, hotpotqa, hotpotqa-gpu, fever, or a preset YAML file (default smoke)")
    p.add_argument("--seed", type=int, help="world, sampling and LoRA seed (default: the preset's)")
    p.add_argument("--out", help="output folder (default runs/quickstart-<preset>-seed<N>)")
    p.add_argument("--rounds", type=int, help="expert-iteration rounds (default: the preset's)")
    p.add_argument("--no-progress", action="store_true", help="no live progress bars (plain log lines)")
    p.add_argument("--plan", action="store_true",
                   help="print the stages and the estimated time, run nothing and write nothing")
    p.add_argument("overrides", nargs="*", help="key=value overrides of the preset")
    p.set_defaults(func=_quickstart)


def reproduce_command(preset: str, out: object, overrides: list[str], seed: int | None, rounds: int | None) -> str:
    """The command line that reruns (or resumes) this run, for its report; a secret's value (a key named like
    ``api_key`` or ``token``) is written as ``***``."""
    import re
    import shlex

    from actune.config import MASK, is_secret_name, mask_url_credentials, secret_flag, split_override

    def masked(o: str) -> str:
        key, value = split_override(o)
        if value is None:
            return mask_url_credentials(o)
        # a secret as the key, inside a mapping given as the value (serve={api_key: ...}, {"api_key": ...}), or a
        # secret flag's value in a list of arguments (serve.extra_args=[--api-key, ...])
        names = re.findall(r"[\"']?(\w+)[\"']?\s*:", value)
        flags = re.findall(r"--[\w-]+=?", value)
        if (is_secret_name(key.rsplit(".", 1)[-1]) or any(is_secret_name(w) for w in names)
                or any(secret_flag(f) for f in flags)):
            return f"{key}={MASK}"
        return mask_url_credentials(o)  # a password written into an endpoint's URL

    parts = ["actune", "quickstart", "--preset", preset]
    parts += ["--seed", str(seed)] if seed is not None else []
    parts += ["--rounds", str(rounds)] if rounds is not None else []
    return shlex.join([*parts, "--out", str(out), *map(masked, overrides)])


def _quickstart(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from actune.cli.exit_codes import FAILED
    from actune.cli.stage_command import COLLECT_ERRORS, EXPORT_ERRORS, TRAIN_ERRORS, stage_errors
    from actune.quickstart import pipeline
    from actune.quickstart.config import hardware_kind, load_quickstart

    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    if args.rounds is not None:
        overrides.append(f"rounds={args.rounds}")
    kind = hardware_kind()
    cfg = load_quickstart(args.preset, overrides, hardware=kind)
    if cfg.hardware_overrides.get(kind):
        print(f"actune quickstart: on {kind} the preset sets {' '.join(cfg.hardware_overrides[kind])} "
              "(its hardware_overrides; the command line's overrides win)", file=sys.stderr)
    name = Path(args.preset).stem if args.preset.endswith((".yaml", ".yml")) else args.preset
    out = Path(args.out) if args.out else Path("runs") / f"quickstart-{name}-seed{cfg.seed}"
    if args.plan:
        print(pipeline.plan_text(cfg, out))
        return 0
    caught = stage_errors([*COLLECT_ERRORS, *EXPORT_ERRORS, *TRAIN_ERRORS])
    command = reproduce_command(args.preset, out, list(args.overrides), args.seed, args.rounds)
    try:
        report = pipeline.run_quickstart(cfg, out, show_progress=not args.no_progress, command=command)
    except caught as e:
        print(f"actune quickstart: {e}", file=sys.stderr)
        print(f"actune quickstart: rerun the same command to continue from {out}", file=sys.stderr)
        return FAILED
    print(report.read_text(encoding="utf-8"))
    print(f"report: {report}")
    return 0
