"""Two models' eval stores of the same tasks, paired: mean of each, B - A with its bootstrap interval, McNemar's b/c
and exact p, on correct & grounded and on correct (eval's own statistics, actune.eval.stats).

    .venv/bin/python scripts/compare_stores.py runs/A/eval/react/tuned-r1/trajectories.jsonl \\
        runs/B/eval/react/tuned-r1/trajectories.jsonl
"""

import sys

from actune.eval.stats import PAIRED_METRICS, paired_comparison
from actune.records.trajectory import read_trajectory_lines
from actune.runtime.stop_signals import run_script


def main(a_path: str, b_path: str) -> None:
    a = [t for _, t in read_trajectory_lines(a_path)]
    b = [t for _, t in read_trajectory_lines(b_path)]
    for metric in PAIRED_METRICS:
        c = paired_comparison(a, b, metric=metric, samples=10_000, confidence=0.95, seed=0)
        print(f"{metric}: {c.tasks} tasks, A {c.mean_a:.3f}, B {c.mean_b:.3f}, B - A {c.diff.mean * 100:+.1f} pts "
              f"[{c.diff.low * 100:+.1f}, {c.diff.high * 100:+.1f}], b/c {c.b}/{c.c}, McNemar p {c.p_value:.2g}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)  # its usage, exit 1
    run_script(lambda: main(sys.argv[1], sys.argv[2]))
