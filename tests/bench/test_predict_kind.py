"""bench/predict_kind.py's arithmetic on a run folder written here (stage times and training metadata)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SPEC = importlib.util.spec_from_file_location("bench_predict_kind", BENCH / "predict_kind.py")
predict_kind = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = predict_kind
SPEC.loader.exec_module(predict_kind)


def test_serving_scales_by_the_episode_rates_and_training_by_its_own_tokens(tmp_path: Path) -> None:
    from actune.cli.quickstart_run import STATE_FILE, Layout

    done = {"world": 30.0, "bootstrap round 1": 600.0, "export react round 2": 5.0,
            "train react round 2": 300.0, "eval react": 900.0}
    (tmp_path / STATE_FILE).write_text(json.dumps({"config": {}, "done": {k: {"wall_s": v, "runs": 1}
                                                                          for k, v in done.items()}}))
    adapter = Layout(tmp_path).adapter("react", 2)
    adapter.mkdir(parents=True)
    (adapter / "training_meta.json").write_text(json.dumps({"tokens": 33000, "config": {"num_train_epochs": 2.0}}))

    rows = {r["stage"]: r["predicted_s"] for r in predict_kind.predict(tmp_path, "cpu-bf16", "cpu-fp32")}
    assert rows == {"world": 30.0, "bootstrap round 1": 1800.0, "export react round 2": 5.0,
                    "train react round 2": pytest.approx(33000 * 2 / 110), "eval react": 2700.0}
    table = predict_kind.format_table(predict_kind.predict(tmp_path, "cpu-bf16", "cpu-fp32"), "cpu-bf16", "cpu-fp32")
    assert "| train react round 2 | 5.0 | 10.0 | 33000 tokens x 2 epochs |" in table
    assert table.splitlines()[-1].startswith("| **total** | **30.6** | **85.6** (1h25m)")
