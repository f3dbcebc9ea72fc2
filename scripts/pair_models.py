"""Two models' eval episodes paired question by question: correct & grounded at the evidence level over the
questions whose supporting sentences are known, overall and per kind, with the exact McNemar test; after a
search that found no page, how often the next search opens a page that search listed under ``Similar:``; and how
many bridge episodes search only names the question or an earlier observation showed, and open every supporting
page.

    .venv/bin/python scripts/pair_models.py runs/X/eval/react/tuned-r1 runs/X/eval/react/tuned-r2

Each argument is an eval model folder (its ``trajectories.jsonl``) or a store file; the first episode of each task
counts (greedy evals have one). Used for issue #48's round-against-round lines in docs/results/.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

from actune.bootstrap.gold_paths import searches_seen
from actune.eval.stats import correct_grounded, first_attempts, mcnemar_exact
from actune.records.trajectory import Trajectory, read_trajectories
from actune.runtime.stop_signals import run_script
from actune.tasks.metrics import normalize_answer

_SIMILAR = re.compile(r"Similar: \[(.*)\]")


def _episodes(path: Path) -> dict[str, Trajectory]:
    return first_attempts(read_trajectories(path / "trajectories.jsonl" if path.is_dir() else path))


def _recoveries(traj: Trajectory) -> tuple[int, int]:
    """(searches that missed with a Similar: list, of them the next search one of the listed titles)."""
    misses = picks = 0
    listed: list[str] | None = None
    for s in traj.steps:
        if s.type == "action" and s.action_name == "search" and listed is not None:
            picks += (s.action_arg or "") in listed
            listed = None
        if s.type == "observation" and s.text.startswith("Could not find"):
            m = _SIMILAR.search(s.text)
            if m:
                misses += 1
                listed = re.findall(r"'([^']*)'|\"([^\"]*)\"", m.group(1))
                listed = [a or b for a, b in listed]
    return misses, picks


def _bridge_reading(eps: dict[str, Trajectory]) -> str:
    """Bridge episodes: how many search only names shown before (:func:`searches_seen`), open every supporting
    page, show the answer's text in an observation, and of those answer right."""
    bridges = [t for t in eps.values() if t.task.meta.get("kind") == "bridge"]
    seen = sum(searches_seen(t.task.question, t.steps) for t in bridges)
    both = [t for t in bridges if set(t.task.meta.get("supporting_titles") or [])
            <= set(t.info.get("env_info", {}).get("titles") or [])]
    shown = [t for t in bridges if normalize_answer(t.task.answer) in normalize_answer(
        " ".join(s.text for s in t.steps if s.type == "observation"))]
    cued = [c for t in bridges if (c := _cue_led(t))]
    return (f"bridges {len(bridges)}: every search a name shown before {seen}; every supporting page opened "
            f"{len(both)} (answer shown in {sum(t in shown for t in both)}, right {sum(t.correct for t in both)}); "
            f"answer shown {len(shown)}, right {sum(t.correct for t in shown)}; last thought led by \"word:\" "
            f"{len(cued)} (the word the question's {sum(q for q, _ in cued)}, in the quote that follows "
            f"{sum(h for _, h in cued)})")


def _cue_led(traj: Trajectory) -> tuple[bool, bool] | None:
    """For an episode whose last thought starts "word: ..." (``gold_path_cues``' form): (the word is the
    question's, the quote before "So the answer is" holds it); None for any other episode."""
    thoughts = [s.text for s in traj.steps if s.type == "thought"]
    m = re.match(r"([\w'-]+): (.*)", thoughts[-1]) if thoughts else None
    if m is None:
        return None
    word, quote = m.group(1).lower(), m.group(2).split(" So the answer is")[0].lower()
    question = {w.lower() for w in re.findall(r"[\w'-]+", traj.task.question)}
    return word in question, bool(re.search(rf"(?<!\w){re.escape(word)}(?!\w)", quote))


def main(a: str, b: str) -> None:
    first, second = _episodes(Path(a)), _episodes(Path(b))
    ids = [t for t in first if t in second and first[t].task.meta.get("evidence_known", True)]
    by_kind: dict[str, list[str]] = defaultdict(list)
    for t in ids:
        by_kind[first[t].task.meta.get("kind", "all")].append(t)
    for kind, group in [("all", ids), *sorted(by_kind.items())]:
        x = [correct_grounded(first[t]) for t in group]
        y = [correct_grounded(second[t]) for t in group]
        only_a = sum(p and not q for p, q in zip(x, y))
        only_b = sum(q and not p for p, q in zip(x, y))
        print(f"{kind}: n {len(group)}; {a}: {sum(x)} ({sum(x) / len(group):.3f}); {b}: {sum(y)} "
              f"({sum(y) / len(group):.3f}); b / c {only_a} / {only_b}; McNemar p {mcnemar_exact(only_a, only_b):.3g}")
    for name, eps in ((a, first), (b, second)):
        misses, picks = map(sum, zip(*(_recoveries(r) for r in eps.values())))
        print(f"{name}: searches that missed with a Similar: list {misses}, next search a listed page {picks}; "
              f"{_bridge_reading(eps)}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)  # its usage, exit 1
    run_script(lambda: main(*sys.argv[1:3]))
