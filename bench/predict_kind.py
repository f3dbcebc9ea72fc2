"""A quickstart run's stage times, predicted on another kind of hardware from what the run did.

    .venv/bin/python bench/predict_kind.py --run runs/full-fp32shape-seed9 --to cpu-fp32

A session that has only a CPU with native bf16 can still say what a run of the AVX2-only shape would take on
an AVX2-only CPU. The prediction uses the quickstart ETA's cost model and rates (``RATES``,
``episode_cost`` in :mod:`actune.quickstart.estimate`, timed on real machines of each kind: seed 6's whole
run on a real AVX2-only EPYC took 3 h 48 min against the ETA's 4 h 04 min) with the run's own counts instead
of the ETA's guesses: each serving stage is the episodes its stores hold (prompted or tuned, per method) at
the kind's episode rate plus its server starts (a bootstrap round's includes the eval episodes that ran on its
server, told by their run id), each training stage its own tokens x epochs
(``training_meta.json``) at the kind's whole-stage training rate. So the machine the run happened on does not
enter (two CPUs of one kind differ by up to 2x). Other stages (world, export, report: seconds) are kept as
measured. A prediction, printed as one: it is not a timing.

A run still going, or stopped part-way (a session's end), is read too: a stage stopped part-way is predicted
from the episodes its stores hold so far, beside the time it ran (both marked as part of the stage), so the
finished part of a run on the kind itself checks the prediction stage by stage.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from rank_sweep import load_run_config

from actune.quickstart.estimate import RATES, episode_cost, serving_seconds
from actune.quickstart.layout import STATE_FILE, Layout
from actune.runtime.stop_signals import run_script


def _episodes(store: Path) -> int:
    from actune.records.store import read_state

    return read_state(store).records if store.is_file() else 0


def _eval_episodes(layout: Layout, method: str, name: str) -> dict[int | None, dict[str, int]]:
    """``method``'s eval episodes per label, by who ran them: the bootstrap round ``r`` whose server they ran
    on (their run id is that round's, ``NAME-r<r>-<time>``), or None, the eval stage itself."""
    from actune.records.trajectory import read_trajectories

    by_round = re.compile(rf"^{re.escape(name)}-r(\d+)-\d{{8}}-\d{{6}}$")
    counts: dict[int | None, dict[str, int]] = {}
    for store in sorted(layout.eval_dir(method).glob("*/trajectories.jsonl")):
        for t in read_trajectories(store):
            m = by_round.match(t.run_id)
            who = counts.setdefault(int(m.group(1)) if m else None, {})
            who[store.parent.name] = who.get(store.parent.name, 0) + 1
    return counts


def predict(run: Path, target: str) -> list[dict[str, Any]]:
    """One row per finished stage, then one per stage stopped part-way (``part``: true): its name, measured
    seconds and predicted seconds on ``target``."""
    from actune.train.common import TRAINING_META_FILE

    cfg, layout, rate = load_run_config(run), Layout(run), RATES[target]
    state = json.loads((run / STATE_FILE).read_text(encoding="utf-8"))

    def units(episodes: dict[str, int], cost: str) -> float:
        return sum(n * episode_cost(cost, m) for m, n in episodes.items())

    evals = {m: _eval_episodes(layout, m, cfg.name) for m in cfg.methods}

    def eval_work(who: int | None, methods: list[str]) -> tuple[float, int, int, int]:
        """(work units, prompted and tuned episodes, server starts) of ``methods``' eval episodes that ``who``
        ran: the prompted model's generic and type-matched prompts share a server, each tuned model has its
        own (so it is with ``train.merge``, the presets' way; LoRA adapters would share the base's)."""
        work, prompted, tuned, starts = 0.0, 0, 0, 0
        for method in methods:
            counts = evals[method].get(who, {})
            p = sum(n for lab, n in counts.items() if lab.startswith("prompted"))
            t = sum(counts.values()) - p
            work += units({method: p}, "prompted") + units({method: t}, "tuned")
            prompted, tuned = prompted + p, tuned + t
            starts += int(p > 0) + sum(1 for lab, n in counts.items() if n and not lab.startswith("prompted"))
        return work, prompted, tuned, starts

    rows = []
    stages = [(name, done, False) for name, done in state["done"].items()]
    stages += [(name, done, True) for name, done in state.get("partial", {}).items()]
    for name, done, part in stages:
        measured, words = float(done["wall_s"]), name.split()
        if name.startswith("bootstrap round "):
            r = int(words[-1])
            episodes = {m: _episodes(layout.store(m, r)) for m in cfg.methods}
            cost = "bootstrap" if r == 1 else "tuned"
            # round 1: one server for every method's passes; later rounds: one per method's tuned model
            starts = 1 if r == 1 else len(cfg.methods)
            # the eval episodes of the model this round served ran on its server (no start of their own)
            work, prompted, tuned, _ = eval_work(r, cfg.methods)
            predicted = (serving_seconds(units(episodes, cost), target, cfg.bootstrap.concurrency)
                         + serving_seconds(work, target, cfg.eval.concurrency) + starts * rate["server_s"])
            how = ", ".join(f"{n} {m}" for m, n in episodes.items()) + f" {cost} episodes, {starts} start(s)"
            if prompted or tuned:
                how += f"; eval on its server: {prompted} prompted + {tuned} tuned episodes"
        elif name.startswith("eval "):
            # this stage's own episodes (a model not yet started has an empty store, and no start)
            work, prompted, tuned, starts = eval_work(None, [words[1]])
            predicted = serving_seconds(work, target, cfg.eval.concurrency) + starts * rate["server_s"]
            how = f"{prompted} prompted + {tuned} tuned episodes, {starts} starts"
        elif name.startswith("train ") and not part:
            meta_path = layout.adapter(words[1], int(words[-1])) / TRAINING_META_FILE
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            epochs = meta["config"]["num_train_epochs"]
            predicted = meta["tokens"] * epochs / rate["train_tok_s"]
            how = f"{meta['tokens']} tokens x {epochs:g} epochs"
        else:
            predicted, how = measured, "as measured"
        if part:
            how = f"stopped part-way; {how}"
        rows.append({"stage": name, "measured_s": measured, "predicted_s": predicted, "how": how, "part": part})
    return rows


def format_table(rows: list[dict[str, Any]], target: str) -> str:
    lines = [f"| stage | measured here, min | predicted on {target}, min | from |", "|---|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['stage']} | {r['measured_s'] / 60:.1f} | {r['predicted_s'] / 60:.1f} | {r['how']} |")
    measured, predicted = (sum(r[k] for r in rows) / 60 for k in ("measured_s", "predicted_s"))
    hours = f"{int(predicted // 60)}h{int(predicted % 60):02d}m"
    lines.append(f"| **total** | **{measured:.1f}** | **{predicted:.1f}** ({hours}) | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="a quickstart run folder")
    ap.add_argument("--to", dest="target", choices=sorted(RATES), default="cpu-fp32", help="the kind predicted")
    args = ap.parse_args(argv)
    print(format_table(predict(Path(args.run).resolve(), args.target), args.target))
    return 0


if __name__ == "__main__":
    run_script(main)
