"""BootstrapConfig: generate many episodes, judge them, keep the correct ones, export datasets."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from actune.agent.config import AgentConfig
from actune.config import StrictModel
from actune.envs.config import EnvConfig
from actune.tasks.config import TaskConfig


class BootstrapConfig(StrictModel):
    """Collect correct trajectories with a prompted model (the ReAct paper kept about 3,000)."""

    store: Path = Path("runs/store/trajectories.jsonl")
    """Append-only trajectory store (JSONL). Re-running resumes: finished episodes are never redone."""
    endpoints: list[str] = Field(default_factory=list)
    """OpenAI-compatible servers to use (``http://host:port/v1``). Empty: start one from ``serve``."""
    model: str | None = None
    """Model name in requests (default: the served model's name)."""
    concurrency: int = Field(32, ge=1)
    """Episodes in flight at once (vLLM batches their requests)."""
    attempts_per_task: int = Field(4, ge=1)
    """k: sampled attempts per task (each with its own seed)."""
    target_correct: int = Field(3000, ge=1)
    """Stop once this many correct trajectories are kept."""
    require_grounded: bool = True
    """Keep only answers whose supporting pages were actually retrieved (comparisons are coin flips
    otherwise; see the probe notes)."""
    max_failed_episodes: int = Field(20, ge=0)
    """Episodes that raise (a bug, a refused request; not a wrong answer) are logged and skipped, and a
    rerun retries them; more failures than this abort the run."""
    env: EnvConfig = Field(default_factory=EnvConfig)
    """The environment episodes run in."""
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    """The tasks to attempt (normally the train split)."""
    agent: AgentConfig = Field(default_factory=lambda: AgentConfig(temperature=0.4))
    """The agent loop settings (collection samples at T=0.4: the probe's best)."""
