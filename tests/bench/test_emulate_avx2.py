"""bench/emulate_avx2.sh: a Python process started under it (and the processes it starts, like a vLLM server)
sees an AVX2-only CPU: torch's kernels capped at AVX2 and torch's CPU checks, which pick vLLM's kernel library,
answering no AVX-512; torch is not imported before the process imports it, and a sitecustomize the script's
shadows still runs."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "emulate_avx2.sh"
CAPS = ("ACTUNE_EMULATE_AVX2", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")

PROBE = """
import json, os, subprocess, sys
early = "torch" in sys.modules
import torch, torch.cpu
child = subprocess.run([sys.executable, "-c", "import torch; print(torch.cpu._is_avx512_supported())"],
                       capture_output=True, text=True, check=True).stdout.strip()
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "avx512": torch.cpu._is_avx512_supported(),
                  "avx512_bf16": torch.cpu._is_avx512_bf16_supported(), "amx": torch.cpu._is_amx_tile_supported(),
                  "onednn": os.environ.get("ONEDNN_MAX_CPU_ISA"), "child_avx512": child, "torch_early": early}))
"""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CAPS and k != "PYTHONPATH"}
    return {**env, **extra}


def _probe(argv: list[str], env: dict[str, str]) -> dict:
    out = subprocess.run(argv + [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="AVX2 is an x86 instruction set")
def test_a_process_under_the_script_and_its_children_see_an_avx2_only_cpu():
    import torch

    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("this CPU has no AVX2 to cap at")
    seen = _probe([str(SCRIPT)], _clean_env())
    assert seen == {"capability": "AVX2", "avx512": False, "avx512_bf16": False, "amx": False, "onednn": "AVX2",
                    "child_avx512": "False", "torch_early": False}


def test_without_the_script_the_host_cpu_is_seen():
    import torch.cpu

    seen = _probe([], _clean_env())
    host = torch.cpu._is_avx512_supported()
    assert (seen["onednn"], seen["avx512"], seen["child_avx512"]) == (None, host, str(host))


def test_the_sitecustomize_it_shadows_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'a').write('x')\n")
    subprocess.run([str(SCRIPT), sys.executable, "-c", "pass"], check=True, env=_clean_env(PYTHONPATH=str(tmp_path)))
    assert (tmp_path / "ran").read_text() == "x"  # once, in the one process
