"""``actune distill-errors STORE... --out catalog.json [--diagnoser llm|rules] [--endpoint URL --model NAME]``.

PreFlect's planning-error distillation from our own trajectory stores: the tasks with both kept and failed
episodes, each failed episode contrasted with a correct one of the same task, the planning error that separated
them named (by a model, or by rules over the trajectories' features: ``--diagnoser rules``, offline), similar
diagnoses merged into a catalog. The catalog is what ``agent.preflect_catalog=<out>`` reads; its ``evidence``
cites, for every entry, failed and correct episodes of one task (store, line, episode id). See
``actune.bootstrap.distill_errors``.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("distill-errors", allow_abbrev=False,
                       help="distill a PreFlect planning-error catalog from mixed-outcome tasks of trajectory stores",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stores", nargs="+", metavar="STORE", help="trajectory stores (JSONL) written by bootstrap or eval")
    p.add_argument("--out", required=True,
                   help="the catalog JSON to write (replaced atomically; never a store, nor a file this command did "
                        "not write unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace a file at --out this command did not write")
    p.add_argument("--diagnoser", choices=("llm", "rules"), default="llm",
                   help="llm: a model diagnoses and merges (the paper; needs --endpoint and --model); rules: "
                        "trajectory features name the paper's three types (default: %(default)s)")
    p.add_argument("--endpoint", help="base URL of a running OpenAI-compatible server (…/v1)")
    p.add_argument("--model", help="the model name the server answers to")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="environment variable holding the bearer token, when the server requires one")
    p.add_argument("--concurrency", type=int, default=16, help="diagnoses in flight at once (default: %(default)s)")
    p.add_argument("--max-pairs-per-task", type=int, default=2,
                   help="failed episodes contrasted per task (default: %(default)s)")
    p.add_argument("--min-support", type=int, default=2,
                   help="diagnoses a category needs to be kept (default: %(default)s)")
    p.add_argument("--max-errors", type=int, default=5, help="most catalog entries (default: %(default)s)")
    p.add_argument("--max-examples", type=int, default=3,
                   help="evidence examples kept per entry (default: %(default)s)")
    p.set_defaults(func=_distill_errors)


def _distill_errors(args: argparse.Namespace) -> int:
    import asyncio
    import sys

    from actune.bootstrap.distill_errors import (
        DistillConfig,
        DistillError,
        DistillSummary,
        NothingToDistill,
        distill_errors,
    )
    from actune.cli.exit_codes import FAILED, NOTHING_DONE, USAGE
    from actune.llm import ClientConfig, LLMClient, LLMError

    def fail(message: str, code: int = USAGE) -> int:
        print(f"actune distill-errors: {message}", file=sys.stderr)
        return code

    try:
        cfg = DistillConfig(diagnoser=args.diagnoser, max_pairs_per_task=args.max_pairs_per_task,
                            min_support=args.min_support, max_errors=args.max_errors, max_examples=args.max_examples)
    except ValueError as e:
        return fail(str(e))
    if args.diagnoser == "llm" and not (args.endpoint and args.model):
        return fail("--diagnoser llm needs --endpoint URL and --model NAME (a running server), or use "
                    "--diagnoser rules (offline)")

    def log(line: str) -> None:
        print(line, flush=True)

    async def run() -> DistillSummary:
        if args.diagnoser == "rules":
            return await distill_errors(args.stores, args.out, cfg, log=log, overwrite=args.overwrite)
        client_cfg = ClientConfig(endpoints=[args.endpoint], model=args.model, api_key_env=args.api_key_env,
                                  max_concurrency=max(1, args.concurrency))
        async with LLMClient(client_cfg) as llm:
            return await distill_errors(args.stores, args.out, cfg, llm=llm, model=args.model, log=log,
                                        overwrite=args.overwrite)

    try:
        summary = asyncio.run(run())
    except NothingToDistill as e:
        return fail(str(e), NOTHING_DONE)
    except (DistillError, LLMError) as e:
        return fail(str(e), FAILED)
    print(summary.table())
    return 0
