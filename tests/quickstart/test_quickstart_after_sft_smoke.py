"""The smoke preset with ``after_sft=[dpo,grpo]`` end to end on the real vLLM server and the real embedded model:
round 1's SFT model explores the training questions, its pairs train DPO, GRPO trains with rollouts on its own
LoRA-enabled server, and the eval pairs both against the prompted model and against the SFT model.

A ``long`` test (``ACTUNE_LONG_TESTS=1``): the default run keeps its time, and each piece it joins runs there
already (a real two-step DPO in tests/train/test_dpo.py, a real two-step GRPO with rollouts on the real server in
tests/train/test_grpo.py, the stage plan and the eval models in tests/quickstart/test_quickstart_pipeline.py, the
report rows in tests/quickstart/test_quickstart_report.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from test_quickstart_smoke import SUITE_SCALE

from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import run_quickstart

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.own_servers, pytest.mark.long]

AFTER_SFT = ["rounds=1", "after_sft=[dpo,grpo]", "explore.attempts=3",
             "objective_train={dpo: {num_train_epochs: 1}, grpo: {max_steps: 2, grpo: {tasks_per_step: 2, "
             "num_generations: 2}}}"]


def test_dpo_and_grpo_train_after_sft_and_are_reported_against_it(embedded_model, tmp_path) -> None:
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")
    from actune.serve.server import free_port

    cfg = load_quickstart("smoke", [*SUITE_SCALE, *AFTER_SFT, f"serve.port={free_port()}"], hardware=hardware_kind())
    logs: list[str] = []
    run_quickstart(cfg, tmp_path / "run", show_progress=False, log=logs.append)
    layout = Layout(tmp_path / "run")
    state = json.loads(layout.state.read_text())
    assert list(state["done"]) == ["world", "bootstrap round 1", "export react round 1", "train react round 1",
                                   "explore react", "pairs react", "train dpo react", "train grpo react",
                                   "eval react", "report"]
    explored = layout.explore_store("react").read_text().splitlines()
    train_questions = (layout.tasks_dir / "train.jsonl").read_text().splitlines()
    assert len(explored) == 3 * len(train_questions)
    for objective in ("dpo", "grpo"):
        meta = json.loads((layout.objective_adapter("react", objective) / "training_meta.json").read_text())
        assert meta["objective"] == objective
        assert meta["base_model"] == str(layout.adapter("react", 1) / "merged")
    assert len(list((layout.objective_dir("react", "grpo") / "adapter.rollouts").glob("step-*.jsonl"))) == 2
    report = json.loads((layout.out / "report.json").read_text())
    rows = {r["label"]: r for r in report["rows"]}
    assert set(rows) == {"prompted", "prompted-oracle", "tuned-r1", "tuned-dpo", "tuned-grpo"}
    assert rows["tuned-dpo"]["vs_reference"]["label"] == rows["tuned-grpo"]["vs_reference"]["label"] == "tuned-r1"
    md = (layout.out / "report.md").read_text()
    assert "Against the SFT model each started from" in md
