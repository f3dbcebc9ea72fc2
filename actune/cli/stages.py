"""The stage commands: ``actune bootstrap|export|train|eval CONFIG [key=value ...]``, and ``actune import``.

One table, one shape (:func:`actune.cli.stage_command.register_stage`): each reads a run config with
overrides and hands its stage only the sections it needs. ``import`` takes no run config: it fills a store
from a file or dataset, as bootstrap would. What follows each command's name below is its ``--help`` text.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from actune.agent.method_registry import method_names
from actune.cli.env_argument import import_env_name
from actune.cli.stage_command import (
    COLLECT_ERRORS,
    EXPORT_ERRORS,
    TRAIN_ERRORS,
    exit_status,
    register_stage,
    section_qualifier,
    stage_errors,
)
from actune.config import split_override

if TYPE_CHECKING:
    from actune.cli.run_config import RunConfig

BOOTSTRAP_DOC = """``actune bootstrap CONFIG [key=value ...]``: collect judged trajectories into the run's store.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``bootstrap`` section and, when
``bootstrap.endpoints`` is empty, starts a server from its ``serve`` section. Overrides are
``bootstrap.concurrency=8`` (or any run-config key, e.g. ``serve.port=8001``); a key that is a
bootstrap field may omit the ``bootstrap.`` prefix. Rerunning resumes from the store.
"""

EXPORT_DOC = """``actune export CONFIG [key=value ...]``: kept records of the bootstrap stores -> a training dataset.

Reads the run config's ``bootstrap.store`` and ``bootstrap.export`` (more stores, the adapter's step
format every record is converted into, dedupe, per-task cap, method or store shares) and writes ``train.dataset``
(a ``datasets`` folder with ``export_summary.json``, replaced atomically) in ``train.wire_format`` (text:
segments with per-segment loss flags; chat: messages with per-turn flags), then prints what each filter
left out, per source method. Overrides are run-config keys; ``dataset=...`` and ``wire_format=...`` may
omit ``train.``, ``store=...`` may omit ``bootstrap.``, and ``stores``, ``steps_method``,
``method_shares``, ``store_shares``, ``max_per_task`` and ``dedupe_similarity`` may omit ``bootstrap.export.``
(``store_shares={runs/imported.jsonl: 0.3, runs/store/trajectories.jsonl: 0.7}``).

``--format trl|openai|sharegpt|alpaca`` writes the same examples as one JSONL file for another trainer instead
(``--out``, default ``<train.dataset>.<format>.jsonl``): ``trl`` is TRL's prompt-completion form in
``train.wire_format``'s wire (text, chat or tools), a line per trained turn, so TRL's SFTTrainer computes the loss
on the turns only, never on an observation (for TRL, use this one); OpenAI messages with a ``weight`` 0/1 on each
assistant turn and observations as user turns (a plain TRL run on it trains every token, observations included),
LLaMA-Factory's ShareGPT (every assistant turn trained), or Alpaca (instruction, output: observations included, so
trained on). ``--format actune`` (the default) is the ``datasets`` folder above.

An export replaces only its own earlier output: an existing folder without ``export_summary.json`` (or
``pairs_summary.json``) inside, or a file without actune's card beside it, is refused (exit status 2) unless
``--overwrite``; an output that is or holds one of the stores is always refused, and a second export into the
same place while the first runs is refused naming it.
"""

IMPORT_DOC = """``actune import SOURCE --format openai|alpaca|sharegpt [--store PATH] [--env wiki] [--method react]``:
outside agent trajectories -> a trajectory store.

