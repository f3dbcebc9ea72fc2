"""A full disk (a real RLIMIT_FSIZE) mid-command: one line naming the file, exit 1, every whole record kept, and
the same command rerun finishes the work without a duplicate."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from actune.records.trajectory import read_trajectories

SOURCE = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_hotpotqa.jsonl"


def _import(store: Path, limit: int | None) -> subprocess.CompletedProcess:
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "actune", "import", str(SOURCE), "--format", "openai",
                           "--store", str(store)], preexec_fn=cap, capture_output=True, text=True, timeout=120)


def test_a_full_disk_is_one_line_and_a_rerun_finishes_the_work(tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    cut = _import(store, 6000)  # room for one record of three (each about 3.8 kB)
    assert cut.returncode == 1
    assert "Traceback" not in cut.stderr
    assert cut.stderr.strip() == (f"actune: File too large appending to the store ({store}); everything written "
                                  "before it is kept: make room and rerun the same command to continue")
    assert len(list(read_trajectories(store))) == 1 and store.read_bytes().endswith(b"\n")
    rerun = _import(store, None)
    assert rerun.returncode == 0 and "2 imported" in rerun.stdout
    assert len({t.episode_id for t in read_trajectories(store)}) == len(list(read_trajectories(store))) == 3
