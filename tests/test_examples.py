"""The examples a user copies: their configs load, their tasks parse, and their pages hold what the tasks name."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.cli.run_config import RunConfig
from actune.config import load_config
from actune.envs.corpus import read_corpus
from actune.tasks.loading import load_tasks

OWN_TASK = Path(__file__).resolve().parents[1] / "examples" / "own-task"


def test_the_own_task_example_loads_and_its_splits_share_no_page(monkeypatch) -> None:
    monkeypatch.chdir(OWN_TASK.parents[1])  # the config's paths are the repository root's
    run = load_config(RunConfig, OWN_TASK / "run.yaml")
    titles = {title for title, _ in read_corpus(run.bootstrap.env.corpus)}
    train, test = load_tasks(run.bootstrap.tasks), load_tasks(run.eval.tasks)
    assert (len(train), len(test)) == (3, 3)
    pages = {split: {p for t in tasks for p in t.meta["supporting_titles"]} for split, tasks in
             (("train", train), ("test", test))}
    assert pages["train"] | pages["test"] <= titles
    assert pages["train"].isdisjoint(pages["test"])  # as the example's README asks of a user's splits
    assert {t.id for t in train}.isdisjoint(t.id for t in test)
    assert run.eval.env.corpus == run.bootstrap.env.corpus


# --- examples/inventory: a tool environment of your own ---------------------------------------------------------

INVENTORY = OWN_TASK.parent / "inventory"
INVENTORY_ENV = "examples.inventory.inventory_env:make_env"


def test_the_inventory_example_loads_and_its_tasks_rest_on_what_the_env_shows(monkeypatch) -> None:
    from actune.agent.exemplars import load_exemplars
    from actune.envs.base import Action
    from actune.envs.factory import make_env

    monkeypatch.chdir(INVENTORY.parents[1])  # the config's paths and its import path are the repository root's
    run = load_config(RunConfig, INVENTORY / "run.yaml")
    assert run.bootstrap.env == run.eval.env and run.bootstrap.env.name == INVENTORY_ENV
    env = make_env(run.bootstrap.env)
    shown = {f"shelf {shelf}" for shelf in env.shelves} | {i.item for i in env.items}
    train, test = load_tasks(run.bootstrap.tasks), load_tasks(run.eval.tasks)
    assert (len(train), len(test)) == (8, 4) and {t.env for t in train + test} == {env.name}
    pages = {split: {p for t in tasks for p in t.meta["supporting_titles"]} for split, tasks in
             (("train", train), ("test", test))}
    assert pages["train"] | pages["test"] <= shown
    assert pages["train"].isdisjoint(pages["test"])
    exemplars = load_exemplars(run.bootstrap.agent.exemplar_set)
    for ex in exemplars.exemplars:  # every exemplar observation is what the env answers, on items no task asks about
        env.reset(train[0])
        for s in ex.steps:
            name, _, arg = s.action.partition("[")
            r = env.step(Action(name, arg.removesuffix("]")))
            assert r.observation == (s.observation or "Episode finished.")
            assert not set(r.info.get("titles", [])) & (pages["train"] | pages["test"])
    assert {e.kind for e in exemplars.exemplars} == {t.meta["kind"] for t in train}


def test_a_teacher_set_imports_with_the_inventorys_own_actions(tmp_path, monkeypatch, capsys) -> None:
    import json

    from actune.bootstrap.export import kept_records
    from actune.cli import main
    from actune.envs.config import EnvConfig
    from actune.envs.factory import make_env

    monkeypatch.chdir(INVENTORY.parents[1])
    source = tmp_path / "teacher.jsonl"
    source.write_text(json.dumps({"messages": [
        {"role": "user", "content": "How many units of cordless drill are in stock?"},
        {"role": "assistant", "content": "Thought: I need to look up the cordless drill.\nAction: lookup[cordless drill]"},
        {"role": "user", "content": "Observation: cordless drill (SKU CD-18): 4 in stock, 89.00 EUR each, on shelf "
                                    "C1, supplied by Voltra."},
        {"role": "assistant", "content": "Thought: It has 4 in stock.\nAction: finish[4]"},
        {"role": "user", "content": "Observation: Episode finished."}]}) + "\n")
    store = tmp_path / "imported.jsonl"
    assert main(["import", str(source), "--format", "openai", "--env", INVENTORY_ENV, "--store", str(store)]) == 0
    assert "1 imported" in capsys.readouterr().out
    (traj,) = kept_records(store)
    actions = make_env(EnvConfig(name=INVENTORY_ENV)).describe_actions()
    assert (traj.task.env, traj.info["prompt"]["env"]) == ("inventory", "inventory")
    assert traj.info["prompt"]["instruction"].endswith("Action can be one of:\n" + actions)
    assert [(s.action_name, s.action_arg) for s in traj.steps if s.type in ("action", "answer")] == [
        ("lookup", "cordless drill"), ("finish", "4")]


def test_export_converts_records_with_the_custom_envs_actions(tmp_path, monkeypatch) -> None:
    """A CoT record becomes ReAct steps under a ReAct instruction no record carries: export builds the env that
    ``bootstrap.env.name`` (an import path) names and reads its actions, though the records say ``inventory``."""
    import asyncio
    import json

    import yaml
    from agent.fakes import ScriptedLLM

    from actune.agent import AgentConfig, run_episode
    from actune.cli import main
    from actune.envs.factory import make_env
    from actune.judge import judge, record_verdict
    from actune.records.store import TrajectoryStore

    monkeypatch.chdir(INVENTORY.parents[1])
    run = load_config(RunConfig, INVENTORY / "run.yaml")
    env = make_env(run.bootstrap.env)
    task = load_tasks(run.bootstrap.tasks)[0]
    store = tmp_path / "trajectories.jsonl"
    traj = asyncio.run(run_episode(task, env, ScriptedLLM([" The list says 240.\nAnswer: 240"]),
                                   AgentConfig(method="cot", regime="zero_shot")))
    with TrajectoryStore.open(store) as st:
        st.append(record_verdict(traj, judge(traj)))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"bootstrap": {"store": str(store), "env": run.bootstrap.env.model_dump()},
                                   "train": {"dataset": str(tmp_path / "ds")}}))
    out = tmp_path / "out.jsonl"
    assert main(["export", str(cfg), "--format", "openai", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["messages"][0]["content"].endswith("Action can be one of:\n" + env.describe_actions())
    assert row["messages"][-1]["content"].endswith("finish[240]")


@pytest.mark.server
def test_the_inventory_example_runs_every_stage_on_the_real_model(vllm_server, tmp_path, monkeypatch, capsys) -> None:
    """The example's run.yaml through bootstrap -> export -> train (two tiny steps) -> eval on the embedded model,
    with only where it writes, the session server and a tiny recipe changed. A teacher's record imported with
    ``--env`` the example's import path joins the export, so a model too small to keep an episode still trains."""
    import json

    import yaml

    from actune.bootstrap.export import kept_records
    from actune.cli import main
    from actune.records.trajectory import read_trajectories

    monkeypatch.chdir(INVENTORY.parents[1])  # where a user runs it: the import path and data paths are the root's
    out = tmp_path / "runs"
    teacher, teacher_store = tmp_path / "teacher.jsonl", out / "teacher.jsonl"
    teacher.write_text(json.dumps({"messages": [
        {"role": "user", "content": "How many units of hex bolt M6 are in stock?"},
        {"role": "assistant", "content": "Thought: I need to look up the hex bolt M6.\nAction: lookup[hex bolt M6]"},
        {"role": "user", "content": "Observation: hex bolt M6 (SKU HB-M6): 240 in stock, 0.12 EUR each, on shelf A1, "
                                    "supplied by Norfast."},
        {"role": "assistant", "content": "Thought: It has 240 in stock.\nAction: finish[240]"}]}) + "\n")
    assert main(["import", str(teacher), "--format", "openai", "--env", INVENTORY_ENV,
                 "--store", str(teacher_store)]) == 0
    run = yaml.safe_load((INVENTORY / "run.yaml").read_text())
    served = {"endpoints": [vllm_server.base_url], "model": vllm_server.model}
    run["bootstrap"].update(store=str(out / "trajectories.jsonl"), concurrency=4, attempts_per_task=2,
                            export={"stores": [str(teacher_store)]}, **served)
    run["bootstrap"]["tasks"]["limit"] = 4
    run["bootstrap"]["agent"].update(max_tokens=48, episode_steps=4)
    run["train"].update(base_model=str(vllm_server.model_path), dataset=str(out / "dataset"),
                        output_dir=str(out / "adapter"), lora={"r": 4, "alpha": 8, "dropout": 0.0},
                        learning_rate=2e-3, warmup_ratio=0.0, max_steps=2, per_device_train_batch_size=2,
                        max_length=512, dtype="float32", eval_fraction=0, save_steps=1000)
    run["eval"].update(out_dir=str(out / "eval"), endpoints=[vllm_server.base_url], concurrency=3,
                       bootstrap_samples=100,
                       models=[{"label": "prompted", "model": vllm_server.model},
                               {"label": "tuned", "model": vllm_server.model, "adapter": str(out / "adapter")}])
    run["eval"]["tasks"]["limit"] = 2
    run["eval"]["agent"].update(max_tokens=48, episode_steps=4)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump(run))

    assert main(["bootstrap", str(cfg), "--no-progress"]) in (0, 3), capsys.readouterr().err  # 3: it kept nothing
    episodes = list(read_trajectories(out / "trajectories.jsonl"))
    assert len(episodes) == 8 and (out / "summary.json").is_file()
    assert all(t.task.env == "inventory" and t.finish_reason != "server_error" for t in episodes)
    assert all(t.info["prompt"]["instruction"].endswith("finish[answer]: returns the answer and finishes the task.")
               for t in episodes)
    assert main(["export", str(cfg)]) == 0, capsys.readouterr().err
    assert (out / "dataset" / "export_summary.json").is_file()
    assert json.loads((out / "dataset" / "export_summary.json").read_text())["exported"] >= len(kept_records(
        teacher_store))
    assert main(["train", str(cfg)]) == 0, capsys.readouterr().err
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert main(["eval", str(cfg), "--no-progress"]) == 0, capsys.readouterr().err
    report = json.loads((out / "eval" / "report.json").read_text())
    assert [m["label"] for m in report["models"]] == ["prompted", "tuned"]
    assert all(m["episodes"] == 2 for m in report["models"])
    assert (out / "eval" / "report.md").is_file()


