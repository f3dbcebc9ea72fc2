"""PromptSpec: the prompt regime and wire format an adapter was trained with, saved beside it.

A fine-tuned model must be run in the loop format it learnt. Training writes ``actune_prompt.json``
into the adapter folder; eval loads it and configures the loop from it, so nobody has to remember
which method, regime and wire format go with which adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from actune.agent.config import AgentConfig, Method, Wire
from actune.config import ConfigError, StrictModel
from actune.records.atomic_write import atomic_write_text
from actune.records.jsonl import read_json

__all__ = ["PROMPT_SPEC_FILE", "PromptSpec", "save_prompt_spec", "load_prompt_spec", "find_prompt_spec"]

PROMPT_SPEC_FILE = "actune_prompt.json"


class PromptSpec(StrictModel):
    """How a model expects to be prompted."""

    format_version: int = 1
    """Layout version of this file."""
    method: Method = "react"
    """Method whose step format the model was trained on."""
    regime: Literal["few_shot", "zero_shot"] = "zero_shot"
    """Prompt regime the model was trained with (fine-tuned models: zero_shot)."""
    wire: Wire = "text"
    """Wire format the training data was rendered in."""
    chat_prefill: bool = True
    """chat: whether assistant turns were opened with the step label."""
    exemplar_set: str | None = None
    """Exemplar set name or path (few-shot regime only)."""
    exemplar_kinds: list[str] | None = None
    """Exemplar kinds used (few-shot regime only)."""
    num_exemplars: int | None = None
    """Number of exemplars used (few-shot regime only)."""

    @classmethod
    def from_agent_config(cls, cfg: AgentConfig) -> "PromptSpec":
        return cls(method=cfg.method, regime=cfg.regime, wire=cfg.wire, chat_prefill=cfg.chat_prefill,
                   exemplar_set=cfg.exemplar_set, exemplar_kinds=cfg.exemplar_kinds,
                   num_exemplars=cfg.num_exemplars)

    def as_overrides(self) -> list[str]:
        """The spec as ``key=value`` AgentConfig overrides (JSON values are valid YAML scalars), so a
        caller can place it between a config file and the user's own overrides."""
        return [f"{k}={json.dumps(v)}" for k, v in self.model_dump(exclude={"format_version"}).items()]

    def apply(self, cfg: AgentConfig) -> AgentConfig:
        """A copy of ``cfg`` with this spec's prompt settings (budgets and sampling kept)."""
        update = self.model_dump(exclude={"format_version"})
        return cfg.model_copy(update=update)


def save_prompt_spec(spec: PromptSpec, folder_or_file: str | Path) -> Path:
    """Write the spec atomically; a folder gets ``actune_prompt.json`` inside it."""
    p = Path(folder_or_file)
    if p.is_dir() or not p.suffix:
        p.mkdir(parents=True, exist_ok=True)
        p = p / PROMPT_SPEC_FILE
    atomic_write_text(p, spec.model_dump_json(indent=2) + "\n")
    return p


def find_prompt_spec(folder: str | Path) -> Path | None:
    p = Path(folder) / PROMPT_SPEC_FILE
    return p if p.is_file() else None


def load_prompt_spec(folder_or_file: str | Path) -> PromptSpec:
    """Read a spec from a file or from an adapter folder; errors name the file and key."""
    p = Path(folder_or_file)
    if p.is_dir():
        p = p / PROMPT_SPEC_FILE
    data = read_json(p, ConfigError, "prompt spec")
    try:
        return PromptSpec.model_validate(data)
    except ValidationError as e:
        bad = "; ".join(f"{'.'.join(map(str, x['loc'])) or '(top level)'}: {x['msg']}" for x in e.errors())
        raise ConfigError(f"{p}: invalid prompt spec: {bad}") from None
