"""``formats`` end to end on the real vLLM server and the embedded model, at the smoke suite's scale: ReAct
bootstrapped once, its kept episodes exported as Standard, CoT, Act and ReAct (the same episodes in each), one adapter
a format, each format's prompted and tuned model evaluated in its own method, the Figure 3 table in the report.
Scores at this scale are no result; the run is about every stage working.

It starts its own servers (the quickstart does, one after another), so it runs before the session server starts.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import run_quickstart

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.own_servers, pytest.mark.long]

FORMATS = ["standard", "cot", "act", "react"]
SCALE = ["methods=[react]", "rounds=1", "oracle_baseline=false", "world.n_train=16", "world.n_dev=2",
         "world.n_test=6", "bootstrap.target_correct=6", "bootstrap.agent.episode_steps=4",
         "eval.agent.episode_steps=4", f"formats=[{','.join(FORMATS)}]"]


@pytest.fixture(scope="module")
def figure3_run(embedded_model, tmp_path_factory):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")
    from actune.serve.server import free_port

    out = tmp_path_factory.mktemp("quickstart") / "figure3"
    cfg = load_quickstart("smoke", [*SCALE, f"serve.port={free_port()}", f"serve.log_dir={out / 'server-logs'}"],
                          hardware=hardware_kind())
    report = run_quickstart(cfg, out, show_progress=False, log=lambda m: None)
    return cfg, Layout(out), report


def test_every_format_stage_ran_in_order(figure3_run) -> None:
    _, layout, _ = figure3_run
    assert list(json.loads(layout.state.read_text())["done"]) == [
        "world", "bootstrap round 1", "export react round 1", "train react round 1", "eval react",
        *(f"export format {f}" for f in FORMATS), "eval formats prompted",
        *(f"train format {f}" for f in FORMATS), *(f"eval format {f}" for f in FORMATS), "report"]


def test_every_format_learnt_from_the_same_episodes_and_runs_in_its_own_method(figure3_run) -> None:
    from datasets import load_from_disk

    from actune.agent.prompt_spec import load_prompt_spec
    from actune.records.trajectory import read_trajectories

    _, layout, _ = figure3_run
    episodes = {f: load_from_disk(str(layout.format_dataset(f)))["episode_id"] for f in FORMATS}
    assert episodes["react"] and all(ids == episodes["react"] for ids in episodes.values())
    for f in FORMATS:
        spec = load_prompt_spec(layout.format_adapter(f))
        assert (spec.method, spec.regime) == (f, "zero_shot")
        report = json.loads((layout.format_eval_dir(f) / "report.json").read_text())
        assert [m["label"] for m in report["models"]] == ["prompted", "tuned"]
        for store in layout.format_eval_dir(f).rglob("*.jsonl"):
            assert {(t.method, t.model.regime) for t in read_trajectories(store)} <= {(f, "few_shot"),
                                                                                     (f, "zero_shot")}


def test_the_report_has_the_figure3_table(figure3_run) -> None:
    _, layout, report = figure3_run
    rows = json.loads((layout.out / "report.json").read_text())["formats"]
    assert [r["format"] for r in rows] == FORMATS
    assert len({(r["examples"], r["tasks"]) for r in rows}) == 1  # the same data budget in every format
    md = report.read_text()
    assert "## Figure 3: step formats, prompted vs fine-tuned" in md
    assert all(f"| {f} | " in md for f in FORMATS)
