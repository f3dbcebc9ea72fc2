"""GRPO over the agent loop (``train.objective: grpo``): TRL's ``GRPOTrainer`` whose rollouts are actune's own
episodes, served by vLLM with the adapter being trained, rewarded by the judge.

    summary = train_grpo(TrainConfig(objective="grpo", base_model="runs/sft/merged", ...), rollout_spec, serve)

Each step takes ``grpo.tasks_per_step`` tasks of the bootstrap section's task file and plays each
``grpo.num_generations`` times (:mod:`actune.train.rollouts`: the same loop, parser, judge and stores as
bootstrap); the episodes' rewards (:class:`actune.train.config.GrpoReward`) are compared within each task's group,
and the loss falls on the model's own tokens only: observations are the environment's (TRL's ``env_mask``). No
transformers ``generate`` runs: TRL's own generation is off (``use_vllm=False`` with a ``rollout_func``) and the
rollout loads each step's weights into the server as a LoRA adapter. So the server must serve the start model
(``base_model``) with LoRA enabled: a server started here is; ``served`` is one the caller started so. A rerun
resumes from the last complete checkpoint and replays only the episodes its rollout store lacks.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from actune.agent.config import AgentConfig
from actune.agent.prompt_spec import find_prompt_spec, load_prompt_spec
from actune.collect import load_unique_tasks
from actune.config import public_dump
from actune.envs.config import EnvConfig
from actune.runtime.provenance import provenance
from actune.serve.server import serving
from actune.tasks.config import TaskConfig
from actune.train.checkpoints import durable_checkpoints, run_identity, train_resuming
from actune.train.common import TrainError, load_model, logged_losses, open_start, recipe_args, trl_args
from actune.train.config import TrainConfig
from actune.train.rollouts import RolloutSetup, make_rollout_func, rollout_reward
from actune.train.saving import save_weights, start_prompt_spec, training_tasks_record, write_adapter_folder

if TYPE_CHECKING:
    from actune.serve.config import ServeConfig
    from actune.serve.server import Serving

__all__ = ["RolloutSpec", "grpo_args", "train_grpo"]


@dataclass
class RolloutSpec:
    """What the rollouts play: the bootstrap section's tasks, environment and agent."""

    tasks: TaskConfig
    env: EnvConfig
    agent: AgentConfig


def grpo_args(cfg: TrainConfig, dtype: str, ckpt_dir: Path) -> Any:
    """The ``GRPOConfig``: what actune sets, then ``cfg.grpo.trl`` on top (checked by TRL itself)."""
    from trl import GRPOConfig

    g = cfg.grpo
    ours = {**recipe_args(cfg, dtype, ckpt_dir), "generation_batch_size": g.tasks_per_step * g.num_generations,
            "num_generations": g.num_generations, "temperature": g.temperature,
            "max_completion_length": cfg.max_length, "use_vllm": False, "save_steps": cfg.save_steps}
    return trl_args(GRPOConfig, ours, g.trl_settings(), "train.grpo.trl")


@contextlib.contextmanager
def _lora_server(serve: ServeConfig, model_dir: Path, rank: int, served: Serving | None) -> Iterator[Serving]:
    if served is not None:
        yield served
        return
    own = serve.model_copy(update={"model": str(model_dir), "enable_lora": True,
                                   "max_lora_rank": max(serve.max_lora_rank, rank)})
    with serving([], "", own) as started:
        yield started


def _rollout_agent(spec: RolloutSpec, model_dir: Path) -> AgentConfig:
    found = find_prompt_spec(model_dir)  # a tuned start model is prompted as it was trained
    return load_prompt_spec(found).apply(spec.agent) if found else spec.agent


def train_grpo(cfg: TrainConfig, spec: RolloutSpec, serve: ServeConfig, *, served: Serving | None = None,
               log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train the GRPO adapter into ``cfg.output_dir`` (module docstring); returns what it did."""
    from datasets import Dataset

    # lazy: train.speed imports torch, transformers and trl
    from actune.train.speed import fused_head_on_trained_positions

    say = log or print
    if cfg.wire_format != "text":
        raise TrainError("train.objective grpo: rollouts are trained in the text wire format only "
                         "(train.wire_format: text)")
    t0 = time.perf_counter()
    start = open_start(cfg)
    dtype, out, model_dir, tokenizer = start.dtype, start.out, start.model_dir, start.tokenizer
    args = grpo_args(cfg, dtype, start.ckpt_dir)
    tasks = load_unique_tasks(spec.tasks, "bootstrap")
    agent = _rollout_agent(spec, model_dir)
    say(f"train grpo: {len(tasks)} tasks, {cfg.grpo.tasks_per_step} a step x {cfg.grpo.num_generations} episodes "
        f"({agent.method}, {agent.regime}); beta {args.beta}; start {cfg.base_model}")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.16
    with _lora_server(serve, model_dir, cfg.lora.r, served) as server:
        setup = RolloutSetup(tasks={t.id: t for t in tasks}, env=spec.env, agent=agent, endpoints=server.endpoints,
                             store_dir=out.parent / f"{out.name}.rollouts", api_key=serve.api_key,
                             max_length=cfg.max_length)
        fused_head_on_trained_positions(cfg.loss_head != "trl")
        model = load_model(model_dir, dtype)
        prompts = Dataset.from_dict({"prompt": [t.id for t in tasks]})
        trainer = _trainer(model, args, prompts, tokenizer, cfg.lora.peft_config(),
                           make_rollout_func(setup, cfg.grpo, say), rollout_reward)
        trainer.add_callback(durable_checkpoints())
        identity = run_identity(cfg)
        result = train_resuming(trainer, start.ckpt_dir, say, "train grpo", identity=identity)
    rewards = [(int(h["step"]), float(h["reward"])) for h in trainer.state.log_history if "reward" in h]
    meta = {"objective": "grpo", "config": public_dump(cfg), "run": identity, "base_model": cfg.base_model,
            "tasks": len(tasks),
            "tasks_per_step": cfg.grpo.tasks_per_step, "num_generations": cfg.grpo.num_generations,
            "temperature": cfg.grpo.temperature, "reward": cfg.grpo.reward.model_dump(), "beta": args.beta,
            "steps": int(trainer.state.global_step), "final_loss": float(result.training_loss),
            "rewards": rewards, "rollouts": str(setup.store_dir), "minutes": round((time.perf_counter() - t0) / 60, 2),
            "losses": logged_losses(trainer), "dtype": dtype, "provenance": provenance(dtype)}
    del model  # the trainer's copy is the one saved; merging loads the start model again
    final = save_weights(trainer, start)
    if final is not None:
        write_adapter_folder(final, start, start_prompt_spec(model_dir, "text", agent.method), lambda merged: meta,
                             merge=cfg.merge, records=training_tasks_record(((t.id, t.question) for t in tasks),
                                                                            model_dir), card=True)
    say(f"train grpo: {meta['steps']} steps, last reward {rewards[-1][1] if rewards else float('nan'):.3f}; "
        f"adapter in {out}")
    return meta


def _trainer(model: Any, args: Any, dataset: Any, tokenizer: Any, lora: Any, rollout: Any, reward: Any) -> Any:
    from trl import GRPOTrainer

    return GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                       processing_class=tokenizer, peft_config=lora, rollout_func=rollout)
