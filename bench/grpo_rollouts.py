"""GRPO's rollouts beside the engine under them, in one run (issue #35: rollouts at >= 0.8x the engine's tok/s).

    .venv/bin/python bench/grpo_rollouts.py                       # about 10 minutes on 2 cores
    .venv/bin/python bench/grpo_rollouts.py --model runs/full-seed2/react/round1/adapter/merged --tasks 8

One vLLM server of ``--model`` (the embedded model by default) with LoRA enabled, the full preset's serving
settings. A fresh LoRA adapter of GRPO's shape is trained for nothing: rollouts load it as GRPO loads each step's
weights (the LoRA path is what the engine then runs). In order, each phase from an empty prefix cache:

1. warm-up: one rollout batch on other training questions, not measured;
2. **rollouts**: GRPO's own rollout function (:func:`actune.train.rollouts.make_rollout_func`: save the adapter,
   load it, play ``--tasks`` x ``--generations`` episodes of the world's training questions in actune's loop
   through ``collect``, judge, store, tokenise) at ``--concurrency``; every request the loop sends is recorded;
3. **engine**: those requests replayed with nothing between them, each episode's in its order, as many episodes
   at once as the rollouts ran (bench/pipeline.py's replay): the engine's own generated tok/s on the same prompts.

The ratio is rollouts' generated tok/s (tokens over the rollout function's whole wall time) over the engine's.
Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline import dev_mode, replay_episodes, reset_prefix_cache  # noqa: E402

from actune.runtime.stop_signals import run_script

TARGET = 0.8


def recording_client(requests: list) -> type:
    """``actune.llm.LLMClient`` that keeps every request, tagged with its episode: each episode samples with its
    own seed (:func:`actune.agent.episode.episode_seed`), so the seed names the episode."""
    from actune.llm import LLMClient

    class RecordingClient(LLMClient):
        async def complete(self, prompt, sampling=None, stop=None, **kw):
            requests.append((getattr(sampling, "seed", None), "complete", prompt, sampling, stop, kw))
            return await super().complete(prompt, sampling, stop, **kw)

        async def chat(self, messages, sampling=None, stop=None, **kw):
            requests.append((getattr(sampling, "seed", None), "chat", messages, sampling, stop, kw))
            return await super().chat(messages, sampling, stop, **kw)

    return RecordingClient


class BenchTrainer:
    """What the rollout function reads of TRL's trainer: the step, the tokenizer, the model to save. The bench has
    no trainer: nothing is trained, the rollouts alone are timed."""

    def __init__(self, model: Any, tokenizer: Any, step: int) -> None:
        self.model, self.processing_class = model, tokenizer
        self.state = type("State", (), {"global_step": step})()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="the start model (a name or a merged folder)")
    ap.add_argument("--tasks", type=int, default=8, help="training questions a rollout batch")
    ap.add_argument("--generations", type=int, default=4, help="episodes per question")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    import actune.llm
    from actune.agent.prompt_spec import find_prompt_spec, load_prompt_spec
    from actune.quickstart.config import load_quickstart
    from actune.runtime.cpu_features import describe_cpu
    from actune.runtime.model_files import prepare_model
    from actune.serve.server import vllm_server
    from actune.tasks.config import TaskConfig
    from actune.tasks.loading import load_tasks
    from actune.train.common import open_start
    from actune.train.config import GrpoSettings, TrainConfig
    from actune.train.rollouts import RolloutSetup, make_rollout_func
    from actune.world import write_world

    cfg = load_quickstart("full", [f"seed={args.seed}"])
    start = open_start(TrainConfig(base_model=args.model, output_dir=Path(tempfile.mkdtemp()) / "unused"))
    settings = GrpoSettings(num_generations=args.generations, tasks_per_step=args.tasks, concurrency=args.concurrency)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        world = tmp_path / "world"
        write_world(cfg.world.model_copy(update={"seed": args.seed}), world)
        tasks = load_tasks(TaskConfig(format="custom", path=str(world / "train.jsonl"), split="train",
                                      limit=2 * args.tasks))
        agent = cfg.bootstrap.agent.model_copy(update={"method": "react", "seed": args.seed})
        found = find_prompt_spec(start.model_dir)
        agent = load_prompt_spec(found).apply(agent) if found else agent
        env = cfg.bootstrap.env.model_copy(update={"name": "wiki", "corpus": str(world / "corpus.jsonl"),
                                                   "index_dir": str(tmp_path / "idx")})
        import torch
        from peft import get_peft_model
        from transformers import AutoModelForCausalLM

        model = get_peft_model(AutoModelForCausalLM.from_pretrained(start.model_dir, dtype=torch.float32),
                               TrainConfig().lora.peft_config())
        serve = cfg.serve.model_copy(update={"model": str(prepare_model(args.model)), "enable_lora": True})
        with dev_mode(), vllm_server(serve) as server:
            setup = RolloutSetup(tasks={t.id: t for t in tasks}, env=env, agent=agent, endpoints=[server.base_url],
                                 store_dir=tmp_path / "rollouts")
            rollout = make_rollout_func(setup, settings, log=lambda m: print(m, file=sys.stderr))
            batches = [[t.id for t in tasks[i:i + args.tasks] for _ in range(args.generations)]
                       for i in (args.tasks, 0)]
            rollout(batches[0], BenchTrainer(model, start.tokenizer, 0))  # warm-up, on other questions
            reset_prefix_cache(server.root_url)
            requests: list = []
            actune.llm.LLMClient = recording_client(requests)  # the rollout imports it when it plays
            t0 = time.perf_counter()
            rollout(batches[1], BenchTrainer(model, start.tokenizer, 1))
            wall = time.perf_counter() - t0
            played = _records(tmp_path / "rollouts" / "step-00001.jsonl")
            tokens = sum(t.usage.completion_tokens for t in played)
            adapter = played[0].model.name  # the served name of this batch's weights
            reset_prefix_cache(server.root_url)
            e_tokens, e_wall = asyncio.run(replay_episodes(server.base_url, adapter, requests, args.concurrency))
    roll, engine = tokens / wall, e_tokens / e_wall
    print(f"Machine: {describe_cpu()}\nModel: {args.model}; {args.tasks} tasks x {args.generations} episodes, "
          f"concurrency {args.concurrency}; {len(requests)} requests\n\n"
          "| | generated tokens | wall (s) | tok/s | ratio | target |\n|---|---|---|---|---|---|\n"
          f"| GRPO rollouts | {tokens} | {wall:.1f} | {roll:.1f} | {roll / engine:.2f}x | >= {TARGET}x |\n"
          f"| engine, same requests | {e_tokens} | {e_wall:.1f} | {engine:.1f} | 1.00x | |")
    return 0


def _records(path: Path) -> list:
    from actune.records.trajectory import read_trajectories

    return list(read_trajectories(path))


if __name__ == "__main__":
    run_script(main)
