"""A quickstart run's round-r tuned model, k sampled episodes a question on its eval split, and the majority vote
over their answers (CoT-SC's vote, over whole episodes) against its greedy eval, on the same questions:

    .venv/bin/python scripts/sampled_vote.py hotpotqa runs/hq48-dev-s7103-mentions runs/sc-dev-s7103-mentions-k5 \\
        --k 5 --temperature 0.7 --round 1

Prints correct (all questions) and correct & grounded (those with their evidence known) for greedy, one sampled
episode (the mean), the vote (its first episode with the winning answer) and any of the k (an oracle). Measured
before building a voting method into the loop (docs/results, "It reads: four levers").
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections import defaultdict
from pathlib import Path

from actune.agent.methods.cot_sc import majority_vote
from actune.eval.config import EvalModel
from actune.eval.run import run_eval
from actune.eval.stats import correct_grounded, first_attempts
from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.evaluation import eval_config
from actune.quickstart.layout import Layout
from actune.records.trajectory import Trajectory, read_trajectories
from actune.runtime.stop_signals import run_script


def sample(preset: str, run_dir: Path, out: Path, k: int, temperature: float, rnd: int) -> tuple[Path, str]:
    """Run the round's tuned model k times a question at ``temperature``; (the store's folder, the method)."""
    state = json.loads((run_dir / "quickstart-state.json").read_text())
    words = shlex.split(state["command"])
    overrides = [w for w in words[2:] if "=" in w and not w.startswith("--")]
    seed = words[words.index("--seed") + 1] if "--seed" in words else None
    cfg = load_quickstart(preset, overrides + ([f"seed={seed}"] if seed else []), hardware=hardware_kind())
    run = RunContext(cfg, Layout(run_dir, cfg.source), False, print)
    ec = eval_config(run, cfg.methods[0])
    tuned = next(m for m in ec.models if m.label == f"tuned-r{rnd}")
    ec = ec.model_copy(update={
        "out_dir": out, "models": [EvalModel(label="sampled", model=tuned.model, adapter=tuned.adapter)],
        "attempts": k, "yardsticks": False, "agent": ec.agent.model_copy(update={"temperature": temperature})})
    run_eval(ec, cfg.serve, name="sampled", show_progress=False)
    return out / "sampled", cfg.methods[0]


def compare(sampled: Path, greedy: Path) -> dict[str, float]:
    """The counts the module docstring names, over the questions ``sampled`` holds."""
    by: dict[str, list[Trajectory]] = defaultdict(list)
    for traj in read_trajectories(sampled / "trajectories.jsonl"):
        by[traj.task.id].append(traj)
    greedy_eps = first_attempts(read_trajectories(greedy / "trajectories.jsonl"))
    c: dict[str, float] = defaultdict(float)
    for tid, eps in by.items():
        eps.sort(key=lambda t: t.attempt)
        w, _ = majority_vote([t.prediction for t in eps])
        win = eps[w] if w is not None else None
        c["questions"] += 1
        c["greedy correct"] += greedy_eps[tid].correct
        c["sampled correct (mean)"] += sum(t.correct for t in eps) / len(eps)
        c["vote correct"] += bool(win and win.correct)
        c["any correct"] += any(t.correct for t in eps)
        if eps[0].task.meta.get("evidence_known", True):
            c["with evidence known"] += 1
            c["greedy c&g"] += correct_grounded(greedy_eps[tid])
            c["sampled c&g (mean)"] += sum(map(correct_grounded, eps)) / len(eps)
            c["vote c&g"] += bool(win and correct_grounded(win))
            c["any c&g"] += any(map(correct_grounded, eps))
    return dict(c)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("preset")
    p.add_argument("run", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--round", type=int, default=1)
    a = p.parse_args()
    sampled, method = sample(a.preset, a.run, a.out, a.k, a.temperature, a.round)
    for key, value in compare(sampled, a.run / "eval" / method / f"tuned-r{a.round}").items():
        print(f"{key}: {value:.1f}")


if __name__ == "__main__":
    run_script(main)
