"""EvalConfig: the same agent loop over base and tuned models, scored side by side."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator

from actune.agent.config import AgentConfig
from actune.config import StrictModel
from actune.envs.config import EnvConfig
from actune.tasks.config import TaskConfig

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class EvalModel(StrictModel):
    """One system under evaluation."""

    label: str
    """Name in the report (``prompted``, ``finetuned``...); also the folder ``out_dir/<label>/`` holding its
    trajectories, so letters, digits, ``.``, ``_`` and ``-`` only."""
    model: str = "smollm2-135m"
    """Base model (known name, Hugging Face id or folder). Every model of one eval shares one server, so all
    must name the same base model."""
    adapter: Path | None = None
    """LoRA adapter folder; its saved prompt spec (``actune_prompt.json``: method, regime, wire format) is
    applied to ``agent`` automatically, and requests go to the adapter's served name."""

    @field_validator("label")
    @classmethod
    def _label_is_a_folder_name(cls, v: str) -> str:
        if not _LABEL.match(v):
            raise ValueError(f"label {v!r} must be letters, digits, '.', '_' or '-' (it names a folder)")
        return v


class EvalConfig(StrictModel):
    """Evaluate prompted and fine-tuned models in exactly the loop that produced the training data."""

    out_dir: Path = Path("runs/eval")
    """Where per-model trajectories (``<label>/trajectories.jsonl``, resumable), the report
    (``report.md``, ``report.json``) and the plot (``scores.png``) go."""
    models: list[EvalModel] = Field(
        default_factory=lambda: [
            EvalModel(label="prompted"),
            EvalModel(label="finetuned", adapter=Path("runs/adapter")),
        ]
    )
    """Systems to compare. The first is the reference of the paired tests."""
    endpoints: list[str] = Field(default_factory=list)
    """OpenAI-compatible servers to use (started with LoRA enabled when a model has an adapter; adapters
    not yet served are loaded at run time). Empty: start one from ``serve`` with the adapters loaded."""
    served_model: str | None = None
    """Name of the base model in requests (default: ``serve.served_model_name``, else the models' ``model``)."""
    concurrency: int = Field(16, ge=1)
    """Episodes in flight at once."""
    attempts: int = Field(1, ge=1)
    """Attempts per task (greedy decoding makes 1 enough; more for sampled pass@1 estimates). Scores average
    a task's attempts first, so the intervals resample tasks."""
    confidence: float = Field(0.95, gt=0, lt=1)
    """Confidence level of the bootstrap intervals."""
    bootstrap_samples: int = Field(1000, ge=100)
    """Resamples for confidence intervals and paired tests."""
    seed: int = 0
    """Seed of the bootstrap resampling (the same seed gives the same intervals)."""
    max_failed_episodes: int = Field(20, ge=0)
    """Episodes that raise (a bug, a refused request; not a wrong answer) are logged and skipped, and a rerun
    retries them; more failures than this (per model) abort the run."""
    env: EnvConfig = Field(default_factory=EnvConfig)
    """The environment."""
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    """The tasks (normally the dev or test split)."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    """Agent settings for prompted models (greedy, as in the paper); adapters use these with their prompt
    spec applied."""

    @field_validator("models")
    @classmethod
    def _labels_unique(cls, v: list[EvalModel]) -> list[EvalModel]:
        if not v:
            raise ValueError("name at least one model")
        seen: set[str] = set()
        for m in v:
            if m.label in seen:
                raise ValueError(f"label {m.label!r} appears twice; each model needs its own label")
            seen.add(m.label)
        return v
