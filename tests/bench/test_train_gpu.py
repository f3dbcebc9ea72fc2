"""bench/train_gpu.py runs both paths for real on a tiny random-init model on CPU (its smoke mode), so the GPU
script a GPU session runs once is known to work: the same tokens for both paths, actune's settings as
``actune train`` picks them on this device, and a positive speed for each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "train_gpu.py"


def test_the_smoke_mode_trains_both_paths_on_cpu(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--steps", "3", "--shape", "tiny",
                          "--json", str(tmp_path / "figures.json")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    figures = json.loads((tmp_path / "figures.json").read_text())
    a, t = figures["actune"], figures["trl"]
    assert a["tokens"] == t["tokens"] > 0 and a["tokens_s"] > 0 and t["tokens_s"] > 0
    assert (a["padding_free"], a["padding_free_check"], a["loss_head"], a["dropout_masks"]) == (
        True, "passed", "trained", "gaps")
    assert (t["padding_free"], t["loss_head"], t["dropout_masks"]) == (False, "trl", "torch")
    assert "| tokens/s |" in out.stdout and "LoRA dropout masks gaps" in out.stdout
