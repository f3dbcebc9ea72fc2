"""bench/predict_kind.py's arithmetic on a run folder written here (stage times, stores, eval stores and training
metadata): the ETA's cost model and cpu-fp32 rates with the run's own counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_script import load

predict_kind = load("predict_kind")


def _write_store(path: Path, n: int, run_id: str = "") -> None:
    """``n`` judged episodes, as bootstrap and eval write them (``run_id``: the invocation that ran them)."""
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    path.parent.mkdir(parents=True, exist_ok=True)
    records = []
    for i in range(n):
        t = Trajectory(task=TaskRecord(f"t{i}", f"question {i}?", "X"), method="react", prediction="X", correct=True,
                       run_id=run_id)
        records.append(record_verdict(t, judge(t)).to_json() + "\n")
    path.write_text("".join(records))


def _write_state(run: Path, done: dict[str, float], partial: dict[str, float] | None = None) -> None:
    """The full preset's quickstart state with these finished (and stopped) stages' wall seconds."""
    from actune.quickstart.config import load_quickstart
    from actune.quickstart.layout import STATE_FILE

    config = {k: v for k, v in load_quickstart("full").model_dump(mode="json").items() if k != "hardware_overrides"}
    stages = {"done": done, "partial": partial or {}}
    (run / STATE_FILE).write_text(json.dumps({"config": config, **{
        key: {k: {"wall_s": v, "runs": 1} for k, v in times.items()} for key, times in stages.items()}}))


def test_counts_at_the_kinds_rates_and_training_by_its_own_tokens(tmp_path: Path) -> None:
    from actune.quickstart.estimate import concurrency_speedup
    from actune.quickstart.layout import Layout

    # the full preset: ReAct and ReflAct, bootstrap 48 at once, eval 64
    _write_state(tmp_path, {"world": 30.0, "bootstrap round 1": 600.0, "bootstrap round 2": 300.0,
                            "export react round 2": 5.0, "train react round 2": 300.0, "eval react": 900.0})
    layout = Layout(tmp_path)
    for method, r, n in (("react", 1, 100), ("reflact", 1, 200), ("react", 2, 50), ("reflact", 2, 40)):
        _write_store(layout.store(method, r), n)
    for label, n in (("prompted", 300), ("tuned-r1", 300), ("tuned-r2", 300)):
        _write_store(layout.eval_dir("react") / label / "trajectories.jsonl", n)
    layout.adapter("react", 2).mkdir(parents=True)
    (layout.adapter("react", 2) / "training_meta.json").write_text(
        json.dumps({"tokens": 33000, "config": {"num_train_epochs": 2.0}}))

    rows = {r["stage"]: r for r in predict_kind.predict(tmp_path, "cpu-fp32")}
    boot_h, eval_h = 1000 * concurrency_speedup(48), 1000 * concurrency_speedup(64)
    assert {k: r["predicted_s"] for k, r in rows.items()} == pytest.approx({
        "world": 30.0,
        "bootstrap round 1": (100 * 1.0 + 200 * 1.3) / boot_h * 3600 + 60,  # one server for both methods
        "bootstrap round 2": (50 * 0.63 + 40 * 0.75) / boot_h * 3600 + 2 * 60,  # one per tuned model
        "export react round 2": 5.0,
        "train react round 2": 33000 * 2 / 110,
        "eval react": (300 * 1.0 + 600 * 0.63) / eval_h * 3600 + 3 * 60})
    assert rows["eval react"]["how"] == "300 prompted + 600 tuned episodes, 3 starts"
    table = predict_kind.format_table(list(rows.values()), "cpu-fp32")
    assert "| train react round 2 | 5.0 | 10.0 | 33000 tokens x 2 epochs |" in table
    total = sum(r["predicted_s"] for r in rows.values()) / 60
    assert table.splitlines()[-1] == f"| **total** | **35.6** | **{total:.1f}** (1h06m) | |"


def test_a_run_stopped_part_way_predicts_its_stopped_stages_from_what_they_did(tmp_path: Path) -> None:
    from actune.quickstart.estimate import concurrency_speedup
    from actune.quickstart.layout import Layout

    _write_state(tmp_path, {"world": 30.0}, partial={"eval reflact": 1200.0, "train react round 1": 90.0})
    layout = Layout(tmp_path)
    # eval creates every model's store up front: tuned-r2's is empty, its server never started
    for label, n in (("prompted", 300), ("tuned-r1", 120), ("tuned-r2", 0)):
        _write_store(layout.eval_dir("reflact") / label / "trajectories.jsonl", n)

    rows = predict_kind.predict(tmp_path, "cpu-fp32")
    assert [(r["stage"], r["part"]) for r in rows] == [
        ("world", False), ("eval reflact", True), ("train react round 1", True)]
    stopped_eval, stopped_train = rows[1], rows[2]
    eval_h = 1000 * concurrency_speedup(64)
    assert stopped_eval["measured_s"] == 1200.0
    assert stopped_eval["predicted_s"] == pytest.approx((300 * 1.77 + 120 * 0.75) / eval_h * 3600 + 2 * 60)
    assert stopped_eval["how"] == "stopped part-way; 300 prompted + 120 tuned episodes, 2 starts"
    # a training stopped part-way wrote no training_meta.json: its time is kept as it ran
    assert (stopped_train["predicted_s"], stopped_train["how"]) == (90.0, "stopped part-way; as measured")


def test_eval_episodes_run_on_a_bootstrap_rounds_server_count_in_that_round(tmp_path: Path) -> None:
    from actune.quickstart.estimate import concurrency_speedup
    from actune.quickstart.layout import Layout

    _write_state(tmp_path, {"bootstrap round 1": 600.0, "bootstrap round 2": 300.0, "eval react": 400.0})
    layout = Layout(tmp_path)
    for method, r, n in (("react", 1, 100), ("reflact", 1, 200), ("react", 2, 50), ("reflact", 2, 40)):
        _write_store(layout.store(method, r), n)
    # as the quickstart runs them: the prompted model on round 1's server, round 1's model on round 2's, round
    # 2's in the eval stage (its own run id)
    for method in ("react", "reflact"):
        for label, n, run_id in (("prompted", 300, "quickstart-full-r1-20261203-140000"),
                                 ("prompted-oracle", 300, "quickstart-full-r1-20261203-140000"),
                                 ("tuned-r1", 300, "quickstart-full-r2-20261203-160000"),
                                 ("tuned-r2", 300, f"quickstart-full-{method}-20261203-170000")):
            _write_store(layout.eval_dir(method) / label / "trajectories.jsonl", n, run_id)

    rows = {r["stage"]: r for r in predict_kind.predict(tmp_path, "cpu-fp32")}
    boot_h, eval_h = 1000 * concurrency_speedup(48), 1000 * concurrency_speedup(64)
    assert rows["bootstrap round 1"]["predicted_s"] == pytest.approx(
        (100 * 1.0 + 200 * 1.3) / boot_h * 3600 + (600 * 1.0 + 600 * 1.77) / eval_h * 3600 + 60)
    assert rows["bootstrap round 1"]["how"].endswith("1 start(s); eval on its server: 1200 prompted + 0 tuned episodes")
    assert rows["bootstrap round 2"]["predicted_s"] == pytest.approx(
        (50 * 0.63 + 40 * 0.75) / boot_h * 3600 + (300 * 0.63 + 300 * 0.75) / eval_h * 3600 + 2 * 60)
    # the eval stage ran only round 2's model, on one server
    assert rows["eval react"]["predicted_s"] == pytest.approx(300 * 0.63 / eval_h * 3600 + 60)
    assert rows["eval react"]["how"] == "0 prompted + 300 tuned episodes, 1 starts"