# --- examples/trl_environment: TRL's environment form, both ways ------------------------------------------------

TRL_ENV = OWN_TASK.parent / "trl_environment"


def test_the_trl_environment_example_plays_in_actunes_loop(monkeypatch) -> None:
    import asyncio

    from agent.fakes import ScriptedLLM

    from actune.agent import AgentConfig, run_episode
    from actune.envs.factory import make_env

    monkeypatch.chdir(TRL_ENV.parents[1])
    run = load_config(RunConfig, TRL_ENV / "run.yaml")
    env = make_env(run.bootstrap.env)
    assert env.name == "counter" and env.action_names == ("add", "finish")
    task = load_tasks(run.bootstrap.tasks)[1]
    llm = ScriptedLLM([" Add 7.\nAction 1: add[7]", " Add 5.\nAction 2: add[5]", " 12.\nAction 3: finish[12]"])
    traj = asyncio.run(run_episode(task, env, llm, AgentConfig(method="react", regime="zero_shot"), run_id="r"))
    assert [s.text for s in traj.steps if s.type == "observation"][:2] == ["The total is 7.", "The total is 12."]
    assert traj.correct


def test_the_grpo_example_trains_two_steps_of_plain_trl(embedded_model, monkeypatch, tmp_path, capsys) -> None:
    import runpy
    import sys

    monkeypatch.chdir(TRL_ENV.parents[1])
    monkeypatch.setattr(sys, "argv", ["grpo_on_wiki.py", str(embedded_model), str(tmp_path / "grpo")])
    runpy.run_path(str(TRL_ENV / "grpo_on_wiki.py"), run_name="__main__")
    assert "trained 2 GRPO steps on actune's wiki environment (tools: " in capsys.readouterr().out


# --- examples/verifiers_environment: actune's wiki environment as a verifiers 0.4 environment ----------------------

def test_the_verifiers_example_evaluates_the_wiki_environment(vllm_server, monkeypatch, capsys) -> None:
    import runpy
    import sys

    pytest.importorskip("verifiers.v1")
    monkeypatch.chdir(TRL_ENV.parents[1])
    monkeypatch.setattr(sys, "argv", ["evaluate.py", vllm_server.base_url, vllm_server.model, "2"])
    runpy.run_path(str(TRL_ENV.parent / "verifiers_environment" / "evaluate.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "verifiers episodes of actune's wiki environment: 2, mean reward " in out
    assert out.count(": correct ") == 2
