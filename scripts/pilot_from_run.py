"""Reuse a finished quickstart run's round-1 models for a pilot with other settings (an eval split, after_sft
objectives), instead of bootstrapping and training round 1 again:

    .venv/bin/python scripts/pilot_from_run.py runs/full-families-seed22-r1 runs/pilot seed=22 rounds=1 \\
        "methods=[react]" eval_split=dev "after_sft=[dpo,grpo]"
    actune quickstart --preset full --out runs/pilot seed=22 rounds=1 "methods=[react]" eval_split=dev ...

``--preset=NAME`` (default ``full``) names the run's preset (``--preset=hotpotqa``: its questions and gold paths
are copied as the world is). It copies the world and the named methods' folders, and writes a state whose config is
the pilot's (the same overrides, in the same order, as the quickstart command that follows) with only round 1's
world, bootstrap, export and training stages done: everything after them (exploration, DPO, GRPO, eval, report)
runs. Only valid where the pilot's settings do not change what round 1 did (the preset, seed, world and round-1
recipe). Where the pilot asks the source's eval questions (the same ``eval_split``), the prompted and round-1
models' eval episodes are copied too, so eval resumes them and plays only the new models.

``--retrain`` keeps only the world and round 1's episodes: export and training run again (another wire format,
say, from the same kept episodes), and the prompted model's test episodes are copied, so eval resumes them:

    .venv/bin/python scripts/pilot_from_run.py --retrain runs/full-families-seed23-r1 runs/tools-seed23 seed=23 \
        rounds=1 "methods=[react]" train.wire_format=tools
"""

import json
import shutil
import sys
from pathlib import Path

from actune.config import public_dump
from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.state import comparable
from actune.runtime.stop_signals import run_script


def moved_model(store: Path, src: Path, dst: Path) -> None:
    """A copied eval store whose records name the model by its folder under ``src`` names the copy under ``dst``
    (the same weights, copied): else eval refuses to add the pilot's episodes to a store of another model."""
    text = before = store.read_text()
    for a, b in ((src.resolve(), dst.resolve()), (src, dst)):  # a run names its models as its --out was written
        old, new = json.dumps(str(a))[1:-1], json.dumps(str(b))[1:-1]
        text = text.replace(f'"{old}/', f'"{new}/')
    if text == before:
        print(f"{store}: no model path under {src} to rename (was the run's --out written another way?)")
    store.write_text(text)


def main(src: Path, dst: Path, overrides: list[str], retrain: bool = False, preset: str = "full") -> None:
    if dst.resolve() == src.resolve() or (dst.exists() and not (dst / "quickstart-state.json").is_file()):
        sys.exit(f"{dst}: the pilot's folder must be new or an earlier pilot (with quickstart-state.json), "
                 f"never the source run {src}")
    cfg = load_quickstart(preset, overrides, hardware=hardware_kind())
    state = json.loads((src / "quickstart-state.json").read_text())
    # the models round 1 left unchanged keep their eval episodes when the pilot asks the same questions
    same_questions = state["config"].get("eval_split", "test") == cfg.eval_split
    reused = ["prompted"] if retrain else ["prompted", "tuned-r1"] if same_questions else []
    if not dst.exists():
        dst.mkdir(parents=True)
        for part in (p for p in ("world", "tasks", "gold_paths", "imports", *cfg.methods) if (src / p).exists()):
            shutil.copytree(src / part, dst / part, symlinks=True,
                            ignore=shutil.ignore_patterns("adapter", "dataset") if retrain else None)
        for method, model in ((m, r) for m in cfg.methods for r in reused):
            shutil.copytree(src / "eval" / method / model, dst / "eval" / method / model)
            moved_model(dst / "eval" / method / model / "trajectories.jsonl", src, dst)
    state["config"] = comparable(public_dump(cfg))
    stages = () if retrain else ("export", "train")
    keep = {"world", "tasks", "gold paths", "bootstrap round 1",
            *(f"{s} {m} round 1" for m in cfg.methods for s in stages)}
    state["done"] = {k: v for k, v in state["done"].items() if k in keep}
    (dst / "quickstart-state.json").write_text(json.dumps(state, indent=2) + "\n")
    print(f"{dst}: stages kept done: {', '.join(state['done'])}")


if __name__ == "__main__":
    args = sys.argv[1:]
    retrain = "--retrain" in args
    preset = next((a.split("=", 1)[1] for a in args if a.startswith("--preset=")), "full")
    args = [a for a in args if a != "--retrain" and not a.startswith("--preset=")]
    if len(args) < 2 or "--help" in args or "-h" in args:
        sys.exit(__doc__)  # its usage, exit 1
    run_script(lambda: main(Path(args[0]), Path(args[1]), args[2:], retrain, preset))
