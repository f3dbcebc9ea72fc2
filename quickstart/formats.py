"""The ReAct paper's Figure 3 at a run's scale (``formats``): Standard, CoT, Act and ReAct each fine-tuned on the
same bootstrapped ReAct episodes, and each compared with its prompted self.

Stages, after every method's eval (the run's own result first):

- **export format <f>**, per format: the stores of ReAct's round-1 training set (:func:`format_stores`) in ``f``'s
  steps, one episode a task (:func:`format_export_config`), checked to be the very episodes the ReAct format
  exports: the formats differ in what the model writes, never in which tasks and episodes it learns from;
- **eval formats prompted**: one server of the base model, every format's prompted model in its own method;
- **train format <f>**, per format: an adapter with the run's round-1 recipe, in a child process;
- **eval format <f>**, per format: the tuned adapter, zero-shot in its method (its prompt spec), then the
  report pairing it with the prompted model, in ``formats/<f>/eval/``.

The quickstart report's Figure 3 table reads those reports (:mod:`~actune.quickstart.formats_report`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actune.bootstrap.config import ExportConfig
from actune.bootstrap.export import ExportError, export_rows, write_export
from actune.collect import make_run_id
from actune.envs.factory import make_env
from actune.eval.config import EvalConfig, EvalModel
from actune.eval.run import run_eval, server_for
from actune.quickstart.cards import as_named_in_card
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import StageEstimate
from actune.quickstart.layout import served_tuned_model
from actune.quickstart.round_inputs import export_stores
from actune.quickstart.stage import Stage
from actune.quickstart.train_child import train_in_child_process
from actune.serve.server import serving
from actune.train.config import TrainConfig
from actune.train.model_card import write_folder_card

if TYPE_CHECKING:
    from actune.bootstrap.export_summary import ExportSummary

__all__ = ["PROMPTED", "TUNED", "format_stages", "format_stores", "format_export_config", "selected_episodes",
           "export_format", "format_train_config", "format_eval_config", "eval_prompted_formats", "eval_format"]

PROMPTED = "prompted"
TUNED = "tuned"
"""The labels of a format's two models in its eval report."""


def format_stages(run: RunContext, est: StageEstimate) -> list[Stage]:
    """Every ``formats`` stage in order (none when ``formats`` is empty)."""
    fmts = run.cfg.formats
    if not fmts:
        return []
    stages = [Stage(f"export format {f}", 10, lambda f=f: export_format(run, f)) for f in fmts]
    stages.append(Stage("eval formats prompted", est.formats_prompted, lambda: eval_prompted_formats(run)))
    stages += [Stage(f"train format {f}", est.formats_train[f],
                     lambda f=f: train_in_child_process(format_train_config(run, f))) for f in fmts]
    stages += [Stage(f"eval format {f}", est.formats_eval[f], lambda f=f: eval_format(run, f)) for f in fmts]
    return stages


def format_stores(run: RunContext) -> list[Path]:
    """The stores every format exports: those of ReAct's round-1 training set (its bootstrap store, then what
    :func:`~actune.quickstart.round_inputs.export_stores` adds: imports, gold paths, mixed-in methods)."""
    return export_stores(run.cfg, run.layout, "react", 1)


def format_export_config(cfg: QuickstartConfig, fmt: str) -> ExportConfig:
    """``bootstrap.export`` into ``fmt``'s steps, one episode a task: dedupe can drop only a task's later episodes,
    so every format keeps each task's first (a Standard example of a second episode would repeat the first's). No
    shares (every format takes what ReAct's set has), no reflection-part filter (no format here has reflections)."""
    return cfg.bootstrap.export.model_copy(update={
        "steps_method": fmt, "seed": cfg.seed, "max_per_task": 1, "method_shares": {}, "store_shares": {},
        "require_reflection_parts": False})


def _actions(run: RunContext) -> Callable[[str], str]:
    """env name -> its actions, for the Act instruction (asked only when records are converted into Act): the
    run's environment, built once, where the episodes were collected."""
    @cache
    def actions(env: str) -> str:
        built = make_env(run.env(run.cfg.bootstrap.env))
        if built.name != env:
            raise ExportError(f"formats: records of env {env!r}, but this run plays in {built.name!r}")
        return built.describe_actions()

    return actions


