"""run_eval on stores that already hold every episode: nothing runs (no server is needed), and the report
covers exactly this run's tasks and attempts; a store of another producer (adapter, base model, prompt, task
file) is refused unless eval.allow_mixed_store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_records import record

from actune.config import ConfigError
from actune.eval.config import EvalConfig, EvalModel
from actune.eval.run import run_eval
from actune.judge import judge, record_verdict
from actune.records.store import StoreMixError, TrajectoryStore
from actune.serve.config import ServeConfig
from actune.tasks.config import TaskConfig


def write_tasks(path: Path, ids: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": i, "question": f"question {i}?", "answer": "gold", "aliases": [],
                                        "meta": {"kind": "single"}}) + "\n" for i in ids))


def fill_store(path: Path, recs) -> None:
    with TrajectoryStore.open(path) as store:
        for t in recs:
            store.append(record_verdict(t, judge(t)))


def test_stored_episodes_are_reported_not_rerun(tmp_path: Path, capsys) -> None:
    write_tasks(tmp_path / "tasks.jsonl", ["t1", "t2"])
    out = tmp_path / "out"
    # prompted: t1 right, t2 wrong, and an old task t9 this run does not ask; attempt 1 of t1 is beyond attempts=1
    fill_store(out / "a" / "trajectories.jsonl",
               [record("t1", correct=True), record("t2", correct=False), record("t9", correct=True),
                record("t1", correct=False, attempt=1)])
    fill_store(out / "b" / "trajectories.jsonl", [record("t1", correct=True), record("t2", correct=True)])
    cfg = EvalConfig(
        out_dir=out, models=[EvalModel(label="a"), EvalModel(label="b")], bootstrap_samples=100,
        endpoints=["http://127.0.0.1:9/v1"],  # nothing listens: any request would fail the test
        tasks=TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="dev"))
    report = run_eval(cfg, ServeConfig(), name="resume", show_progress=False, run_id="r1")
    assert "nothing to run" in capsys.readouterr().err
    a, b = report["models"]
    assert (a["episodes"], a["tasks"], a["metrics"]["correct"]["mean"]) == (2, 2, 0.5)
    assert (b["episodes"], b["tasks"], b["metrics"]["correct"]["mean"]) == (2, 2, 1.0)
    c = b["vs_first"]["correct"]
    assert (c["b"], c["c"], c["pairs"]) == (0, 1, 2)
    # judged when stored; these tasks name no supporting pages, so grounded holds and it equals correct
    assert a["metrics"]["correct_grounded"]["mean"] == 0.5 and b["metrics"]["correct_grounded"]["mean"] == 1.0
    cg = b["vs_first"]["correct_grounded"]
    assert (cg["b"], cg["c"], cg["pairs"]) == (0, 1, 2)
    assert a["cost"]["episodes"] == 2 and report["total_episodes"] == 4
    assert json.loads((out / "report.json").read_text()) == json.loads(json.dumps(report))
    assert (out / "report.md").is_file() and (out / "scores.png").is_file()


def test_a_store_of_another_adapter_is_refused(tmp_path: Path) -> None:
    from actune.agent.prompt_spec import PromptSpec, save_prompt_spec

    write_tasks(tmp_path / "tasks.jsonl", ["t1"])
    adapter = tmp_path / "ad"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"w")
    save_prompt_spec(PromptSpec(), adapter)
    fill_store(tmp_path / "out" / "b" / "trajectories.jsonl", [record("t1", correct=True, adapter="b-old")])
    cfg = EvalConfig(
        out_dir=tmp_path / "out", models=[EvalModel(label="b", adapter=adapter)], endpoints=["http://127.0.0.1:9/v1"],
        tasks=TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="dev"))
    with pytest.raises(StoreMixError, match=(
            r"out/b/trajectories\.jsonl: its 'react' episodes were produced differently from this run's \(the "
            r"first at line 1\): adapter: stored 'b-old', this run 'b-[0-9a-f]{10}'\. Mixed in one store they would "
            r"count as one run's; use another store, or set eval\.allow_mixed_store=true to add to it anyway")):
        run_eval(cfg, ServeConfig(), show_progress=False)


def test_models_on_two_bases_resume_without_a_server(tmp_path: Path, capsys) -> None:
    """Every episode stored: no server of either base is started; the report shows each model's own base,
    and only the records of each model's method count (a store may hold other methods' episodes)."""
    from actune.agent.prompt_spec import PromptSpec, save_prompt_spec

    write_tasks(tmp_path / "tasks.jsonl", ["t1", "t2"])
    merged = tmp_path / "merged"
    merged.mkdir()
    save_prompt_spec(PromptSpec(method="reflact"), merged)
    out = tmp_path / "out"
    fill_store(out / "p" / "trajectories.jsonl", [record("t1", correct=True), record("t2", correct=False),
                                                   record("t2", correct=True, method="cot")])
    fill_store(out / "o" / "trajectories.jsonl", [record("t1", correct=True), record("t2", correct=True)])
    fill_store(out / "m" / "trajectories.jsonl", [record("t1", correct=False, method="reflact"),
                                                   record("t2", correct=True, method="reflact")])
    cfg = EvalConfig(
        out_dir=out, bootstrap_samples=100,
        models=[EvalModel(label="p"), EvalModel(label="o", agent={"exemplar_kinds": ["task"]}),
                EvalModel(label="m", model=str(merged))],
        tasks=TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="dev"))
    report = run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1")
    assert "nothing to run" in capsys.readouterr().err
    p, o, m = report["models"]
    assert [x["model"] for x in report["models"]] == ["smollm2-135m", "smollm2-135m", str(merged)]
    assert (p["episodes"], p["metrics"]["correct"]["mean"]) == (2, 0.5)  # the CoT record is not p's
    assert o["agent_overrides"] == {"exemplar_kinds": ["task"]}
    assert m["prompt_spec"] == str(merged / "actune_prompt.json")
    assert (m["episodes"], m["vs_first"]["correct"]["b"], m["vs_first"]["correct"]["c"]) == (2, 1, 1)
    md = (out / "report.md").read_text()
    assert f"| m | {merged} | started_server | – | eval.agent + spec {merged}/actune_prompt.json | 2 | 2 |" in md
    # the same models with endpoints: one endpoint cannot serve two bases
    with pytest.raises(ConfigError, match="one endpoint serves one base model"):
        run_eval(cfg.model_copy(update={"endpoints": ["http://127.0.0.1:9/v1"]}), ServeConfig(), show_progress=False)


def test_leaked_tasks_stop_the_run_before_anything_runs(tmp_path: Path) -> None:
    from actune.agent.prompt_spec import PromptSpec, save_prompt_spec

    write_tasks(tmp_path / "tasks.jsonl", ["t1", "t2"])
    merged = tmp_path / "merged"
    merged.mkdir()
    save_prompt_spec(PromptSpec(), merged)
    (merged / "training_tasks.json").write_text(json.dumps([{"id": "x", "question": "Question T2?"}]))
    cfg = EvalConfig(
        out_dir=tmp_path / "out", models=[EvalModel(label="m", model=str(merged))],
        tasks=TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="dev"))
    with pytest.raises(ConfigError, match=r"eval.models\[0\] \('m'\): 1 of 2 eval tasks are among its training "
                                          r"tasks .* e.g. 't2' \('question t2\?'\)"):
        run_eval(cfg, ServeConfig(), show_progress=False)
    assert not (tmp_path / "out").exists()  # refused before any store or server


def _stamped(cfg: EvalConfig, label: str, recs):
    """``recs`` as model ``label`` of ``cfg`` writes them: with the fingerprint run_eval gives its records."""
    from actune.collect import load_unique_tasks, producer_fingerprint, task_file_id
    from actune.eval.run import plan_models

    tasks = load_unique_tasks(cfg.tasks, "eval")
    plan = next(p for p in plan_models(cfg, ServeConfig()) if p.label == label)
    fingerprint = producer_fingerprint(plan.record, plan.agent, cfg.env.name, task_file_id(cfg.tasks, tasks),
                                       tasks, base=plan.base)
    for t in recs:
        t.model.name = plan.record.name
        t.info["fingerprint"] = fingerprint
    return recs


def test_a_label_pointing_at_another_base_model_is_refused(tmp_path: Path, capsys) -> None:
    write_tasks(tmp_path / "tasks.jsonl", ["t1"])
    tasks = TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="dev")
    cfg = EvalConfig(out_dir=tmp_path / "out", models=[EvalModel(label="p", model="base-a")], tasks=tasks,
                     bootstrap_samples=100, served_model="policy")
    fill_store(tmp_path / "out" / "p" / "trajectories.jsonl", _stamped(cfg, "p", [record("t1", correct=True)]))
    run_eval(cfg, ServeConfig(), show_progress=False)  # the same model resumes: nothing to run, no warning
    assert "nothing to run" in capsys.readouterr().err
    # served under the same name, but the label now names another base: its old episodes are not this model's
    moved = cfg.model_copy(update={"models": [EvalModel(label="p", model="base-b")]})
    with pytest.raises(StoreMixError, match=r"\(the first at line 1\): base: stored 'base-a', this run 'base-b'\. "):
        run_eval(moved, ServeConfig(), show_progress=False)
    # told to, it goes on: the report is over the records the store holds
    report = run_eval(moved.model_copy(update={"allow_mixed_store": True}), ServeConfig(), show_progress=False)
    assert "as eval.allow_mixed_store allows: base: stored 'base-a', this run 'base-b'" in capsys.readouterr().err
    assert report["models"][0]["episodes"] == 1


def test_an_older_store_is_checked_by_the_model_its_records_name(tmp_path: Path, capsys) -> None:
    """Records written before fingerprints still name their served model: a resume of the same model goes on
    (warned once that the rest is unknown), a label now pointing at another base is refused."""
    write_tasks(tmp_path / "tasks.jsonl", ["t1", "t2"])
    old = [record("t1", correct=True), record("t2", correct=False)]
    for t in old:
        t.model.name = "base-a"
    fill_store(tmp_path / "out" / "p" / "trajectories.jsonl", old)
    cfg = EvalConfig(out_dir=tmp_path / "out", models=[EvalModel(label="p", model="base-a")], bootstrap_samples=100,
                     tasks=TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="dev"))
    run_eval(cfg, ServeConfig(), show_progress=False)
    err = capsys.readouterr().err
    assert err.count("2 'react' record(s) carry no fingerprint (written before stores kept one), so only their "
                     "model and adapter are checked against this run's") == 1
    with pytest.raises(StoreMixError, match=r"model: stored 'base-a', this run 'base-b'\. "):
        run_eval(cfg.model_copy(update={"models": [EvalModel(label="p", model="base-b")]}), ServeConfig(),
                 show_progress=False)


def test_episodes_the_server_failed_are_reported_apart_and_the_run_is_not_done(tmp_path: Path, capsys) -> None:
    """An endpoint that never answers: the stored episode is reported, the ones it failed are not stored, and the
    run ends with a named error (exit 1 at the command line), not as a finished eval."""
    from actune.collect import CollectError
    from actune.world import WorldConfig, write_world

    world = tmp_path / "w"
    write_world(WorldConfig(seed=1, n_people=20, n_companies=12, n_cities=8, n_train=2, n_dev=2, n_test=3), world)
    out = tmp_path / "out"
    cfg = EvalConfig(out_dir=out, models=[EvalModel(label="a")], bootstrap_samples=100,
                     endpoints=["http://127.0.0.1:9/v1"], retries={"max_retries": 0, "backoff_s": 0.01},
                     env={"corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "index")},
                     tasks=TaskConfig(format="custom", path=str(world / "test.jsonl"), split="test"))
    first = json.loads((world / "test.jsonl").read_text().splitlines()[0])["id"]
    fill_store(out / "a" / "trajectories.jsonl", [record(first, correct=True)])
    with pytest.raises(CollectError, match=r"^2 episodes not stored: the model server failed them"):
        run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1")
    assert json.loads((out / "report.json").read_text())["models"][0]["episodes"] == 1
    assert capsys.readouterr().err.count("lost its model server") >= 2
