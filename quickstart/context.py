"""What every stage of a quickstart run is handed: the config, the layout, how to log, and the stage sections
as this run fills them (its task files, its corpus, its seed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from actune.agent.config import AgentConfig
from actune.envs.config import EnvConfig
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.layout import Layout, served_tuned_model
from actune.records.atomic_write import atomic_write_text
from actune.tasks.config import TaskConfig

__all__ = ["RunContext"]


@dataclass(frozen=True)
class RunContext:
    cfg: QuickstartConfig
    layout: Layout
    show_progress: bool
    log: Callable[[str], None]

    def tasks(self, split: str, **update: object) -> TaskConfig:
        """The task section that reads this run's ``split`` questions."""
        return TaskConfig(format="custom", path=str(self.layout.tasks_dir / f"{split}.jsonl"), split=split, **update)

    def write_train_tasks(self, path: Path, keep: Callable[[str], bool]) -> int:
        """Write the training tasks whose id ``keep`` accepts to ``path`` (atomically, in their order); how many:
        a round's unsolved tasks, GRPO's tasks solved sometimes."""
        train = (self.layout.tasks_dir / "train.jsonl").read_text(encoding="utf-8")
        lines = [line for line in train.splitlines() if line.strip() and keep(json.loads(line)["id"])]
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, "".join(line + "\n" for line in lines))
        return len(lines)

    def env(self, env: EnvConfig) -> EnvConfig:
        """``env`` on this run's corpus, with the environment its task source plays in."""
        name = "fever" if self.cfg.source == "fever" else "wiki"
        return env.model_copy(update={"name": name, "corpus": str(self.layout.tasks_dir / "corpus.jsonl")})

    def agent(self, agent: AgentConfig, method: str, **update: object) -> AgentConfig:
        """``agent`` running ``method`` with this run's seed."""
        return agent.model_copy(update={"method": method, "seed": self.cfg.seed, **update})

    def tuned_model(self, method: str, r: int) -> tuple[str, Path | None]:
        """(model to serve, adapter or None) of round ``r``'s tuned model (:func:`served_tuned_model`)."""
        return served_tuned_model(self.layout.adapter(method, r), self.cfg.serve.model)