def _format_rows(run: RunContext, fmt: str) -> tuple[list[dict[str, Any]], ExportSummary]:
    return export_rows(format_stores(run), run.cfg.train.wire_format, format_export_config(run.cfg, fmt),
                       actions=_actions(run))


def selected_episodes(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(store, episode id) of the examples an export's rows hold, in order."""
    return [(r["source_store"], r["episode_id"]) for r in rows]


def export_format(run: RunContext, fmt: str) -> None:
    """``fmt``'s training set, refused (:class:`~actune.bootstrap.export.ExportError`) unless it holds the very
    episodes the ReAct format does."""
    rows, summary = _format_rows(run, fmt)
    if fmt != "react":
        mine, react = selected_episodes(rows), selected_episodes(_format_rows(run, "react")[0])
        if mine != react:
            odd = sorted(set(mine) ^ set(react))[:3]
            raise ExportError(f"formats: the {fmt} export holds other episodes than the react one ({len(mine)} "
                              f"against {len(react)}; e.g. {odd}): the formats would not learn from the same data")
    write_export(rows, summary, run.layout.format_dataset(fmt), format_export_config(run.cfg, fmt))
    run.log(f"export format {fmt}: {summary.exported} examples of {summary.tasks} tasks from "
            f"{len(format_stores(run))} store(s)")


def format_train_config(run: RunContext, fmt: str) -> TrainConfig:
    """The run's recipe (round 1's: from the base model, ``train.num_train_epochs``) on ``fmt``'s training set."""
    layout = run.layout
    return run.cfg.train.model_copy(update={"dataset": layout.format_dataset(fmt),
                                            "output_dir": layout.format_adapter(fmt), "seed": run.cfg.seed})


def format_eval_config(run: RunContext, fmt: str) -> EvalConfig:
    """The eval section of ``fmt``: the prompted model with the eval prompt and the tuned one (its prompt spec:
    zero-shot), both in ``fmt``'s method, on the ``eval_split`` questions. Before training it names the adapter
    folder the model will have."""
    cfg = run.cfg
    model, adapter = served_tuned_model(run.layout.format_adapter(fmt), cfg.serve.model)
    models = [EvalModel(label=PROMPTED, model=cfg.serve.model), EvalModel(label=TUNED, model=model, adapter=adapter)]
    return cfg.eval.model_copy(update={
        "out_dir": run.layout.format_eval_dir(fmt), "models": models, "env": run.env(cfg.eval.env),
        "tasks": run.tasks(cfg.eval_split), "agent": run.agent(cfg.eval.agent, fmt), "endpoints": []})


def eval_prompted_formats(run: RunContext) -> None:
    """Every format's prompted model on one server of the base model (its eval stage finds the episodes stored)."""
    cfg = run.cfg
    serve, _ = server_for(format_eval_config(run, cfg.formats[0]), cfg.serve, PROMPTED)
    run_id = make_run_id(f"{cfg.name}-formats")
    with serving([], "", serve) as served:
        for f in cfg.formats:
            run.log(f"eval format {f}: the prompted model ({f}, {cfg.eval.agent.regime})")
            run_eval(format_eval_config(run, f), cfg.serve, name=f"{cfg.name}-format-{f}",
                     show_progress=run.show_progress, run_id=run_id, served=served, labels=[PROMPTED])


def eval_format(run: RunContext, fmt: str) -> None:
    """``fmt``'s eval stage: what is not scored yet (its tuned model), the report, the eval table in the adapter's
    cards."""
    run_eval(format_eval_config(run, fmt), run.cfg.serve, name=f"{run.cfg.name}-format-{fmt}",
             show_progress=run.show_progress)
    report = as_named_in_card(run.layout.format_eval_dir(fmt) / "report.json")
    adapter = run.layout.format_adapter(fmt)
    for folder in (adapter, adapter / "merged"):
        if (folder / "README.md").is_file():
            write_folder_card(folder, report=report)
