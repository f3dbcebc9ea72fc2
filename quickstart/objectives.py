"""What trains on from the last SFT round's model (``after_sft``): DPO on the SFT model's own successes against its
failures (ETO), GRPO with rollouts in the agent loop. Each is a model of its own in the eval, paired against the
prompted model and against the SFT model it started from.

- ``dpo``, per method: **explore** (the SFT model, served as the eval stage would serve it, plays every training
  task ``explore.attempts`` times at ``explore.temperature``; its own eval episodes run on the same server),
  **pairs** (:func:`actune.bootstrap.preference_pairs.export_pairs` of that store and the SFT rounds' stores: a
  weak SFT model may keep no episode of its own, and the rounds' kept and failed episodes of a task pair too),
  **train dpo** (from the SFT model's merged folder, in a child process).
- ``grpo``, per method: **train grpo** (from the same folder, rollouts on the training tasks, in a child process
  that starts its own LoRA-enabled server).
"""

from __future__ import annotations

from pathlib import Path

from actune.agent.prompt_spec import load_prompt_spec
from actune.bootstrap.preference_pairs import export_pairs, sometimes_solved
from actune.bootstrap.run import run_bootstrap
from actune.collect import make_run_id
from actune.config import ConfigError
from actune.quickstart.bootstrap_rounds import all_stored, stored_state
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import StageEstimate
from actune.quickstart.evaluation import eval_on, eval_serving, round_model_label
from actune.quickstart.stage import Stage
from actune.quickstart.train_child import train_in_child_process
from actune.serve.server import serving
from actune.tasks.config import TaskConfig
from actune.train.common import MERGED_DIR
from actune.train.config import TrainConfig
from actune.train.grpo import RolloutSpec

__all__ = ["objective_stages", "explore", "pair_stores", "make_pairs", "objective_train_config"]


def objective_stages(run: RunContext, est: StageEstimate) -> list[Stage]:
    """Every ``after_sft`` objective's stages, method by method."""
    stages = []
    n = len(run.cfg.methods)
    for objective in run.cfg.after_sft:
        for m in run.cfg.methods:
            if objective == "dpo":
                stages += [Stage(f"explore {m}", est.explore / n, lambda m=m: explore(run, m)),
                           Stage(f"pairs {m}", 5, lambda m=m: make_pairs(run, m))]
            stages.append(Stage(f"train {objective} {m}", est.objectives[objective] / n,
                                lambda m=m, o=objective: _train(run, m, o)))
    return stages


def _sft_folder(run: RunContext, method: str) -> Path:

    return run.layout.adapter(method, run.cfg.rounds) / MERGED_DIR


def explore(run: RunContext, method: str) -> None:
    """The SFT model on every training task, ``explore.attempts`` sampled episodes each, into the exploration
    store; the SFT model's eval episodes run on the same server."""
    cfg, ex = run.cfg, run.cfg.explore
    sft = round_model_label(run, method, cfg.rounds)  # the SFT model the objectives start from: the last round's
    if all_stored(stored_state(run.layout.explore_store(method)), method, run.tasks("train"), ex.attempts):  # resumed
        run.log(f"explore {method}: every episode is stored; the eval stage runs what is left of {sft}'s")
        return
    spec = load_prompt_spec(_sft_folder(run, method))
    serve, request_model = eval_serving(run, method, sft)
    agent = spec.apply(run.agent(cfg.bootstrap.agent, method, temperature=ex.temperature))
    run_id = make_run_id(f"{cfg.name}-explore")
    run.log(f"explore {method}: the {sft} model, {ex.attempts} episodes a training task at "
            f"T={ex.temperature}")
    with serving([], "", serve) as served:
        boot = cfg.bootstrap.model_copy(update={
            "store": run.layout.explore_store(method), "endpoints": served.endpoints, "model": request_model,
            "attempts_per_task": ex.attempts, "target_correct": 10**9, "env": run.env(cfg.bootstrap.env),
            "tasks": run.tasks("train"), "agent": agent,
        })
        run_bootstrap(boot, serve, name=cfg.name, show_progress=run.show_progress, run_id=run_id, served=served)
        eval_on(run, served, method, [sft], run_id)


def pair_stores(run: RunContext, method: str) -> list[Path]:
    """The stores DPO's pairs come from: the SFT model's exploration first, then the SFT rounds' own bootstrap
    stores (a pair never mixes stores' prompts: each side of a pair was made under the same prompt)."""
    rounds = [run.layout.store(method, r) for r in range(1, run.cfg.rounds + 1)]
    return [run.layout.explore_store(method), *(p for p in rounds if p.exists())]


def make_pairs(run: RunContext, method: str) -> None:
    summary = export_pairs(pair_stores(run, method), run.layout.pairs(method), run.cfg.explore.max_pairs_per_task)
    run.log(f"pairs {method}: {summary.pairs} pairs of {summary.tasks} tasks ({summary.cut_at_shared_prefix} cut "
            f"where the two episodes part); unpaired: {summary.unpaired or 'none'}")


def objective_train_config(run: RunContext, method: str, objective: str) -> TrainConfig:
    """``objective``'s recipe (``objective_train`` on top of ``train``) from the SFT model's merged folder."""
    cfg = run.cfg.objective_train_config(objective)  # type: ignore[arg-type]
    update = {"base_model": str(_sft_folder(run, method)), "seed": run.cfg.seed,
              "output_dir": run.layout.objective_adapter(method, objective)}
    if objective == "dpo":
        update["dataset"] = run.layout.pairs(method)
    return cfg.model_copy(update=update)


def _sometimes_solved(run: RunContext, method: str) -> TaskConfig:
    """The training tasks the SFT model's exploration solved sometimes (``grpo_tasks: sometimes``), written beside
    GRPO's adapter; refused when there is none."""
    ids = sometimes_solved([run.layout.explore_store(method)])
    path = run.layout.objective_dir(method, "grpo") / "tasks.jsonl"
    n = run.write_train_tasks(path, ids.__contains__) if ids else 0
    if not n:
        raise ConfigError(f"grpo_tasks=sometimes: the exploration ({run.layout.explore_store(method)}) solved no "
                          "training task sometimes (a kept and a failed episode); use grpo_tasks=all")
    run.log(f"train grpo {method}: {n} training tasks the exploration solved sometimes")
    return run.tasks("train").model_copy(update={"path": str(path)})


def _train(run: RunContext, method: str, objective: str) -> None:
    tcfg = objective_train_config(run, method, objective)
    if objective != "grpo":
        train_in_child_process(tcfg)
        return

    cfg = run.cfg
    tasks = run.tasks("train") if cfg.grpo_tasks == "all" else _sometimes_solved(run, method)
    rollouts = RolloutSpec(tasks=tasks, env=run.env(cfg.bootstrap.env), agent=run.agent(cfg.bootstrap.agent, method))
    train_in_child_process(tcfg, rollouts=rollouts, serve=cfg.serve)
