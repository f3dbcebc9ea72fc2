"""RunConfig: one file that composes every stage's config (what configs/*.yaml hold).

It lives in the CLI because only the commands compose stages: each stage's entry point takes its own
section (and the ``serve`` section where it starts servers), so no stage loads another's config."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from actune.bootstrap.config import BootstrapConfig
from actune.config import RunName, StrictModel, fill_model, is_section, section_dict, split_override, with_default
from actune.eval.config import EvalConfig
from actune.serve.config import ServeConfig
from actune.train.config import TrainConfig, check_rank_fits


class RunConfig(StrictModel):
    """A whole pipeline: serve -> bootstrap -> train -> eval. Each stage reads only its section."""

    name: RunName = "run"
    """Run name (used in run ids and report titles)."""
    model: str | None = None
    """The model this run serves, tunes and evaluates, named once (known name, Hugging Face id or folder):
    it fills ``serve.model``, ``train.base_model`` and each ``eval.models[i].model`` that the file does not
    set itself. Set those to differ from it (a larger teacher served for bootstrap, say). None: each
    section's own default."""
    serve: ServeConfig = Field(default_factory=ServeConfig)
    """How a server is started when a stage has no endpoints."""
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    """Trajectory collection."""
    train: TrainConfig = Field(default_factory=TrainConfig)
    """LoRA fine-tuning."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """Prompted vs fine-tuned evaluation."""

    @model_validator(mode="before")
    @classmethod
    def _fill_model(cls, data: Any) -> Any:
        data = fill_model(data, {"serve": "model", "train": "base_model"})
        if not isinstance(data, dict) or data.get("model") is None or not is_section(data.get("eval")):
            return data
        ev = section_dict(data.get("eval"))
        models = ev.get("models", EvalConfig.model_fields["models"].default_factory())
        if isinstance(models, list):  # else validation names eval.models
            ev["models"] = [with_default(m, "model", data["model"]) if is_section(m) else m for m in models]
        data["eval"] = ev
        return data

    @model_validator(mode="after")
    def _rank_fits_the_server(self) -> RunConfig:
        # found when the config is read, not at eval's server start after the whole training (issue #49)
        check_rank_fits(self.train, self.serve.max_lora_rank)
        return self


def qualify_section_overrides(overrides: list[str], section: str) -> list[str]:
    """Prefix ``section.`` to overrides whose first key is a field of that section and not of the run
    config, so a stage command accepts ``concurrency=4`` for ``bootstrap.concurrency=4``."""
    section_fields = RunConfig.model_fields[section].annotation.model_fields
    out = []
    for item in overrides:
        head = split_override(item)[0].split(".", 1)[0]
        if head not in RunConfig.model_fields and head in section_fields:
            item = f"{section}.{item.strip()}"
        out.append(item)
    return out