SOURCE is a JSONL file or a JSON array (FireAct's ``gpt_format/*.jsonl`` and ``alpaca_format/*.json``), a
local dataset folder, or a Hugging Face dataset id (``datasets.load_dataset(SOURCE, split=--split)``).
Each record's turns are parsed by the agent loop's own step parser into thoughts, actions (checked against
``--env``'s actions), observations and the final answer, and stored as the loop would have written it,
judged kept: outside sets come already filtered by their authors (``info.import`` says so and where the
record came from). Every record is imported or rejected with a reason; the command prints both, with
examples. Rerunning imports nothing twice. ``--store`` must be a trajectory store or a new file: any other file,
the source itself included, is refused (exit status 2) and left as it was; a new store that gets no record is
not left behind. Train on the records by listing the store in
``bootstrap.export.stores``; to mix them with bootstrapped ones at a chosen share, set
``bootstrap.export.store_shares`` (a share per store), or file one-step sets under ``--method cot`` and set
``bootstrap.export.method_shares``.
"""

TRAIN_DOC = """``actune train CONFIG [key=value ...]``: LoRA-fine-tune the base model on the exported dataset.

Reads the run config's ``train`` section (TrainConfig); overrides are ``train.max_steps=10`` or any
run-config key, and a key that is a train field may omit the ``train.`` prefix. Holds out
``train.eval_fraction`` of the tasks as a dev slice and keeps the checkpoint with the lowest dev loss.
Writes to ``train.output_dir`` (replaced atomically; refused when it holds anything but an adapter folder
actune trained): the adapter, ``actune_prompt.json``, ``training_meta.json`` (losses included),
``training_tasks.json``, the model card ``README.md``, ``loss.png`` (SFT) and, with ``train.merge=true``,
``merged/`` (base model with the adapter merged in). A rerun resumes from the last complete checkpoint
in ``<output_dir>.checkpoints``.
"""

EVAL_DOC = """``actune eval CONFIG [key=value ...]``: run every eval model through the same agent loop and report.

CONFIG is a run config (``configs/*.yaml``); the stage reads its ``eval`` section and, when
``eval.endpoints`` is empty, starts one server per base model from its ``serve`` section (one after the
other, each with its base's adapters loaded). The report leads with ``correct_grounded`` (correct and every
supporting page read). An eval whose tasks overlap a model's training tasks is refused. Overrides are
``eval.tasks.limit=100`` (or any run-config key, e.g. ``serve.port=8001``); a key that is an eval field may
omit the ``eval.`` prefix. Without a config, ``--model M [--adapter DIR] --tasks FILE`` scores the model
prompted (and tuned) on a task file: ``actune eval --model smollm2-135m --adapter runs/adapter --tasks t.jsonl
eval.env.corpus=pages.jsonl``. Rerunning resumes from the per-model stores in ``eval.out_dir``
and rewrites the report (``report.md``, ``report.json``, ``scores.png``).
"""

_SHORT = {"dataset": "train", "wire_format": "train", "store": "bootstrap", "stores": "bootstrap.export",
          "steps_method": "bootstrap.export", "method_shares": "bootstrap.export", "store_shares": "bootstrap.export",
          "max_per_task": "bootstrap.export", "dedupe_similarity": "bootstrap.export"}


def _qualify_export(overrides: list[str]) -> list[str]:
    out = []
    for item in overrides:
        head = split_override(item)[0]
        if head in _SHORT:
            item = f"{_SHORT[head]}.{item.strip()}"
        out.append(item)
    return out


def _run_bootstrap(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.bootstrap.run import run_bootstrap

    run_bootstrap(run.bootstrap, run.serve, name=run.name, show_progress=not args.no_progress)


def _run_export(run: "RunConfig", args: argparse.Namespace) -> None:
    from functools import cache

    from actune.bootstrap.export import ExportError, export_dataset

    boot = run.bootstrap

    @cache
    def actions(env: str) -> str:
        # Only asked when records must be converted and no record of the target format names the
        # environment's actions; the adapter will act in bootstrap.env, so its actions are the ones.
        # A custom env.name (module:function) is not the name its records carry: built, it says its own.
        from actune.envs.factory import make_env
        from actune.envs.registry import is_builtin_env

        built = make_env(boot.env) if env == boot.env.name or not is_builtin_env(boot.env.name) else None
        if built is None or env not in (boot.env.name, built.name):
            raise ExportError(f"records of env {env!r} need converting into {boot.export.steps_method} steps, "
                              f"but bootstrap.env is {boot.env.name!r} (export them with a config for {env})")
        return built.describe_actions()

    stores = [*boot.export.stores]
    # An imported set exported on its own names only export.stores: bootstrap.store left at its default then
    # joins only when that file exists (named explicitly, it must exist, and a missing one is an error).
    if "store" in boot.model_fields_set or not stores or Path(boot.store).is_file():
        stores.insert(0, boot.store)
    if run.train.objective == "dpo":  # DPO trains on pairs: a kept episode of a task against a failed one
        if args.format != "actune":
            raise ExportError(f"--format {args.format}: preference pairs are written as a datasets folder only (its "
                              "prompt / chosen / rejected columns are TRL's preference format)")
        from actune.bootstrap.preference_pairs import export_pairs

        pairs = export_pairs(stores, run.train.dataset, boot.export.max_per_task or 2, overwrite=args.overwrite)
        print(f"exported {pairs.pairs} preference pairs of {pairs.tasks} tasks ({pairs.cut_at_shared_prefix} cut where "
              f"the two episodes part) from {', '.join(map(str, stores))} to {run.train.dataset}; unpaired: "
              f"{pairs.unpaired or 'none'}")
        return
    if args.format == "actune":
        summary = export_dataset(stores, run.train.dataset, run.train.wire_format, boot.export, actions=actions,
                                 overwrite=args.overwrite)
        print(f"exported {summary.exported} kept trajectories ({run.train.wire_format}) in {summary.steps_method} "
              f"steps from {', '.join(map(str, stores))} to {run.train.dataset}")
        print(summary.table())
        return
    from actune.bootstrap.export_formats import export_file

    out = args.out or f"{run.train.dataset}.{args.format}.jsonl"
    summary, unmasked = export_file(stores, out, args.format, boot.export, actions=actions, overwrite=args.overwrite,
                                    wire=run.train.wire_format)
    form = f"{args.format}, {run.train.wire_format} wire" if args.format == "trl" else args.format
    print(f"exported {summary.exported} kept trajectories ({form}) in {summary.steps_method} "
          f"steps from {', '.join(map(str, stores))} to {out}")
    print(summary.table())
    if args.format == "trl" and run.train.wire_format == "tools":
        from actune.runtime.chat_templates import CHATML_TOOLS_TEMPLATE

        print(f"note: for a model whose chat template has no tools (SmolLM2), train with "
              f"SFTConfig(chat_template_path='{CHATML_TOOLS_TEMPLATE}'), the template actune trains and serves with")
    if unmasked:
        print(f"note: {args.format} has no loss flag for {unmasked} observation or unreadable-action turns that "
              "actune does not train on; a trainer of this format will (--format openai keeps the flags)")


def _run_train(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.train.grpo import RolloutSpec
    from actune.train.objectives import train_objective

    # GRPO's rollouts play the bootstrap section's tasks, served from the serve section
    boot = run.bootstrap
    train_objective(run.train, rollouts=RolloutSpec(tasks=boot.tasks, env=boot.env, agent=boot.agent), serve=run.serve)


def quick_eval_overrides(args: argparse.Namespace) -> list[str]:
    """The overrides ``actune eval --model M [--adapter DIR] [--tasks FILE]`` stands for: ``model=M``, the
    models ``prompted`` (and ``tuned``, the adapter on the same base), the task file as ``custom`` records."""
    import json

    out = []
    if args.adapter and not args.model:
        from actune.config import ConfigError

        raise ConfigError("--adapter: give --model too (the base model the adapter was trained on)")
    if args.model:
        models = [{"label": "prompted", "model": args.model}]
        if args.adapter:
            models.append({"label": "tuned", "model": args.model, "adapter": args.adapter})
        out += [f"model={args.model}", f"eval.models={json.dumps(models)}"]
    if args.tasks:
        out += [f"eval.tasks.path={args.tasks}", "eval.tasks.format=custom"]
    return out


def _run_eval(run: "RunConfig", args: argparse.Namespace) -> None:
    from actune.eval.run import run_eval

    run_eval(run.eval, run.serve, name=run.name, show_progress=not args.no_progress)


def _run_import(args: argparse.Namespace) -> int:
    from actune.bootstrap.importers import import_set
    from actune.cli.exit_codes import NOTHING_DONE, OK
    from actune.records.atomic_write import check_not_an_input
    from actune.records.store import NotAStoreError, remove_if_empty

    caught = stage_errors(["actune.bootstrap.importers:ImportSetError", "actune.records.store:StoreError"])
    new_store = not os.path.lexists(args.store)
    try:
        if Path(args.source).exists():  # a local file or folder, not a Hub id: the store must not be (in) it
            check_not_an_input(args.store, [args.source], NotAStoreError, what="store")
        summary = import_set(args.source, args.store, args.format, env=args.env, method=args.method, split=args.split)
    except caught as e:
        print(f"actune import: {e}", file=sys.stderr)
        return exit_status(e)
    finally:
        if new_store:  # every record rejected, or none read: no empty store is left for the user to wonder at
            remove_if_empty(args.store)
    print(summary.table())
    if summary.total == 0:
        print(f"actune import: {args.source} holds no records", file=sys.stderr)
        return NOTHING_DONE
    if summary.imported == 0 and not summary.rejected.get("already_imported"):
        # nothing usable: most often the wrong --format for the file
        print(f"actune import: none of the {summary.total} records was imported (the reasons are above; is "
              f"--format {args.format} the file's layout?)", file=sys.stderr)
        return NOTHING_DONE
    return OK


def _register_import(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import outside trajectories (OpenAI messages, Alpaca, ShareGPT, a HF dataset) "
                                      "into a store", description=IMPORT_DOC,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="JSONL or JSON file, local dataset folder, or Hugging Face dataset id")
    p.add_argument("--format", required=True, choices=("openai", "alpaca", "sharegpt"), help="the records' layout")
    p.add_argument("--store", default="runs/imported/trajectories.jsonl",
                   help="trajectory store to add to (default: %(default)s)")
    p.add_argument("--env", default="wiki", type=import_env_name,
                   help="environment whose actions the steps use, and a tuned model will act in: wiki, fever, or "
                        "your own that builds without settings (module:function or an actune.envs entry point) "
                        "(default: %(default)s)")
    p.add_argument("--method", default="react", choices=method_names(lambda s: s.imports_as is not None),
                   help="method the records are filed under; cot: one-step sets (default: %(default)s)")
    p.add_argument("--split", default="train",
                   help="dataset split to load, and the tasks' split (default: %(default)s)")
    p.set_defaults(func=_run_import)


QUALIFY = {"bootstrap": section_qualifier("bootstrap"), "export": _qualify_export,
           "train": section_qualifier("train"), "eval": section_qualifier("eval")}
"""Each command's short override keys -> full keys (``concurrency=4`` -> ``bootstrap.concurrency=4``)."""


def register(sub: argparse._SubParsersAction) -> None:
    register_stage(sub, "bootstrap", doc=BOOTSTRAP_DOC,
                   help="generate, judge and keep correct trajectories (resumable)",
                   config_help="run config YAML (its bootstrap and serve sections are used)",
                   example="bootstrap.target_correct=100", run=_run_bootstrap, qualify=QUALIFY["bootstrap"],
                   progress=True, errors=COLLECT_ERRORS)
    _register_import(sub)
    export = register_stage(sub, "export", doc=EXPORT_DOC,
                            help="export kept trajectories as a training dataset (actune, OpenAI, ShareGPT, Alpaca)",
                            config_help="run config YAML (its bootstrap.store, bootstrap.export and train section "
                                        "are used)",
                            example="train.wire_format=chat", run=_run_export, qualify=QUALIFY["export"],
                            errors=EXPORT_ERRORS)
    # Spelled here, not imported: building the parser imports no stage (a test holds them to the stage's lists).
    export.add_argument("--format", choices=("actune", "trl", "openai", "sharegpt", "alpaca"), default="actune",
                        help="actune: the datasets folder train.dataset (default); trl (TRL's prompt-completion "
                             "form: loss on the model's turns only), openai, sharegpt, alpaca: one JSONL file for "
                             "another trainer")
    export.add_argument("--overwrite", action="store_true",
                        help="replace an existing output that no export wrote (never one of the stores)")
    export.add_argument("--out", default=None,
                        help="the JSONL file of --format trl|openai|sharegpt|alpaca "
                             "(default: <train.dataset>.<format>.jsonl)")
    register_stage(sub, "train", doc=TRAIN_DOC,
                   help="LoRA-fine-tune on the exported dataset (TRL SFT, masked observations)",
                   config_help="run config YAML (its train section is used)", example="train.max_steps=10",
                   run=_run_train, qualify=QUALIFY["train"], errors=TRAIN_ERRORS)
    ev = register_stage(sub, "eval", doc=EVAL_DOC,
                        help="evaluate prompted and fine-tuned models side by side (resumable)",
                        config_help="run config YAML (its eval and serve sections are used; optional with --model)",
                        example="eval.tasks.limit=100", run=_run_eval, qualify=QUALIFY["eval"], progress=True,
                        errors=COLLECT_ERRORS, flags=quick_eval_overrides)
    ev.add_argument("--model", help="a quick score without a config: this model prompted (a known name, a Hub id "
                                    "or a folder), and with --adapter the same base with that adapter beside it")
    ev.add_argument("--adapter", help="a LoRA adapter folder actune trained (its prompt spec is applied)")
    ev.add_argument("--tasks", help="the tasks: a JSONL file of {question, answer} records (eval.tasks.format=... "
                                    "for another format)")
