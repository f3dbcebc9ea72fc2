"""The provenance block every report, summary, training record and card carries."""

from __future__ import annotations

import subprocess
from pathlib import Path

from actune.runtime.provenance import PACKAGES, provenance, provenance_markdown, source_commit


def test_the_block_names_every_library_the_code_and_the_machine():
    block = provenance("bfloat16")
    assert list(block["packages"]) == list(PACKAGES) == ["vllm", "trl", "peft", "transformers", "torch", "datasets",
                                                         "accelerate"]
    assert block["packages"]["trl"] and block["packages"]["torch"]  # installed here: their versions
    assert block["actune"] and block["dtype"] == "bfloat16" and "cores" in block["cpu"]
    text = "\n".join(provenance_markdown(block))
    assert text.startswith("## Provenance") and f"trl {block['packages']['trl']}" in text
    assert "dtype: bfloat16" in text and "GPUs: " in text


def test_the_commit_is_the_checkouts_and_marks_uncommitted_changes(tmp_path: Path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert source_commit.__wrapped__(tmp_path) == head.strip()
    (tmp_path / "a.py").write_text("x = 2\n")
    assert source_commit.__wrapped__(tmp_path) == head.strip() + "+dirty"
    assert source_commit.__wrapped__(tmp_path / "a.py") is None  # not the top of a checkout: no commit claimed


def test_a_library_that_is_not_installed_is_said_to_be_missing():
    block = {"actune": "0.1.0", "commit": None, "python": "3.11", "packages": {"vllm": None}, "cpu": "x",
             "gpus": [], "dtype": None}
    assert provenance_markdown(block)[2:6] == [
        "- actune 0.1.0, commit unknown (not a checkout)", "- Python 3.11; vllm not installed",
        "- CPU: x; GPUs: none", "- dtype: not recorded"]
