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
    """Exported training dataset folder (``actune export`` writes it from ``bootstrap.store``)."""
    output_dir: Path = Path("runs/adapter")
    """Where the adapter, ``training_meta.json`` and ``actune_prompt.json`` are written (replaced whole);
    checkpoints go to ``<output_dir>.checkpoints`` while training runs."""
    wire_format: Literal["text", "chat"] = "text"
    """Train on the paper's text format or on chat turns (the dataset must be exported in the same);
    evaluation uses the same automatically (it reads the adapter's ``actune_prompt.json``)."""
    mask_observations: bool = True
    """Compute loss only on model-written tokens (thoughts, actions, answers; chat: assistant turns and
    their end-of-turn token), never on the prompt or observations. False: train on every token."""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    """LoRA settings."""
    learning_rate: float = Field(2e-4, gt=0)
    """Peak learning rate (cosine schedule with warm-up)."""
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    """Fraction of the optimizer steps spent warming up linearly."""
    num_train_epochs: float = Field(2.0, gt=0)
    """Passes over the dataset (ignored when max_steps > 0)."""
    max_steps: int = -1
    """Stop after this many optimizer steps (-1: run the epochs)."""
    per_device_train_batch_size: int = Field(4, ge=1)
    """Sequences per device per step."""
    gradient_accumulation_steps: int = Field(1, ge=1)
    """Steps to accumulate before an optimizer update (effective batch = batch x accumulation x devices)."""
    max_length: int = Field(1024, ge=16)
    """Longest sequence in tokens; longer trajectories keep their start (counted in the log and in
    training_meta.json); one left without a trained token is dropped."""
    packing: bool = False
    """Pack several trajectories into one sequence (TRL packing)."""
    bf16: bool = True
    """Train in bfloat16 (about 15% faster and 3 GB lighter than fp32 on CPU for the 135M model)."""
    seed: int = 0
    """Seed for data order and LoRA init."""
    logging_steps: int = Field(1, ge=1)
    """Log the loss every N steps."""
    save_steps: int = Field(200, ge=1)
    """Checkpoint every N steps (a rerun resumes from the last checkpoint)."""
