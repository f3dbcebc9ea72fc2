"""``actune bootstrap CONFIG [key=value ...]`` without a server: overrides, errors, a finished store."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
import yaml
from agent.fakes import FakeEnvironment
from collect_fakes import walkman_llm, walkman_tasks

from actune.agent import AgentConfig
from actune.cli import main
from actune.cli.stages import QUALIFY, register
from actune.collect import collect, pending_episodes
from actune.config import ConfigError
from actune.records.store import TrajectoryStore


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="actune")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_overrides_may_omit_the_bootstrap_prefix() -> None:
    assert QUALIFY["bootstrap"](["concurrency=4", "bootstrap.attempts_per_task=2", "serve.port=8001", "name=x",
                              "agent.temperature=0.7"]) == [
        "bootstrap.concurrency=4", "bootstrap.attempts_per_task=2", "serve.port=8001", "name=x",
        "bootstrap.agent.temperature=0.7"]


def test_a_bad_key_names_its_path(tmp_path: Path) -> None:
    cfg = tmp_path / "run.yaml"
    cfg.write_text("name: t\nbootstrap:\n  concurrency: 2\n")
    args = parse(["bootstrap", str(cfg), "bootstrap.nope=1"])
    with pytest.raises(ConfigError, match=r"bootstrap\.nope: unknown key"):
        args.func(args)


def test_a_finished_store_needs_no_server_and_gets_its_summary(tmp_path: Path, capsys) -> None:
    tasks_file = tmp_path / "tasks.jsonl"
    tasks = walkman_tasks()
    tasks_file.write_text("".join(json.dumps({"id": t.id, "question": t.question, "answer": t.answer,
                                              "meta": t.meta}) + "\n" for t in tasks))
    store_path = tmp_path / "out" / "trajectories.jsonl"

    async def fill() -> None:
        with TrajectoryStore.open(store_path) as store:
            # AgentConfig(): the method run_bootstrap's default config runs, so its resume finds them all
            await collect(pending_episodes(tasks, 2, store, AgentConfig().method), FakeEnvironment, walkman_llm(),
                          AgentConfig(), store, concurrency=2, target_correct=100, run_id="earlier")

    asyncio.run(fill())
    before = store_path.read_bytes()
    cfg = tmp_path / "run.yaml"
    # a model that cannot be served: starting a server would fail the command
    cfg.write_text(yaml.safe_dump({"name": "t", "serve": {"model": str(tmp_path / "no-such-model")},
                                   "bootstrap": {"store": str(store_path), "attempts_per_task": 2,
                                                 "tasks": {"format": "custom", "path": str(tasks_file),
                                                           "split": "train"}}}))
    args = parse(["bootstrap", str(cfg), "concurrency=3", "--no-progress"])
    assert args.func(args) == 0
    out = capsys.readouterr()
    assert "nothing to do" in out.err and "resuming" in out.err
    # written before records carried a fingerprint (and with no model name): unknown, said once, not refused
    assert out.err.count("8 'react' record(s) carry no fingerprint (written before stores kept one)") == 1
    assert store_path.read_bytes() == before
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["episodes"], summary["kept"], summary["tasks"], summary["run_ids"]) == (8, 4, 4, ["earlier"])
    assert "total" in out.out and "single" in out.out


# --- store identity: a store refuses episodes of the same method produced differently (issue #12) ------------

class _FakeClient:
    """Stands in for actune.llm.LLMClient: the scripted Walkman model, whatever the endpoint."""

    def __init__(self, config, **_: object) -> None:
        self.llm = walkman_llm()

    async def __aenter__(self):
        return self.llm

    async def __aexit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def boot(tmp_path: Path, monkeypatch):
    """``boot(where=None, **bootstrap_fields)`` runs run_bootstrap for real on the scripted model and fake
    environment, into one store, on a task file without ids (numbered by position); returns the store path."""
    import actune.envs.factory
    import actune.llm
    from actune.bootstrap.config import BootstrapConfig
    from actune.bootstrap.run import run_bootstrap
    from actune.serve.config import ServeConfig
    from actune.tasks.config import TaskConfig

    monkeypatch.setattr(actune.llm, "LLMClient", _FakeClient)
    monkeypatch.setattr(actune.envs.factory, "make_env", lambda cfg: FakeEnvironment())
    write_tasks(tmp_path / "tasks.jsonl", walkman_tasks())
    store = tmp_path / "out" / "trajectories.jsonl"

    def run(where: dict | None = None, **update: object) -> Path:
        tasks = TaskConfig(format="custom", path=str(tmp_path / "tasks.jsonl"), split="train", where=where or {})
        fields: dict = {"store": store, "endpoints": ["http://127.0.0.1:9/v1"], "model": "model-a",
                        "attempts_per_task": 1, "target_correct": 100, "concurrency": 2, "tasks": tasks,
                        "agent": AgentConfig(temperature=0.4), **update}
        run_bootstrap(BootstrapConfig(**fields), ServeConfig(), show_progress=False)
        return store

    return run


def write_tasks(path: Path, tasks) -> None:
    path.write_text("".join(json.dumps({"question": t.question, "answer": t.answer, "meta": t.meta}) + "\n"
                            for t in tasks))


def fingerprints(store: Path) -> list[tuple[str, str, str]]:
    from actune.records.trajectory import read_trajectories

    return [(t.method, t.info["fingerprint"]["model"], t.info["fingerprint"]["prompt"])
            for t in read_trajectories(store)]


def test_a_store_resumed_with_the_same_settings_runs_on(boot, capsys) -> None:
    store = boot()
    assert len(fingerprints(store)) == 4
    fp = json.loads(store.read_text().splitlines()[0])["info"]["fingerprint"]
    assert set(fp) == {"version", "model", "adapter", "regime", "wire", "exemplar_set", "prompt", "task_file",
                       "tasks"}
    assert (fp["model"], fp["adapter"], fp["regime"], fp["wire"], fp["exemplar_set"]) == \
        ("model-a", None, "few_shot", "text", "wiki")
    assert fp["task_file"].endswith("tasks.jsonl (train)") and len(fp["tasks"]) == len(fp["prompt"]) == 12
    boot(attempts_per_task=2)  # the same producer: attempt 1 of every task is added
    assert len(set(fingerprints(store))) == 1 and len(fingerprints(store)) == 8
    assert "fingerprint" not in capsys.readouterr().err  # nothing to warn about


def test_another_model_is_refused_naming_both(boot, tmp_path: Path) -> None:
    from actune.records.store import StoreMixError

    store = boot()
    before = store.read_bytes()
    with pytest.raises(StoreMixError) as e:
        boot(model="model-b", attempts_per_task=2)
    assert str(e.value) == (
        f"{store}: its 'react' episodes were produced differently from this run's (the first at line 1): "
        "model: stored 'model-a', this run 'model-b'. Mixed in one store they would count as one run's; use "
        "another store, or set bootstrap.allow_mixed_store=true to add to it anyway (each record keeps its own "
        "info.fingerprint)")
    assert store.read_bytes() == before


def test_another_method_shares_the_store(boot) -> None:
    store = boot()
    boot(agent=AgentConfig(method="cot", temperature=0.4))
    assert sorted({(m, model) for m, model, _ in fingerprints(store)}) == [("cot", "model-a"), ("react", "model-a")]
    assert len(fingerprints(store)) == 8


def test_an_edited_task_file_is_refused(boot, tmp_path: Path) -> None:
    """Tasks without ids are numbered by position: a task inserted at the top gives every stored record's id
    another question."""
    from actune.records.store import StoreMixError
    from actune.records.task_record import Task

    store = boot()
    write_tasks(tmp_path / "tasks.jsonl", [Task("new", "Who designed the Walkman?", "Kozo Ohsone"), *walkman_tasks()])
    with pytest.raises(StoreMixError, match=(
            rf"^{store}: its 'react' episodes were produced differently from this run's \(the first at line 1\): "
            rf"tasks: stored '[0-9a-f]{{12}}' \({tmp_path}/tasks.jsonl \(train\)\), this run '[0-9a-f]{{12}}' "
            rf"\({tmp_path}/tasks.jsonl \(train\)\): the task file's ids or questions differ \(editing a file "
            r"without ids renumbers its tasks\)\. Mixed in one store")):
        boot()


def test_the_allow_flag_mixes_and_each_record_keeps_its_fingerprint(boot, capsys) -> None:
    store = boot()
    capsys.readouterr()
    boot(model="model-b", attempts_per_task=2, allow_mixed_store=True)
    err = capsys.readouterr().err
    assert "as bootstrap.allow_mixed_store allows: model: stored 'model-a', this run 'model-b'" in err
    models = [(model, attempt) for (_, model, _), attempt in
              zip(fingerprints(store), [json.loads(x)["attempt"] for x in store.read_text().splitlines()])]
    assert sorted(set(models)) == [("model-a", 0), ("model-b", 1)]
    # a store once mixed stays mixed: resuming either producer again needs the flag
    from actune.records.store import StoreMixError

    with pytest.raises(StoreMixError, match="model: stored 'model-a', this run 'model-b'"):
        boot(model="model-b", attempts_per_task=3)


def test_per_kind_passes_with_their_own_exemplars_share_a_store(boot) -> None:
    """Quickstart's round 1: slices of one task file, each prompted with the exemplars of its own kind, into
    one store. Each task sees the exemplars of its own kind, as ``exemplar_kinds=[task]`` shows them."""
    from actune.records.store import StoreMixError

    store = boot(where={"kind": "single"}, agent=AgentConfig(temperature=0.4, exemplar_kinds=["single"]))
    boot(where={"kind": "bridge"}, agent=AgentConfig(temperature=0.4, exemplar_kinds=["bridge"]))
    boot(agent=AgentConfig(temperature=0.4, exemplar_kinds=["task"]), attempts_per_task=2)
    assert len(set(fingerprints(store))) == 1 and len(fingerprints(store)) == 8
    # a prompt that shows other exemplars is another producer
    with pytest.raises(StoreMixError, match=r": prompt: stored '[0-9a-f]{12}', this run '[0-9a-f]{12}'\. Mixed"):
        boot(agent=AgentConfig(temperature=0.4, exemplar_kinds=["single"]), attempts_per_task=3)


def test_a_run_short_of_its_target_with_episodes_never_stored_is_not_done(tmp_path, capsys):
    """An endpoint that never answers: no episode is stored, the summary is written, and the command exits 1
    naming how many episodes the rerun will run, not 0 as if the bootstrap were done."""
    from actune.world import WorldConfig, write_world

    world = tmp_path / "w"
    write_world(WorldConfig(seed=1, n_people=20, n_companies=12, n_cities=8, n_train=3, n_dev=2, n_test=2), world)
    cfg = tmp_path / "bs.yaml"
    cfg.write_text(f"bootstrap:\n  store: {tmp_path / 'out' / 'trajectories.jsonl'}\n  endpoints: [http://127.0.0.1:9/v1]\n"
                   f"  model: smollm2-135m\n  attempts_per_task: 1\n  retries: {{max_retries: 0, backoff_s: 0.01}}\n"
                   f"  tasks: {{path: {world / 'train.jsonl'}}}\n"
                   f"  env: {{corpus: {world / 'corpus.jsonl'}, index_dir: {tmp_path / 'index'}}}\n")
    assert main(["bootstrap", str(cfg), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "actune bootstrap: 3 episodes not stored: the model server failed them" in err
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["episodes"] == 0
