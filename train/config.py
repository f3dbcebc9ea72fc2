"""TrainConfig: TRL SFT + PEFT LoRA on exported interleaved trajectories."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from actune.config import StrictModel


class LoraSettings(StrictModel):
    """PEFT LoRA settings."""

    r: int = Field(16, ge=1)
    """LoRA rank. vLLM serves adapters up to serve.max_lora_rank."""
    alpha: int = Field(32, ge=1)
    """LoRA scaling numerator (scale = alpha / r)."""
    dropout: float = Field(0.05, ge=0, lt=1)
    """Dropout on the LoRA branch."""
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    """Modules that get adapters: a list of names (q_proj, v_proj...) or all-linear."""


class TrainConfig(StrictModel):
    """Fine-tune a LoRA adapter on bootstrapped trajectories (the ReAct paper's §3.3 step)."""

    base_model: str = "smollm2-135m"
    """Model to adapt: a known name, a Hugging Face id or a local folder."""
    dataset: Path = Path("runs/dataset")
    """Exported training dataset folder (written by the bootstrap stage's export)."""
    output_dir: Path = Path("runs/adapter")
    """Where the adapter, its training metadata and its prompt spec are written."""
    wire_format: Literal["text", "chat"] = "text"
    """Train on the paper's text format or on chat turns; evaluation uses the same automatically."""
    mask_observations: bool = True
    """Compute loss only on model-written tokens (thoughts, actions, answers), never on observations."""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    """LoRA settings."""
    learning_rate: float = Field(2e-4, gt=0)
    """Peak learning rate (cosine schedule with warm-up)."""
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    """Fraction of steps spent warming up."""
    num_train_epochs: float = Field(2.0, gt=0)
    """Passes over the dataset (ignored when max_steps > 0)."""
    max_steps: int = -1
    """Stop after this many optimizer steps (-1: run the epochs)."""
    per_device_train_batch_size: int = Field(4, ge=1)
    """Sequences per device per step."""
    gradient_accumulation_steps: int = Field(1, ge=1)
    """Steps to accumulate before an optimizer update (effective batch = batch x accumulation x devices)."""
    max_length: int = Field(1024, ge=16)
    """Longest sequence in tokens; longer trajectories are truncated (and counted in the log)."""
    packing: bool = False
    """Pack several trajectories into one sequence (TRL packing)."""
    bf16: bool = True
    """Train in bfloat16 (about 15% faster and 3 GB lighter than fp32 on CPU for the 135M model)."""
    seed: int = 0
    """Seed for data order and LoRA init."""
    logging_steps: int = Field(1, ge=1)
    """Log the loss every N steps."""
    save_steps: int = Field(200, ge=1)
    """Checkpoint every N steps (training resumes from the last checkpoint)."""
    accelerate_config: Path | None = None
    """An accelerate config file for multi-GPU runs (launch with accelerate launch)."""
