"""GRPO's rollouts: the adapter being trained plays training tasks in actune's own agent loop, on the vLLM server.

    rollout = make_rollout_func(setup, settings, log=print)      # TRL's ``rollout_func``
    out = rollout(["task-7", "task-7", "task-3", "task-3"], trainer)

TRL calls the function once per generation batch with the prompts of its ``RepeatSampler``: each task id
``num_generations`` times in a row. The function saves the trainer's current LoRA weights, loads them into the
server under a name hashed from the weights (:func:`actune.serve.adapters.adapter_name`), and runs every (task,
attempt) through :func:`actune.collect.collect` with that name as the model: the same methods, parser, judge and
store as bootstrap, so a rollout batch is a trajectory store (``<output_dir>.rollouts/step-NNNNN.jsonl``) and a
rerun after a crash plays only the episodes it lacks. Each episode comes back as token ids: the prompt head, then
everything after it with ``env_mask`` 0 on observations (TRL keeps those tokens out of the loss) and 1 on every
step the model wrote, an unreadable action included: its reward carries the penalty, so its tokens take the
push. Token ids are those of the rendered episode, tokenised once (:func:`actune.train.masking.tokenize_segments`),
the rendering SFT trains on.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import actune.envs.factory
import actune.llm
from actune.agent.config import AgentConfig
from actune.agent.render import episode_segments
from actune.collect import collect
from actune.envs.config import EnvConfig
from actune.judge import Verdict, verdict_of
from actune.llm import ClientConfig
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import ModelRecord, Trajectory, read_trajectory_lines
from actune.serve import adapters
from actune.train.config import GrpoReward, GrpoSettings
from actune.train.masking import tokenize_segments

__all__ = ["RolloutSetup", "episode_reward", "episode_tokens", "group_attempts", "make_rollout_func",
           "unreadable_actions"]


@dataclass
class RolloutSetup:
    """Where and how the rollouts run (the bootstrap section's tasks, environment and agent; the server)."""

    tasks: dict[str, Task]
    """Training tasks by id: the ids are the GRPO dataset's prompts."""
    env: EnvConfig
    agent: AgentConfig
    """The loop's settings, the start model's prompt spec applied; sampling comes from ``GrpoSettings``."""
    endpoints: list[str]
    store_dir: Path
    """``<output_dir>.rollouts``: a store per rollout batch and the adapters it played."""
    api_key: str | None = field(default=None, repr=False)
    max_length: int | None = None


def unreadable_actions(traj: Trajectory) -> int:
    return sum(1 for s in traj.steps if s.type == "action" and s.action_name is None)


def episode_reward(traj: Trajectory, verdict: Verdict, reward: GrpoReward) -> float:
    """The judge's verdict in reward, less ``reward.unreadable_action`` per action the parser could not read."""
    base = reward.kept if verdict.kept else reward.correct if verdict.correct else reward.wrong
    return base - reward.unreadable_action * unreadable_actions(traj)


def episode_tokens(tokenizer: Any, traj: Trajectory, max_length: int | None = None) -> dict[str, list[int]]:
    """``prompt_ids`` (the prompt head), ``completion_ids`` (everything after it) and ``env_mask`` (1 on the
    tokens of steps the model wrote, 0 on observations, critiques and tokens that straddle the two)."""
    segments = episode_segments(traj, every_model_step=True)
    enc = tokenize_segments(tokenizer, segments, max_length)
    head = len(tokenize_segments(tokenizer, segments[:1]).input_ids)
    # the head ends in a newline, which these tokenizers never merge with the next line: the first step's
    # tokens start where the head's end. A tokenizer that merged across it would shift the split by a token.
    head = min(head, len(enc.input_ids) - 1)
    flags = [int(label != -100) for label in enc.labels]
    return {"prompt_ids": enc.input_ids[:head], "completion_ids": enc.input_ids[head:], "env_mask": flags[head:]}


def group_attempts(prompts: list[str]) -> list[tuple[str, int]]:
    """(task id, attempt) for each row: the n-th row of a task in the batch is its attempt n."""
    seen: Counter = Counter()
    out = []
    for task_id in prompts:
        out.append((task_id, seen[task_id]))
        seen[task_id] += 1
    return out


def _missing_row(tokenizer: Any, setup: RolloutSetup, task_id: str) -> dict[str, list[int]]:
    # an episode the server failed (collect retried it and gave up): a row TRL accepts and trains nothing on
    ids = tokenizer(setup.tasks[task_id].question)["input_ids"] or [tokenizer.eos_token_id]
    return {"prompt_ids": ids, "completion_ids": [tokenizer.eos_token_id], "env_mask": [0]}


def _save_adapter(trainer: Any, folder: Path) -> None:
    if (folder / "adapter_config.json").is_file():
        return  # a rerun of this step: the checkpoint it resumed from holds the same weights
    tmp = folder.with_name(f".{folder.name}.new")
    trainer.model.save_pretrained(str(tmp))
    tmp.replace(folder)


def _play(setup: RolloutSetup, settings: GrpoSettings, model: str, rows: list[tuple[str, int]],
          store_path: Path, step: int, log: Callable[[str], None]) -> None:
    agent = setup.agent.model_copy(update={"temperature": settings.temperature, "seed": setup.agent.seed + step})
    with TrajectoryStore.open(store_path) as store:
        todo = [(setup.tasks[t], a) for t, a in rows if not store.has(t, agent.method, a)]
        if not todo:
            return

        async def run() -> None:
            client = ClientConfig(endpoints=setup.endpoints, model=model, max_concurrency=settings.concurrency,
                                  api_key=setup.api_key)
            # the client and the env factory are looked up when called, so tests can swap in fakes
            async with actune.llm.LLMClient(client) as llm:
                await collect(todo, lambda: actune.envs.factory.make_env(setup.env), llm, agent, store,
                              concurrency=min(settings.concurrency, len(todo)), target_correct=len(todo) + 1,
                              model=ModelRecord(name=model), run_id=f"grpo-step{step}", log=log, stage="grpo")

        asyncio.run(run())


def make_rollout_func(setup: RolloutSetup, settings: GrpoSettings,
                      log: Callable[[str], None]) -> Callable[[list[str], Any], dict[str, Any]]:
    """TRL's ``rollout_func`` over ``setup`` (module docstring). The server's adapter routes are looked up as
    ``adapters.<name>`` when called, so tests can swap them."""
    loaded: list[str] = []

    def rollout(prompts: list[str], trainer: Any) -> dict[str, Any]:
        step = trainer.state.global_step
        tokenizer = trainer.processing_class
        folder = setup.store_dir / "adapters" / f"step-{step:05d}"
        folder.parent.mkdir(parents=True, exist_ok=True)
        _save_adapter(trainer, folder)
        name = adapters.adapter_name("grpo", folder)
        for url in setup.endpoints:
            if name not in adapters.served_models(url, setup.api_key):
                adapters.load_adapter(url, name, folder, setup.api_key)
        rows = group_attempts(list(prompts))
        store_path = setup.store_dir / f"step-{step:05d}.jsonl"
        t0 = time.perf_counter()
        _play(setup, settings, name, rows, store_path, step, log)
        seconds = time.perf_counter() - t0
        played = {(t.task.id, t.attempt): t for _, t in read_trajectory_lines(store_path)}
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "reward": []}
        kept = tokens = 0
        for task_id, attempt in rows:
            traj = played.get((task_id, attempt))
            verdict = verdict_of(traj) if traj is not None else None
            row = (episode_tokens(tokenizer, traj, setup.max_length) if traj is not None and verdict is not None
                   else _missing_row(tokenizer, setup, task_id))
            for key in ("prompt_ids", "completion_ids", "env_mask"):
                out[key].append(row[key])
            out["reward"].append(episode_reward(traj, verdict, settings.reward) if verdict is not None else None)
            kept += int(verdict is not None and verdict.kept)
            tokens += traj.usage.completion_tokens if traj is not None else 0
        rewards = [r for r in out["reward"] if r is not None]
        log(f"grpo step {step}: {len(rows)} episodes, reward {sum(rewards) / max(1, len(rewards)):.3f}, kept "
            f"{kept}/{len(rows)}, rollout {tokens / max(seconds, 1e-9):.1f} tok/s ({tokens} tokens in {seconds:.1f} s)")
        for old in loaded:  # free the server's LoRA slot of the weights this step replaced (not the same weights)
            if old == name:
                continue
            for url in setup.endpoints:
                adapters.unload_adapter(url, old, setup.api_key)
        loaded[:] = [name]
        return {**out, "logprobs": None}

    return rollout


def rollout_reward(prompts: list[Any], completions: list[Any], reward: list[float | None] | None = None,
                   **_: Any) -> list[float | None]:
    """TRL's reward function: each row's reward, already computed by the rollout (its ``reward`` extra)."""
    if reward is None:
        raise ValueError("rollout_reward: the rollout returned no 'reward' field")
    return list(reward)
