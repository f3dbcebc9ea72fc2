"""The smoke preset end to end on the real vLLM server and the real embedded model: every stage runs
(world, two bootstrap passes and the prompted model's eval episodes on one server, export, train with a dev
slice, merge, round-2 bootstrap and eval episodes with the tuned model, retrain, eval of the last model and
the report of all four on held-out questions), then a rerun resumes with nothing left to do.

It runs the smoke preset at the smaller scale of ``SUITE_SCALE`` (a third of the questions): every stage and
every check is the same, and the suite stays within its time on a 2-core AVX2-only CPU. ``make demo`` runs the
preset's own scale.

It starts its own servers (the quickstart does, one after another), so it does not use the session
server, and runs before that one starts (``own_servers``: an idle server beside it slows its trainings).
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from actune.quickstart.config import hardware_kind, load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import run_quickstart

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.own_servers]

# Fewer questions in every split, a smaller keep target and 4 steps an episode (a wave of episodes lasts as long
# as its longest; the world's questions need 2-3); the model, prompts, passes, rounds and training recipe are the
# preset's. On the AVX2-only EPYC (float32) the preset's own shape took 12-13 of the suite's 33-35 minutes.
SUITE_SCALE = ["world.n_train=16", "world.n_dev=2", "world.n_test=6", "bootstrap.target_correct=6",
               "round_attempts=1", "bootstrap.agent.episode_steps=4", "eval.agent.episode_steps=4"]


SERVER_KEY = "sk-smoke-9f3a61c2"
HUB_TOKEN = "hf_smoke7d21be40"


@pytest.fixture(scope="module")
def smoke_run(embedded_model, tmp_path_factory):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed")
    from actune.serve.server import free_port

    out = tmp_path_factory.mktemp("quickstart") / "smoke"
    # the preset as make demo loads it on this machine (its hardware_overrides too), at the suite's scale; every
    # server requires a key and the trainer holds a Hub token: neither may reach a file or an output
    secrets = [f"serve.api_key={SERVER_KEY}", f"train.sft={{hub_token: {HUB_TOKEN}}}",
               f"serve.log_dir={out / 'server-logs'}"]
    cfg = load_quickstart("smoke", [*SUITE_SCALE, f"serve.port={free_port()}", *secrets], hardware=hardware_kind())
    logs: list[str] = []
    report = run_quickstart(cfg, out, show_progress=False, log=logs.append)
    return cfg, Layout(out), report, logs


def test_no_secret_reaches_a_file_of_the_run_or_its_log(smoke_run) -> None:
    """The server key and the Hub token of the run's config, looked for in every byte the run wrote (state,
    report, stores, datasets, adapters, cards, training metadata, the servers' logs) and in what it logged."""
    cfg, layout, _, logs = smoke_run
    assert cfg.serve.api_key == SERVER_KEY and cfg.train.sft.hub_token == HUB_TOKEN  # the run had both
    files = [p for p in layout.out.rglob("*") if p.is_file()]
    assert any(p.parent.name == "server-logs" for p in files) and any(p.name == "training_meta.json" for p in files)
    for secret in (SERVER_KEY, HUB_TOKEN):
        assert [str(p) for p in files if secret.encode() in p.read_bytes()] == []
        assert not any(secret in line for line in logs)


def round2_trained(layout: Layout) -> bool:
    """Whether round 2 added training data and so trained a model of its own (the tuned model's episodes decide;
    a round that adds none is not trained, and its model is round 1's)."""
    return layout.trained_round("react", 2) == 2


