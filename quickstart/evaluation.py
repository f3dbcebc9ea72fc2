"""Each method's eval: the prompted model (generic prompt; with ``oracle_baseline`` also type-matched) and every
round's tuned model, on the held-out split (``eval_split``).

A bootstrap round's server also runs the eval episodes of the model it serves (:func:`eval_on`): the prompted
model's on round 1's, round r-1's tuned model's on round r's. The eval stage then starts a server only for what no
round served (the last round's model) and reports every model: two server starts fewer a method than one server
per eval model, each 40-60 s on a 2-core CPU and 1-2 min on a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actune.config import ConfigError
from actune.eval.config import EvalConfig, EvalModel
from actune.eval.run import run_eval, server_for
from actune.quickstart.cards import write_eval_cards
from actune.quickstart.context import RunContext
from actune.quickstart.layout import served_tuned_model
from actune.serve.config import ServeConfig

if TYPE_CHECKING:
    from actune.serve.server import Serving

__all__ = ["tuned_label", "round_model_label", "objective_label", "prompted_labels", "eval_config", "eval_serving",
           "eval_on", "run_method_eval"]


def tuned_label(r: int) -> str:
    """The eval label of round ``r``'s SFT model."""
    return f"tuned-r{r}"


def round_model_label(run: RunContext, method: str, r: int) -> str:
    """The eval label of the model round ``r`` of ``method`` has: its own, or that of the round it is the same as
    (a round that added no training data was not trained)."""
    return tuned_label(run.layout.trained_round(method, r))


def objective_label(objective: str) -> str:
    """The eval label of the model ``objective`` (``after_sft``) trained."""
    return f"tuned-{objective}"


def prompted_labels(run: RunContext) -> list[str]:
    return ["prompted", "prompted-oracle"] if run.cfg.oracle_baseline else ["prompted"]


def eval_config(run: RunContext, method: str) -> EvalConfig:
    """The eval section for ``method``: the prompted model (generic prompt; with ``oracle_baseline`` also
    type-matched) and each round's tuned model, on the ``eval_split`` questions. A round not trained yet names the
    adapter folder it will have."""
    cfg = run.cfg
    base = cfg.serve.model
    models = [EvalModel(label="prompted", model=base)]
    if cfg.oracle_baseline:
        models.append(EvalModel(label="prompted-oracle", model=base, agent={"exemplar_kinds": ["task"]}))
    for r in range(1, cfg.rounds + 1):
        if run.layout.trained_round(method, r) != r:
            continue  # not trained: its model is an earlier round's, evaluated once under that round's label
        model, adapter = run.tuned_model(method, r)
        models.append(EvalModel(label=tuned_label(r), model=model, adapter=adapter))
    for objective in cfg.after_sft:  # each paired against the SFT model it started from too
        model, adapter = served_tuned_model(run.layout.objective_adapter(method, objective), cfg.serve.model)
        models.append(EvalModel(label=objective_label(objective), model=model, adapter=adapter,
                                compare_to=round_model_label(run, method, cfg.rounds)))
    return cfg.eval.model_copy(update={
        "out_dir": run.layout.eval_dir(method), "models": models, "env": run.env(cfg.eval.env),
        "tasks": run.tasks(cfg.eval_split), "agent": run.agent(cfg.eval.agent, method), "endpoints": [],
        "yardstick_train": run.tasks("train"),
    })


def eval_serving(run: RunContext, method: str, label: str) -> tuple[ServeConfig, str]:
    """(serve section, request name) of a server for eval model ``label`` of ``method``, as the eval stage
    would start it: its base, served name and adapter."""
    return server_for(eval_config(run, method), run.cfg.serve, label)


def eval_on(run: RunContext, served: Serving, method: str, labels: list[str], run_id: str) -> None:
    """Run eval models ``labels`` of ``method`` on ``served``, the server a bootstrap round started for
    their model: the eval stage finds their episodes stored and starts no server for them."""
    run.log(f"eval {method}: {', '.join(labels)} on this round's server")
    restarts = served.server.restarts if served.server is not None else 0
    try:
        run_eval(eval_config(run, method), run.cfg.serve, name=f"{run.cfg.name}-{method}",
                 show_progress=run.show_progress, run_id=run_id, served=served, labels=labels)
    except ConfigError as e:  # refused before any episode ran: the eval stage meets it again, where it belongs
        run.log(f"eval {method}: not on this round's server ({e}); the eval stage runs {', '.join(labels)}")
    if served.server is not None and served.server.restarts > restarts:  # neither bootstrap nor eval counts these
        run.log(f"eval {method}: the model server died and was restarted "
                f"{served.server.restarts - restarts} time(s) during these episodes")


def run_method_eval(run: RunContext, method: str) -> None:
    """The eval stage of ``method``: every model not yet scored, then the report and the tuned models' cards."""
    run_eval(eval_config(run, method), run.cfg.serve, name=f"{run.cfg.name}-{method}",
             show_progress=run.show_progress)
    write_eval_cards(run, method)
