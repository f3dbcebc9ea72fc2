"""ALFWorld game files: finding them under a folder, the task each one is, its stored walkthrough.

Task loading reads games without playing them, so this needs neither TextWorld nor the environment
(:mod:`actune.envs.alfworld_env` plays them).
"""

from __future__ import annotations

import json
from pathlib import Path

from actune.records.task_record import Task

__all__ = ["find_games", "game_task", "load_games", "walkthrough", "TASK_TYPES", "GAME_FILE"]

GAME_FILE = "game.tw-pddl"

#: ALFWorld's six task types (directory-name prefix) -> ReAct's short name (its prompt keys use it).
TASK_TYPES = {
    "pick_and_place_simple": "put",
    "look_at_obj_in_light": "examine",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "puttwo",
}

_GOALS = {
    "put": "put a {obj} in/on the {recep}",
    "examine": "look at the {obj} under the {recep}",
    "clean": "clean a {obj} and put it in/on the {recep}",
    "heat": "heat a {obj} and put it in/on the {recep}",
    "cool": "cool a {obj} and put it in/on the {recep}",
    "puttwo": "put two {obj}s in/on the {recep}",
}


def find_games(folder: str | Path) -> list[Path]:
    """Every ``game.tw-pddl`` under ``folder``, in path order."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: ALFWorld games folder not found")
    return sorted(root.rglob(GAME_FILE))


def game_task(game_file: str | Path, root: str | Path | None = None, split: str = "test") -> Task:
    """The task of one game: id from its path, a readable goal from its folder name
    (``pick_and_place_simple-Book-None-Sofa-229`` -> "put a Book in/on the Sofa"); the game's own
    goal text comes with the first observation."""
    path = Path(game_file)
    trial = path.parent
    game_dir = trial.parent.name
    parts = game_dir.split("-")
    task_type = TASK_TYPES.get(parts[0], parts[0])
    obj = parts[1] if len(parts) > 1 else "object"
    recep = parts[3] if len(parts) > 3 else "receptacle"
    goal = _GOALS.get(task_type, "solve the task").format(obj=obj, recep=recep)
    rel = path.relative_to(root).parent.as_posix() if root is not None else f"{game_dir}/{trial.name}"
    return Task(id=rel, question=goal, answer="", env="alfworld", split=split,
                meta={"gamefile": str(path.resolve()), "task_type": task_type, "game": game_dir, "metric": "won"})


def load_games(folder: str | Path, split: str = "test", limit: int | None = None) -> list[Task]:
    """Tasks for every game under ``folder`` (first ``limit`` in path order)."""
    games = find_games(folder)
    if not games:
        raise FileNotFoundError(f"{folder}: no {GAME_FILE} files found")
    return [game_task(g, folder, split) for g in games[:limit]]


def walkthrough(game_file: str | Path) -> list[str]:
    """The stored expert command list of a game (for tests and sanity checks, never for agents)."""
    return list(json.loads(Path(game_file).read_text())["walkthrough"])