def test_every_stage_ran_and_the_report_has_its_structure(smoke_run) -> None:
    cfg, layout, report, logs = smoke_run
    assert logs[0].startswith("quickstart quickstart-smoke (seed 0)") and "estimated" in logs[0]
    state = json.loads(layout.state.read_text())
    assert list(state["done"]) == [
        "world", "bootstrap round 1", "export react round 1", "train react round 1",
        "bootstrap round 2", "export react round 2", "train react round 2", "eval react", "report",
    ]
    data = json.loads((layout.out / "report.json").read_text())
    tuned = ["tuned-r1", "tuned-r2"] if round2_trained(layout) else ["tuned-r1"]
    assert [r["label"] for r in data["rows"]] == ["prompted", "prompted-oracle", *tuned]
    for row in data["rows"]:
        assert row["correct_grounded"]["n"] == cfg.world.n_test  # every held-out question, each model
        assert 0.0 <= row["correct_grounded"]["mean"] <= row["correct"]["mean"] <= 1.0
    for row in data["rows"][1:]:
        assert row["vs_prompted"]["tasks"] == cfg.world.n_test
        assert set(row["vs_prompted"]) >= {"diff", "b", "c", "p_value", "ratio"}
    for row in data["rows"][2:]:
        assert set(row["bar"]) == {"ratio", "points", "p", "yardstick", "met"}
    # what each tuned model learnt from, read back from the export and training files of this very run
    trainings = [t for t in data["training"] if "same_as" not in t]
    assert [(t["method"], t["round"], t["by_source"].keys() == {"react"}) for t in trainings] == [
        ("react", 1, True), *([("react", 2, True)] if round2_trained(layout) else [])]
    assert all(t["train_examples"] + t["dev_examples"] <= t["exported"] for t in trainings)
    if not round2_trained(layout):
        assert {"method": "react", "round": 2, "same_as": 1} in data["training"]
        assert "its model is tuned-r1" in report.read_text()
    assert report.read_text().startswith("# Quickstart quickstart-smoke, seed 0")
    assert (layout.out / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert (layout.eval_dir("react") / "report.md").is_file()


def test_rounds_train_on_what_they_should(smoke_run) -> None:
    cfg, layout, _, _ = smoke_run
    from actune.judge import verdict_of
    from actune.records.trajectory import read_trajectories

    r1 = list(read_trajectories(layout.store("react", 1)))
    solved = {t.task.id for t in r1 if verdict_of(t).kept}
    round2_tasks = [json.loads(line)["id"] for line in layout.round_tasks("react", 2).read_text().splitlines()]
    train_ids = [json.loads(line)["id"] for line in (layout.world / "train.jsonl").read_text().splitlines()]
    assert round2_tasks == [i for i in train_ids if i not in solved]  # round 2 works on the unsolved ones
    r2 = list(read_trajectories(layout.store("react", 2)))
    assert {t.task.id for t in r2} <= set(round2_tasks)
    assert {t.model.regime for t in r2} == {"zero_shot"}  # the tuned model, with its own prompt spec
    for r in (1, 2) if round2_trained(layout) else (1,):
        adapter = layout.adapter("react", r)
        meta = json.loads((adapter / "training_meta.json").read_text())
        assert meta["best_step"] is not None and meta["eval_losses"]
        assert (adapter / "loss.png").is_file() and (adapter / "merged" / "actune_prompt.json").is_file()
        for folder in (adapter, adapter / "merged"):  # the eval stage put its scores in each card
            card = (folder / "README.md").read_text()
            assert "## Evaluation" in card and f"tuned-r{r}" in card and "prompted" in card
        summary = json.loads((layout.dataset("react", r) / "export_summary.json").read_text())
        assert summary["exported"] == meta["examples"] if "examples" in meta else summary["exported"] > 0
    test_ids = {json.loads(line)["id"] for line in (layout.world / "test.jsonl").read_text().splitlines()}
    trained = {t["id"] for t in json.loads((layout.adapter("react", 2) / "training_tasks.json").read_text())}
    assert trained and not trained & test_ids


def test_each_bootstrap_rounds_server_ran_the_eval_of_the_model_it_served(smoke_run) -> None:
    cfg, layout, _, logs = smoke_run
    from actune.records.trajectory import read_trajectories

    ran = {}
    for label in ("prompted", "prompted-oracle", "tuned-r1", *(["tuned-r2"] if round2_trained(layout) else [])):
        records = list(read_trajectories(layout.eval_dir("react") / label / "trajectories.jsonl"))
        assert len(records) == cfg.world.n_test
        assert {t.info["endpoint"]["kind"] for t in records} == {"started_server"}
        ran[label] = {t.run_id.rsplit("-", 2)[0] for t in records}  # the run id without its time
    # round 1's server ran the prompted model's, round 2's the round-1 model's: the eval stage started one server
    assert ran == {"prompted": {"quickstart-smoke-r1"}, "prompted-oracle": {"quickstart-smoke-r1"},
                   "tuned-r1": {"quickstart-smoke-r2"},
                   **({"tuned-r2": {"quickstart-smoke-react"}} if round2_trained(layout) else {})}
    assert sum(line.startswith("eval react: ") and line.endswith("on this round's server") for line in logs) == 2


def test_rerun_resumes_with_nothing_left(smoke_run) -> None:
    cfg, layout, report, _ = smoke_run
    before = (layout.out / "report.json").read_text()
    logs: list[str] = []
    run_quickstart(cfg, layout.out, show_progress=False, log=logs.append)
    assert "9 stages, 0 to run" in logs[0]
    assert not any(line.startswith("\n===") for line in logs)  # no stage ran again
    assert (layout.out / "report.json").read_text() == before
