"""How every objective ends (actune.train.saving): the training tasks an adapter folder records."""

from __future__ import annotations

import json

import pytest

from actune.train.common import TrainError
from actune.train.saving import training_tasks_record


def _tasks(record: dict[str, str]) -> list[dict[str, str]]:
    return json.loads(record["training_tasks.json"])


def test_training_tasks_include_those_of_a_start_model_that_recorded_its_own(tmp_path):
    # a later round, or DPO / GRPO from the SFT model's merged folder: eval's leakage check must see the lineage
    seen = list(zip(["t3", "t1", "t3"], ["Q3?", "Q1 again?", "Q3 again?"]))
    assert _tasks(training_tasks_record(seen, tmp_path)) == [{"id": "t1", "question": "Q1 again?"},
                                                             {"id": "t3", "question": "Q3?"}]
    (tmp_path / "training_tasks.json").write_text(json.dumps([{"id": "t1", "question": "Q1?"},
                                                             {"id": "t2", "question": "Q2?"}]))
    assert _tasks(training_tasks_record(seen, tmp_path)) == [
        {"id": "t1", "question": "Q1?"}, {"id": "t2", "question": "Q2?"}, {"id": "t3", "question": "Q3?"}]
    (tmp_path / "training_tasks.json").write_text('[{"id": "t1"}]')
    with pytest.raises(TrainError, match=r"training_tasks.json: unreadable training tasks of the base model"):
        training_tasks_record(seen, tmp_path)
