"""What a DPO step costs beside an SFT step on the same examples, printed side by side (issue #35).

    .venv/bin/python bench/dpo_step_cost.py runs/full-seed2/react/round1/trajectories.jsonl --steps 8

The store's preference pairs (:func:`actune.bootstrap.preference_pairs.pair_rows`: a kept episode of a task
against a failed one) are the examples. **SFT** trains on each pair's chosen side alone (the prompt's segments
then the chosen ones, flagged as SFT's export flags them), with ``actune train``'s own trainer; **DPO** trains on
the pairs with ``train.objective: dpo``'s trainer (both sides, and the reference pass with the adapter off). Same
base model, dtype, LoRA, batch size (pairs a step for DPO, episodes a step for SFT), learning rate and seed, the
train config's (default: ``TrainConfig()``). Each trainer runs in a process of its own; step 1 is a warm-up and is
not counted: a step's cost is the mean wall time of steps 2..N. Target: a DPO step at most 2.5x an SFT step.
Prints one table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_speed import step_clock  # noqa: E402

from actune.runtime.stop_signals import run_script

TARGET = 2.5


def pair_examples(store: str, out_dir: Path) -> tuple[Path, Path, int]:
    """The store's pairs as a DPO folder and their chosen sides as an SFT folder; returns both and the count."""
    from datasets import Dataset

    from actune.bootstrap.preference_pairs import pair_rows

    rows, _ = pair_rows(store)
    if not rows:
        raise SystemExit(f"{store}: no preference pair (a task needs a kept and a failed episode)")
    Dataset.from_list(rows).save_to_disk(str(out_dir / "pairs"))
    chosen = [{"task_id": r["task_id"], "wire": "text",
               "segments": [*r["prompt_segments"], *r["chosen_segments"]]} for r in rows]
    Dataset.from_list(chosen).save_to_disk(str(out_dir / "sft"))
    return out_dir / "sft", out_dir / "pairs", len(rows)


def _one(objective: str, config_json: str) -> dict[str, Any]:
    from datasets import load_from_disk

    from actune.runtime import cpu_features
    from actune.train.common import open_start
    from actune.train.config import TrainConfig

    cfg = TrainConfig.model_validate_json(config_json)
    start = open_start(cfg)
    clock = step_clock()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if objective == "sft":
            from actune.train.sft import make_trainer, sft_args, tokenize_dataset

            tokenized = tokenize_dataset(load_from_disk(str(cfg.dataset)), start.tokenizer, cfg)
            train_ds = tokenized.select_columns(["input_ids", "labels"])
            args = sft_args(cfg, start.dtype, Path(tmp))
            trainer, speed = make_trainer(cfg, args, start.dtype, start.model_dir, start.tokenizer, train_ds,
                                          callbacks=[clock])
            padding_free = speed["padding_free"]
        else:
            from actune.train.dpo import LOSS_COLUMNS, dpo_args, make_dpo_trainer, tokenized_pairs

            args = dpo_args(cfg, start.dtype, Path(tmp))
            args.save_strategy, args.eval_strategy, args.load_best_model_at_end = "no", "no", False
            pairs = tokenized_pairs(load_from_disk(str(cfg.dataset)), start.tokenizer, args.max_length, print)
            trainer = make_dpo_trainer(cfg, args, start, pairs.select_columns(LOSS_COLUMNS))
            trainer.add_callback(clock)
            padding_free = trainer.padding_free
        setup_s = time.perf_counter() - t0  # the model load, and DPO's reference pass when it is precomputed
        trainer.train()  # train_speed's timed_train counts SFT tokens, which a pair has not; steps are timed alike
    if len(clock.ends) < 2:
        raise RuntimeError("run at least 2 steps: the first one is a warm-up and is not counted")
    wall, steps = clock.ends[-1] - clock.ends[0], len(clock.ends) - 1
    return {"step_s": round(wall / steps, 3), "steps": steps, "setup_s": round(setup_s, 2),
            "padding_free": padding_free,
            "machine": cpu_features.describe_cpu(), "dtype": start.dtype}


def measure(store: str, steps: int, overrides: list[str]) -> dict[str, Any]:
    from actune.config import load_config
    from actune.train.config import TrainConfig

    base = load_config(TrainConfig, None, [o.removeprefix("train.") for o in overrides], section="train")
    out: dict[str, Any] = {"store": store, "steps": steps, "batch_size": base.per_device_train_batch_size}
    with tempfile.TemporaryDirectory() as tmp:
        sft_dir, pairs_dir, out["pairs"] = pair_examples(store, Path(tmp))
        for objective, data in (("sft", sft_dir), ("dpo", pairs_dir)):
            cfg = base.model_copy(update={"objective": objective, "dataset": data, "max_steps": steps,
                                          "eval_fraction": 0.0, "save_steps": 10**9, "logging_steps": 1})
            proc = subprocess.run([sys.executable, __file__, "--one", objective, "--config-json",
                                   cfg.model_dump_json()], stdout=subprocess.PIPE, text=True, check=True)
            out[objective] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["ratio"] = round(out["dpo"]["step_s"] / out["sft"]["step_s"], 2)
    # what DPO's setup costs beyond SFT's (the reference pass, when precomputed), spread over one epoch's steps
    epoch_steps = math.ceil(out["pairs"] / out["batch_size"])
    extra = max(0.0, out["dpo"]["setup_s"] - out["sft"]["setup_s"])
    out["epoch_steps"], out["dpo_amortised_s"] = epoch_steps, round(out["dpo"]["step_s"] + extra / epoch_steps, 3)
    out["ratio_amortised"] = round(out["dpo_amortised_s"] / out["sft"]["step_s"], 2)
    return out


def table(f: dict[str, Any]) -> str:
    return "\n".join([
        f"Machine: {f['sft']['machine']} ({f['sft']['dtype']})",
        f"Examples: {f['pairs']} pairs of {f['store']}; batch {f['batch_size']}; {f['steps']} steps, "
        "step 1 not counted",
        "", "| | SFT step (chosen sides) | DPO step (pairs) | DPO / SFT | target |", "|---|---|---|---|---|",
        f"| seconds | {f['sft']['step_s']} | {f['dpo']['step_s']} | {f['ratio']}x | <= {TARGET}x |",
        f"| with DPO's extra set-up over an epoch ({f['epoch_steps']} steps) | {f['sft']['step_s']} | "
        f"{f['dpo_amortised_s']} | {f['ratio_amortised']}x | <= {TARGET}x |",
        "", f"Set-up (model load; DPO's reference pass when precomputed): SFT {f['sft']['setup_s']} s, "
        f"DPO {f['dpo']['setup_s']} s. Padding-free: SFT {f['sft']['padding_free']}, DPO {f['dpo']['padding_free']}."])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", nargs="?", help="a bootstrap store with kept and failed episodes of the same tasks")
    ap.add_argument("overrides", nargs="*", help="train.key=value overrides of the train config")
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps of each (the first is not counted)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--config-json", help=argparse.SUPPRESS)
    args = ap.parse_intermixed_args(argv)  # overrides may come after --steps
    if args.one:
        print(json.dumps(_one(args.one, args.config_json)))
        return 0
    if not args.store:
        ap.error("give a store")
    figures = measure(args.store, args.steps, args.overrides)
    print(table(figures))
    return 0


if __name__ == "__main__":
    run_script(main)
