"""CPU flags, native bf16 and the one-line description, from hand-written /proc/cpuinfo excerpts."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.runtime import cpu_features
from actune.runtime.cpu_features import cpu_flags, cpu_model_name, describe_cpu, native_bf16

# First processor block of real machines, trimmed to the lines read (and one unrelated line).
ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14 96-Core Processor
flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq avx512_vnni avx512_bf16 avx512vbmi
processor\t: 1
model name\t: AMD EPYC 9R14 96-Core Processor
flags\t\t: fpu sse2
"""
SKYLAKE = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz
flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq avx512cd
"""
SAPPHIRE_RAPIDS = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: avx2 fma avx512f avx512_vnni amx_bf16 avx512_fp16 amx_tile amx_int8
"""
HASWELL = """processor\t: 0
model name\t: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
flags\t\t: fpu sse2 avx fma avx2
"""
GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes sve bf16 i8mm
CPU part\t: 0xd40
"""


def cpuinfo(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, bf16", [(ZEN4, True), (SAPPHIRE_RAPIDS, True), (SKYLAKE, False),
                                        (HASWELL, False), (GRAVITON3, False)],
                         ids=["zen4", "sapphire-rapids", "skylake", "haswell", "graviton3"])
def test_native_bf16_from_the_flags(tmp_path, monkeypatch, text, bf16):
    monkeypatch.setattr(cpu_features, "CPUINFO", cpuinfo(tmp_path, text))
    assert native_bf16() is bf16


def test_flags_come_from_the_first_processor(tmp_path):
    assert cpu_flags(cpuinfo(tmp_path, ZEN4)) == {"fpu", "sse2", "avx", "fma", "avx2", "avx512f", "avx512dq",
                                                  "avx512_vnni", "avx512_bf16", "avx512vbmi"}
    assert cpu_flags(cpuinfo(tmp_path, GRAVITON3)) == {"fp", "asimd", "evtstrm", "aes", "sve", "bf16", "i8mm"}


def test_unreadable_cpuinfo_means_nothing_known(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_features, "CPUINFO", tmp_path / "missing")
    assert cpu_flags() == set() and native_bf16() is False
    assert cpu_model_name() == "unknown CPU"
    assert cpu_flags(tmp_path) == set()  # a folder: unreadable as a file


def test_describe_cpu_names_the_model_and_the_matmul_features(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_features.os, "sched_getaffinity", lambda pid: {0, 1})
    assert describe_cpu(cpuinfo(tmp_path, ZEN4)) == \
        "AMD EPYC 9R14 96-Core Processor (2 cores; avx2 fma avx512f avx512_vnni avx512_bf16; bf16: native)"
    assert describe_cpu(cpuinfo(tmp_path, HASWELL)) == \
        "Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz (2 cores; avx2 fma; bf16: not native)"
    assert describe_cpu(cpuinfo(tmp_path, SAPPHIRE_RAPIDS)) == (
        "Intel(R) Xeon(R) Platinum 8488C (2 cores; avx2 fma avx512f avx512_vnni avx512_fp16 amx_tile amx_bf16 "
        "amx_int8; bf16: native)")
    assert describe_cpu(cpuinfo(tmp_path, GRAVITON3)) == \
        "CPU part 0xd40 (2 cores; asimd sve bf16; bf16: not native)"
    assert describe_cpu(tmp_path / "missing") == "unknown CPU (2 cores; no flags known; bf16: not native)"


def test_describe_cpu_of_this_machine_is_one_line():
    line = describe_cpu()
    assert "\n" not in line and "bf16: " in line
