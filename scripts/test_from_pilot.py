"""Read the test split once with a finished dev pilot's models: the recipe was chosen on dev, so its trained rounds
are the models to test, and training them again would only cost time (and, on a CPU, move the numbers with
vLLM's batching, not with the recipe).

    .venv/bin/python scripts/test_from_pilot.py hotpotqa runs/pilot runs/test seed=1 hotpotqa.split_seed=7103 \\
        rounds=2 eval_split=test
    actune quickstart --preset hotpotqa --out runs/test --seed 1 hotpotqa.split_seed=7103 rounds=2 eval_split=test

It copies the pilot's questions, gold paths and method folders (episodes, datasets, adapters) and writes a state
whose config is the test run's (the same overrides, in the same order, as the quickstart command that follows)
with every stage done but eval and the report: the quickstart then evaluates the prompted model and every round
on the test questions and writes the report. The overrides may differ from the pilot's in ``eval_split`` only; any
other difference is refused, since the models would then not be what that config trains.
"""

import json
import shutil
import sys
from pathlib import Path

from actune.config import public_dump
from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.state import comparable, stored_config_as_current
from actune.runtime.stop_signals import run_script


def main(preset: str, src: Path, dst: Path, overrides: list[str]) -> None:
    cfg = load_quickstart(preset, overrides, hardware=hardware_kind())
    state = json.loads((src / "quickstart-state.json").read_text())
    config = comparable(public_dump(cfg))
    stored = stored_config_as_current(state["config"])
    differs = sorted(k for k in set(config) | set(stored) if config.get(k) != stored.get(k))
    if set(differs) - {"eval_split"}:
        sys.exit(f"{src} was run with other settings than these overrides (differs in: {', '.join(differs)})")
    if dst.exists():
        sys.exit(f"{dst} exists: choose a new folder (this script never writes over a run)")
    dst.mkdir(parents=True)
    for part in ("tasks", "gold_paths", "imports", *cfg.methods):
        if (src / part).exists():
            shutil.copytree(src / part, dst / part, symlinks=True)
    state["config"] = config
    state["done"] = {k: v for k, v in state["done"].items() if not k.startswith(("eval ", "report"))}
    (dst / "quickstart-state.json").write_text(json.dumps(state, indent=2) + "\n")
    print(f"{dst}: stages kept done: {', '.join(state['done'])}")


if __name__ == "__main__":
    if len(sys.argv) < 4 or "--help" in sys.argv or "-h" in sys.argv:
        sys.exit(__doc__)  # its usage, exit 1
    run_script(lambda: main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:]))
