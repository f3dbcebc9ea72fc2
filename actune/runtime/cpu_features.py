"""What the CPU can compute natively, read from ``/proc/cpuinfo`` (Linux; elsewhere nothing is known).

    if native_bf16(): ...        # bfloat16 matmuls in hardware (AVX512-BF16 or AMX-BF16)
    log(describe_cpu())          # "AMD EPYC 9654 (2 cores; avx2 fma avx512f avx512_bf16; bf16: native)"

The training and serving dtypes are chosen from this: on a CPU without bfloat16 instructions torch
emulates bf16 matmuls, and LoRA training of SmolLM2-135M ran about 10x faster in float32 than in
bfloat16 on an AVX2-only CPU; with AVX512-BF16 or AMX, bf16 is the faster and lighter one.
A core module: it imports no stage.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CPUINFO", "BF16_FLAGS", "cpu_flags", "cpu_model_name", "native_bf16", "describe_cpu"]

CPUINFO = Path("/proc/cpuinfo")

BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""Flags that mean bfloat16 dot products in hardware (x86: AVX512-BF16 from Cooper Lake/Zen 4, AMX from
Sapphire Rapids)."""

# The flags that matter for matmul speed, in the order describe_cpu lists them.
_RELEVANT = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
             "amx_int8", "asimd", "sve", "bf16")


def _read(path: Path | None) -> str:
    try:
        return (CPUINFO if path is None else path).read_text(errors="replace")
    except OSError:
        return ""


def cpu_flags(path: Path | None = None) -> set[str]:
    """The feature flags of the first CPU in ``path`` (default :data:`CPUINFO`; x86 ``flags``, Arm
    ``Features``); an empty set where the file is missing or unreadable (macOS, Windows, some containers)."""
    for line in _read(path).splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def cpu_model_name(path: Path | None = None) -> str:
    """The CPU's model name (x86 ``model name``; Arm ``Hardware``, ``Processor`` or ``CPU part``), or
    ``unknown CPU``."""
    fields: dict[str, str] = {}
    for line in _read(path).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    for key in ("model name", "Hardware", "Processor"):
        if fields.get(key):
            return fields[key]
    if fields.get("CPU part"):
        return f"CPU part {fields['CPU part']}"
    return "unknown CPU"


def native_bf16() -> bool:
    """True when this CPU has bfloat16 instructions (``avx512_bf16`` or ``amx_bf16`` among its flags)."""
    return _has_bf16(cpu_flags())


def _has_bf16(flags: set[str]) -> bool:
    return any(f in flags for f in BF16_FLAGS)


def describe_cpu(path: Path | None = None) -> str:
    """One line for logs and bench tables: model name, usable cores, the matmul-relevant flags and
    whether bf16 is native."""
    flags = cpu_flags(path)
    shown = " ".join(f for f in _RELEVANT if f in flags) or "no flags known"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    bf16 = "native" if _has_bf16(flags) else "not native"
    return f"{cpu_model_name(path)} ({cores} cores; {shown}; bf16: {bf16})"
