"""EvalConfig: the same agent loop over base and tuned models, scored side by side."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from actune.agent.config import AgentConfig
from actune.config import StrictModel
from actune.envs.config import EnvConfig
from actune.tasks.config import TaskConfig


class EvalModel(StrictModel):
    """One system under evaluation."""

    label: str
    """Name in the report (``prompted``, ``finetuned``...)."""
    model: str = "smollm2-135m"
    """Base model (known name, Hugging Face id or folder)."""
    adapter: Path | None = None
    """LoRA adapter folder; its saved prompt spec (method, regime, wire format) is used automatically."""


class EvalConfig(StrictModel):
    """Evaluate prompted and fine-tuned models in exactly the loop that produced the training data."""

    out_dir: Path = Path("runs/eval")
    """Where per-model trajectories, the report (Markdown + JSON) and plots go."""
    models: list[EvalModel] = Field(
        default_factory=lambda: [
            EvalModel(label="prompted"),
            EvalModel(label="finetuned", adapter=Path("runs/adapter")),
        ]
    )
    """Systems to compare."""
    endpoints: list[str] = Field(default_factory=list)
    """OpenAI-compatible servers to use. Empty: start one from ``serve`` with the adapters loaded."""
    concurrency: int = Field(16, ge=1)
    """Episodes in flight at once."""
    attempts: int = Field(1, ge=1)
    """Attempts per task (greedy decoding makes 1 enough; more for sampled pass@k)."""
    confidence: float = Field(0.95, gt=0, lt=1)
    """Confidence level of the bootstrap intervals."""
    bootstrap_samples: int = Field(1000, ge=100)
    """Resamples for confidence intervals and paired tests."""
    env: EnvConfig = Field(default_factory=EnvConfig)
    """The environment."""
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    """The tasks (normally the dev or test split)."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    """Agent settings for prompted models (greedy, as in the paper)."""
