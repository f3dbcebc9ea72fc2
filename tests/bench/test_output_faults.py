"""bench/output_faults.py's logic: what counts as the old output, the new one, lost or mixed, and what is left over;
then one whole fault run (a kill and a full disk) on ``actune world generate`` at a tiny scale."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench_script import load

of = load("output_faults")


def _out(tmp_path: Path) -> object:
    return of.Output("t", tmp_path / "out" / "ds", [], [], companions=("ds.card.md",))


def test_fingerprint_ignores_provenance_and_state_reads_old_new_lost_mixed(tmp_path: Path) -> None:
    out = _out(tmp_path)
    out.path.mkdir(parents=True)
    (out.path / "a.json").write_text(json.dumps({"n": 1, "provenance": {"time": 1}}))
    (out.path.parent / "ds.card.md").write_text("card")
    old = of.fingerprint(out)
    (out.path / "a.json").write_text(json.dumps({"n": 1, "provenance": {"time": 2}}))
    assert of.fingerprint(out) == old == {"ds/a.json": old["ds/a.json"], "ds.card.md": old["ds.card.md"]}
    (out.path / "a.json").write_text(json.dumps({"n": 2}))
    new = of.fingerprint(out)
    assert of._state(out, old, new) == "new"
    (out.path.parent / "ds.card.md").write_text("other card")
    assert of._state(out, old, new) == "mixed"
    # a swap killed between its renames: the reader's recover_folder puts the old folder back
    (out.path.parent / "ds.card.md").write_text("card")
    (out.path / "a.json").write_text(json.dumps({"n": 1}))
    out.path.rename(out.path.parent / ".ds.actune-swap-old")
    assert of._state(out, old, new) == "old" and out.path.is_dir()
    (out.path.parent / "ds.card.md").unlink()
    import shutil

    shutil.rmtree(out.path)
    assert of._state(out, old, new) == "lost"
    (out.path.parent / ".ds.abcd1234").mkdir()
    (out.path.parent / "input.jsonl").write_text("")
    assert of.leftovers(out, {"input.jsonl"}) == [".ds.abcd1234"]


def test_a_killed_and_a_disk_full_world_generate_leaves_the_old_world_or_the_new_one(tmp_path: Path) -> None:
    world = tmp_path / "w" / "world"
    cmd = [sys.executable, "-m", "actune", "world", "generate", "--out", str(world), "n_people=60",
           "n_companies=30", "n_cities=12", "n_train=40", "n_test=20", "n_dev=5"]
    out = of.Output("world", world, [*cmd, "seed=1"], [*cmd, "seed=0"])
    result = of.bench_output(out, set(), tmp_path / "work", seed=0, points=1)
    assert result["problems"] == [] and [r["fault"] for r in result["faults"]] == ["kill", "disk"]
    disk = result["faults"][1]
    assert disk["exit"] == 1 and disk["state"] == "old" and disk["rerun_ok"] and disk["leftover"] == []
    assert of.totals(result)["lost"] == of.totals(result)["mixed"] == 0
