"""RunConfig: one file that composes every stage's config (what configs/*.yaml hold).

It lives in the CLI because only the commands compose stages: each stage's entry point takes its own
section (and the ``serve`` section where it starts servers), so no stage loads another's config."""

from __future__ import annotations

from pydantic import Field

from actune.bootstrap.config import BootstrapConfig
from actune.config import StrictModel
from actune.eval.config import EvalConfig
from actune.serve.config import ServeConfig
from actune.train.config import TrainConfig


class RunConfig(StrictModel):
    """A whole pipeline: serve -> bootstrap -> train -> eval. Each stage reads only its section."""

    name: str = "run"
    """Run name (used in run ids and report titles)."""
    serve: ServeConfig = Field(default_factory=ServeConfig)
    """How a server is started when a stage has no endpoints."""
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    """Trajectory collection."""
    train: TrainConfig = Field(default_factory=TrainConfig)
    """LoRA fine-tuning."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """Prompted vs fine-tuned evaluation."""


def qualify_section_overrides(overrides: list[str], section: str) -> list[str]:
    """Prefix ``section.`` to overrides whose first key is a field of that section and not of the run
    config, so a stage command accepts ``concurrency=4`` for ``bootstrap.concurrency=4``."""
    section_fields = RunConfig.model_fields[section].annotation.model_fields
    out = []
    for item in overrides:
        head = item.split("=", 1)[0].strip().split(".", 1)[0]
        if head not in RunConfig.model_fields and head in section_fields:
            item = f"{section}.{item.strip()}"
        out.append(item)
    return out
