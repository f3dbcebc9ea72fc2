"""Bootstrap's and eval's figures in the experiment trackers: the numbers taken from a summary and a report, and
a real tensorboard event file read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import ConfigError
from actune.runtime.trackers import bootstrap_metrics, check_trackers, eval_metrics, log_to_trackers

SUMMARY = {"episodes": 10, "kept": 3, "correct": 4, "grounded": 5, "keep_rate": 0.3, "tasks_with_kept": 2,
           "by_kind": {"bridge": {"attempts": 6, "kept": 1, "correct": 1, "grounded": 2},
                       "single": {"attempts": 4, "kept": 2, "correct": 3, "grounded": 3}}}
REPORT = {"models": [
    {"label": "prompted", "metrics": {"correct_grounded": {"mean": 0.1, "low": 0.05, "high": 0.2}}, "vs_first": None},
    {"label": "tuned-r1", "metrics": {"correct_grounded": {"mean": 0.3, "low": None, "high": None}},
     "vs_first": {"correct_grounded": {"metric": "correct_grounded", "p_value": 0.001}}}]}


def test_the_figures_taken_from_a_summary_and_a_report():
    assert bootstrap_metrics(SUMMARY) == {
        "bootstrap/episodes": 10.0, "bootstrap/kept": 3.0, "bootstrap/correct": 4.0, "bootstrap/grounded": 5.0,
        "bootstrap/keep_rate": 0.3, "bootstrap/tasks_with_kept": 2.0, "bootstrap/bridge/kept": 1.0,
        "bootstrap/bridge/episodes": 6.0, "bootstrap/single/kept": 2.0, "bootstrap/single/episodes": 4.0}
    assert eval_metrics(REPORT) == {
        "eval/prompted/correct_grounded": 0.1, "eval/prompted/correct_grounded_low": 0.05,
        "eval/prompted/correct_grounded_high": 0.2, "eval/tuned-r1/correct_grounded": 0.3,
        "eval/tuned-r1/vs_first/correct_grounded_p": 0.001}


def test_tensorboard_gets_every_figure_and_the_config(tmp_path: Path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    metrics = eval_metrics(REPORT)
    log_to_trackers(["tensorboard"], run_name="run-1", stage="eval", metrics=metrics,
                    config={"out_dir": "runs/eval", "api_key": "***"}, log_dir=tmp_path)
    events = EventAccumulator(str(tmp_path / "run-1"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == sorted(metrics)
    read = {tag: events.Scalars(tag)[0] for tag in metrics}
    assert all(e.step == 0 for e in read.values())
    assert {tag: round(e.value, 6) for tag, e in read.items()} == {k: round(v, 6) for k, v in metrics.items()}
    assert events.Tensors("config/text_summary")  # the config went in as text


def test_no_tracker_does_nothing_and_a_missing_one_is_named(tmp_path: Path):
    log_to_trackers([], run_name="r", stage="eval", metrics={"a": 1.0}, config={}, log_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []
    check_trackers(["tensorboard"], "eval.report_to")  # installed here
    with pytest.raises(ConfigError, match=r"eval.report_to: not installed: no_such_tracker \(pip install "):
        check_trackers(["no_such_tracker"], "eval.report_to")


def test_the_stage_configs_take_only_known_trackers():
    from actune.bootstrap.config import BootstrapConfig
    from actune.eval.config import EvalConfig

    assert BootstrapConfig(report_to=["tensorboard"]).report_to == ["tensorboard"]
    with pytest.raises(ValueError, match="report_to"):
        EvalConfig(report_to=["tensorbored"])
