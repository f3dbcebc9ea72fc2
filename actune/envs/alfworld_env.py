"""ALFWorld: household TextWorld games (ReAct's and ReflAct's decision-making benchmark).

Each task is one ``game.tw-pddl`` file (:mod:`actune.tasks.alfworld_games` finds them), played with the
``alfworld`` package's PDDL grammar through TextWorld (extra ``alfworld``: ``pip install 'actune[alfworld]'``;
see shared/notes/alfworld-offline.md).
Actions are the game's own commands (``go to desk 1``, ``take mug 1 from desk 1``, ``put mug 1 in/on
shelf 2``...), written after ``>`` in ReAct's format and parsed as verb + rest; ReAct's sparse
reasoning is the action ``think: ...``, which the game never sees and which returns ``OK.``.
The episode ends when the game is won (``info["won"]``) or its step limit is reached; there is no
finish action. A command the game does not know returns its own ``Nothing happens.``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.envs.observation import clip_observation
from actune.records.task_record import Task

__all__ = ["AlfWorldEnv", "from_config"]

#: The verbs of ALFWorld's command grammar, plus ReAct's ``think``.
VERBS = ("go", "take", "put", "move", "open", "close", "toggle", "clean", "heat", "cool", "use", "slice",
         "examine", "look", "inventory", "help", "think")


_PUT = re.compile(r"^put (.+?) (?:in/on|into|onto|in|on) (.+)$")
_ARRIVE = re.compile(r"^You arrive at [^.]*\.\s+(?=\S)")
_MOVED = re.compile(r"^You move the (.+?) to the (.+?)\.$")


def _require_textworld() -> None:
    try:
        import alfworld  # noqa: F401
        import textworld  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"the alfworld environment needs TextWorld and ALFWorld ({e.name} is missing): in an actune "
            "checkout run `bash scripts/install_alfworld.sh` (it names any failed step; log: "
            ".venv/alfworld-install.log); elsewhere, with the venv activated (fast-downward's build runs the "
            "`python` on PATH): pip install 'textworld[pddl]>=1.6.1' && pip install --no-deps alfworld==0.4.2"
        ) from None


class AlfWorldEnv(Environment):
    """One ALFWorld game at a time; ``reset(task)`` loads ``task.meta["gamefile"]``."""

    name = "alfworld"
    action_names = VERBS
    finish_action = None

    def __init__(self, max_episode_steps: int = 50, max_observation_chars: int | None = 2000) -> None:
        _require_textworld()
        self.max_episode_steps = max_episode_steps
        self.max_observation_chars = max_observation_chars
        self._env: Any = None
        self.won = False
        self.done = True
        self.admissible: list[str] = []

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def reset(self, task: Task, seed: int | None = None) -> str:
        import textworld
        import textworld.gym
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        game_file = task.meta.get("gamefile") if isinstance(task.meta, dict) else None
        if not game_file or not Path(game_file).is_file():
            raise FileNotFoundError(f"task {task.id}: meta['gamefile'] {game_file!r} is not a game file")
        self.close()
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        env_id = textworld.gym.register_game(str(game_file), infos, max_episode_steps=self.max_episode_steps,
                                             wrappers=[AlfredDemangler(), AlfredInfos])
        self._env = textworld.gym.make(env_id)
        obs, info = self._env.reset()
        self.task, self.won, self.done = task, False, False
        self.admissible = list(info.get("admissible_commands") or [])
        # Drop the banner before the room description, as the ReAct code does.
        return "\n".join(obs.split("\n\n")[1:]).strip() if "\n\n" in obs else obs.strip()

    def describe_actions(self) -> str:
        return (
            "go to {recep}, open {recep}, close {recep}, take {obj} from {recep}, put {obj} in/on {recep}, "
            "clean {obj} with {recep}, heat {obj} with {recep}, cool {obj} with {recep}, use {lamp}, "
            "examine {obj or recep}, look, inventory.\n"
            "think: {reasoning} writes a thought; the game answers OK."
        )

    def _command(self, action: Action) -> str:
        command = " ".join(f"{action.name} {action.argument}".split()).lower()
        # ReAct's prompts (older ALFWorld) say "put X in/on Y"; alfworld 0.4's grammar says "move X to Y".
        m = _PUT.match(command)
        return f"move {m.group(1)} to {m.group(2)}" if m else command

    def step(self, action: Action) -> StepResult:
        if self._env is None:
            return StepResult("No game is loaded: reset(task) first.", done=True, info={"won": False})
        if self.done:
            return StepResult("The game is over.", done=True, info={"won": self.won})
        if action.name.lower().rstrip(":") == "think":
            return StepResult("OK.", info={"won": False, "admissible_commands": self.admissible})
        command = self._command(action)
        obs, _score, done, info = self._env.step(command)
        self.won = bool(info.get("won", False))
        self.done = bool(done) or self.won
        self.admissible = list(info.get("admissible_commands") or [])
        # "You arrive at desk 1. On the desk 1, ..." -> "On the desk 1, ..." (as the ReAct code did with
        # the older "You arrive at loc 12."), and "move" reads as ReAct's "put ... in/on".
        obs = _ARRIVE.sub("", obs.strip())
        obs = _MOVED.sub(r"You put the \1 in/on the \2.", obs)
        return StepResult(clip_observation(obs, self.max_observation_chars), done=self.done,
                          info={"won": self.won, "admissible_commands": self.admissible})


def from_config(cfg: EnvConfig) -> AlfWorldEnv:
    return AlfWorldEnv(max_episode_steps=cfg.max_episode_steps,
                       max_observation_chars=cfg.max_observation_chars)
