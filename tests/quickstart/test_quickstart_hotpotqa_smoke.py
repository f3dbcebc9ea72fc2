"""The hotpotqa preset's smoke form end to end on the real vLLM server and the real embedded model: real
HotpotQA questions over their own Wikipedia pages (tests/data/hotpotqa_small), FireAct's GPT-4 trajectories
imported (three of them), the gold paths of the training questions, bootstrap, export of all three, training, eval of the prompted and the tuned model on the
test questions, the report. Its own servers, so it runs before the session server starts (``own_servers``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import run_quickstart

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.own_servers]

DATA = Path(__file__).resolve().parents[1] / "data"
# Three test questions, two bootstrap tasks a pass, four steps an episode: every stage, in a few minutes.
SMOKE_FORM = [f"hotpotqa.data_dir={DATA / 'hotpotqa_small'}", "hotpotqa.n_test=3", "hotpotqa.n_dev=1",
              f"imports=[{{path: {DATA / 'import' / 'fireact_gpt_hotpotqa.jsonl'}, format: openai}}]",
              "passes=[{kind: bridge, share: 0.5, limit: 2}, {kind: comparison, limit: 2}]",
              "bootstrap.target_correct=4", "bootstrap.concurrency=8", "eval.concurrency=8",
              "bootstrap.agent.episode_steps=4", "eval.agent.episode_steps=4", "train.num_train_epochs=1",
              "train.eval_fraction=0.25", "serve.cpu_kv_cache_gib=2", "rounds=2", "round_attempts=1"]


@pytest.fixture(scope="module")
def hotpot_run(embedded_model, tmp_path_factory):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")
    from actune.serve.server import free_port

    out = tmp_path_factory.mktemp("quickstart") / "hotpotqa"
    cfg = load_quickstart("hotpotqa", [*SMOKE_FORM, f"serve.port={free_port()}"], hardware=hardware_kind())
    logs: list[str] = []
    report = run_quickstart(cfg, out, show_progress=False, log=logs.append)
    return cfg, Layout(out, cfg.source), report, logs


def test_every_stage_ran_on_real_questions_and_the_teachers_trajectories(hotpot_run) -> None:
    cfg, layout, report, logs = hotpot_run
    state = json.loads(layout.state.read_text())
    # two rounds: round 2 bootstraps the round-1 model on the training questions it had not solved
    assert list(state["done"])[:6] == ["tasks", "imports", "gold paths", "bootstrap round 1", "export react round 1",
                                       "train react round 1"]
    assert "bootstrap round 2" in state["done"] and list(state["done"])[-2:] == ["eval react", "report"]
    assert any(line.startswith("bootstrap react round 2: ") for line in logs)
    assert any(line.startswith("imports[0]: 3 of 3 records imported") for line in logs)
    gold = [line for line in logs if line.startswith("gold paths (react): ")]
    assert gold and not gold[0].startswith("gold paths (react): 0 written")
    test_ids = [json.loads(line)["id"] for line in (layout.tasks_dir / "test.jsonl").read_text().splitlines()]
    assert len(test_ids) == 3
    data = json.loads((layout.out / "report.json").read_text())
    # the best content-free policy stands beside the prompted model, every tuned model paired against it
    assert [r["label"] for r in data["rows"]][:2] == ["prompted", "tuned-r1"]
    assert [y["label"].startswith("yardstick:") for y in data["yardsticks"]] == [True]
    assert "| yardstick:" in (layout.out / "report.md").read_text()
    for row in [*data["rows"], *data["yardsticks"]]:
        # every test question of the fixture names its supporting sentences: all scored at the evidence level
        assert row["correct_grounded"]["n"] == 3 and row["by_phrasing"] == {}  # real questions: no phrasing rows
    assert all("yardstick" in r["bar"] for r in data["rows"] if r.get("bar"))
    # the tuned model learnt from the imported trajectories and the gold paths (and whatever its own bootstrap kept)
    summary = json.loads((layout.dataset("react", 1) / "export_summary.json").read_text())
    assert summary["by_store"][str(layout.imported(0))] == 3 and summary["by_store"][str(layout.gold_paths)] >= 1
    trained = {t["id"] for t in json.loads((layout.adapter("react", 1) / "training_tasks.json").read_text())}
    assert not trained & set(test_ids)
    assert report.read_text().startswith("# Quickstart quickstart-hotpotqa, seed 0")


def test_rerun_resumes_with_nothing_left(hotpot_run) -> None:
    cfg, layout, _, _ = hotpot_run
    logs: list[str] = []
    run_quickstart(cfg, layout.out, show_progress=False, log=logs.append)
    assert ", 0 to run" in logs[0]
