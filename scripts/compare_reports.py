"""Two quickstart reports (report.json) compared figure by figure, timings aside: every score, count, interval and
test of one against the other's (issue #34's check that a refactor changed no result for the same seed).

    .venv/bin/python scripts/compare_reports.py runs/before/report.json runs/after/report.json

Prints each figure that differs, each key only one report has, and a count of the figures equal; exit 1 when a
figure both reports have differs. Wall times, timestamps, rates, provenance and the ETA are timings, not results,
and are left out (counted). Beneath the reports, each run folder's episodes (every ``trajectories.jsonl`` but the
world's) are compared step by step (text, prediction, verdict, tokens) and its adapters by SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from actune.runtime.stop_signals import run_script

# keys whose values are timings or where a run ran, not what it found: by their last part, or anywhere under these
TIMING_KEYS = {"wall_s", "finished", "started", "elapsed_s", "minutes", "tok_s", "gen_tok_s", "eta_s", "command",
               "reproduce"}
TIMING_SECTIONS = (".provenance", ".estimate")


def is_timing(key: str) -> bool:
    return key.rsplit(".", 1)[-1] in TIMING_KEYS or key.startswith(TIMING_SECTIONS)


def flatten(x: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a JSON value under a dotted key (list items by index)."""
    if isinstance(x, dict):
        return {k: v for key, val in x.items() for k, v in flatten(val, f"{prefix}.{key}").items()}
    if isinstance(x, list):
        return {k: v for i, val in enumerate(x) for k, v in flatten(val, f"{prefix}[{i}]").items()}
    return {prefix: x}


def compare(a: dict[str, Any], b: dict[str, Any]) -> tuple[list[str], list[str], int, int]:
    """(figures that differ, keys only one side has, figures equal, timings left out)."""
    fa, fb = flatten(a), flatten(b)
    timing = {k for k in fa.keys() | fb.keys() if is_timing(k)}
    differ = [f"{k}: {fa[k]!r} -> {fb[k]!r}" for k in sorted(fa.keys() & fb.keys() - timing) if fa[k] != fb[k]]
    only = [f"{k} only in {'the first' if k in fa else 'the second'}" for k in sorted((fa.keys() ^ fb.keys()) - timing)]
    equal = len(fa.keys() & fb.keys() - timing) - len(differ)
    return differ, only, equal, len(timing)


def _episode(rec: dict[str, Any]) -> tuple:
    """What an episode did (its model's name aside: a run's folder is in it)."""
    v = rec["info"].get("verdict", {})
    return ([(s["type"], s["text"], s.get("tokens")) for s in rec["steps"]], rec.get("prediction"), rec.get("correct"),
            v.get("correct"), v.get("grounded"), v.get("kept"), json.dumps(rec.get("usage"), sort_keys=True))


def _episodes(path: Path) -> dict[tuple, tuple]:
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(r["task"]["id"], r.get("method"), r.get("attempt")): _episode(r) for r in recs}


def compare_runs(a: Path, b: Path) -> list[str]:
    """Lines: each run folder's episodes equal or not, and each adapter's SHA-256 equal or not."""
    lines, total, same = [], 0, 0
    for fa in sorted(a.rglob("trajectories.jsonl")):
        rel = fa.relative_to(a)
        if "world" in rel.parts:
            continue
        ea, eb = _episodes(fa), _episodes(b / rel) if (b / rel).exists() else {}
        total += len(ea)
        same += sum(eb.get(k) == v for k, v in ea.items())
    lines.append(f"episodes equal step by step: {same} of {total}")
    for fa in sorted(a.rglob("adapter_model.safetensors")):
        fb = b / fa.relative_to(a)
        equal = fb.exists() and hashlib.sha256(fa.read_bytes()).digest() == hashlib.sha256(fb.read_bytes()).digest()
        lines.append(f"{fa.relative_to(a)}: SHA-256 {'equal' if equal else 'DIFFERS'}")
    return lines


def main(first: Path, second: Path) -> int:
    differ, only, equal, timing = compare(json.loads(first.read_text()), json.loads(second.read_text()))
    for line in differ:
        print("differs:", line)
    for line in only:
        print("one side:", line)
    print(f"{equal} figures equal, {len(differ)} differ, {len(only)} keys on one side only, "
          f"{timing} timings left out")
    runs = compare_runs(first.parent, second.parent)
    print("\n".join(runs))
    return 1 if differ or any("DIFFERS" in line for line in runs) else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    run_script(lambda: main(Path(sys.argv[1]), Path(sys.argv[2])))
