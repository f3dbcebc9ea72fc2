"""GRPO over the agent loop: rewards with exact values, an episode's tokens and env mask, the rollout batch's
attempts, the config's batch check, and a real two-step GRPO run whose rollouts are served by the real server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent.fake_episodes import RIGHT, WALKMAN, WRONG_EARLY, WRONG_LATE, scripted_episode
from pydantic import ValidationError

from actune.agent.render import render_text, trajectory_prompt_context
from actune.judge import verdict_of
from actune.train.config import GrpoReward, TrainConfig
from actune.train.rollouts import episode_reward, episode_tokens, group_attempts, rollout_reward


@pytest.fixture(scope="module")
def tokenizer(embedded_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(embedded_model)


def test_the_reward_is_the_verdict_less_a_penalty_per_unreadable_action():
    right, late, early = (scripted_episode(WALKMAN, r, 0) for r in (RIGHT, WRONG_LATE, WRONG_EARLY))
    default = GrpoReward()
    assert [episode_reward(t, verdict_of(t), default) for t in (right, late, early)] == [1.0, 0.0, -0.1]
    shaped = GrpoReward(kept=2.0, wrong=-0.5, unreadable_action=0.25)
    assert [episode_reward(t, verdict_of(t), shaped) for t in (right, late, early)] == [2.0, -0.5, -0.75]


def test_an_episodes_tokens_are_the_rendered_text_and_only_the_models_steps_are_unmasked(tokenizer):
    traj = scripted_episode(WALKMAN, WRONG_EARLY, 0)
    enc = episode_tokens(tokenizer, traj)
    text = render_text(trajectory_prompt_context(traj), traj.steps)
    assert enc["prompt_ids"] + enc["completion_ids"] == tokenizer(text)["input_ids"]
    assert tokenizer.decode(enc["prompt_ids"]) == render_text(trajectory_prompt_context(traj), [])
    assert len(enc["env_mask"]) == len(enc["completion_ids"])
    trained = tokenizer.decode([t for t, m in zip(enc["completion_ids"], enc["env_mask"]) if m])
    untrained = tokenizer.decode([t for t, m in zip(enc["completion_ids"], enc["env_mask"]) if not m])
    observations = [s.text for s in traj.steps if s.type == "observation"]
    assert observations and all(o.strip() in untrained for o in observations)
    assert not any(o.strip()[:20] in trained for o in observations)
    assert "look up Walkman" in trained  # the unreadable action takes its penalty's push


def test_each_rows_attempt_counts_the_tasks_earlier_rows():
    assert group_attempts(["a", "a", "b", "b", "a"]) == [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("a", 2)]


def test_the_reward_function_hands_back_the_rollouts_rewards():
    assert rollout_reward(["p"] * 3, ["c"] * 3, reward=[1.0, None, -0.1], trainer_state=None) == [1.0, None, -0.1]
    with pytest.raises(ValueError, match="no 'reward' field"):
        rollout_reward(["p"], ["c"])


def test_a_rollout_batch_must_split_into_whole_optimizer_steps():
    with pytest.raises(ValidationError, match="6 episodes a rollout.*multiple of.*4"):
        TrainConfig(objective="grpo", grpo={"tasks_per_step": 3, "num_generations": 2}, per_device_train_batch_size=4)
    TrainConfig(objective="sft", grpo={"tasks_per_step": 3, "num_generations": 2}, per_device_train_batch_size=4)


@pytest.mark.server
def test_two_real_grpo_steps_with_rollouts_on_the_real_server(vllm_server, embedded_model, tmp_path: Path):
    from actune.agent.config import AgentConfig
    from actune.envs.config import EnvConfig
    from actune.records.trajectory import read_trajectories
    from actune.serve.adapters import adapter_name
    from actune.serve.config import ServeConfig
    from actune.serve.server import Serving
    from actune.tasks.config import TaskConfig
    from actune.train.grpo import RolloutSpec, train_grpo
    from actune.world import WorldConfig, write_world

    world = tmp_path / "world"
    write_world(WorldConfig(seed=0, n_people=20, n_companies=12, n_cities=8, n_train=10, n_dev=2, n_test=2), world)
    spec = RolloutSpec(tasks=TaskConfig(format="custom", path=str(world / "train.jsonl"), split="train", limit=4),
                       env=EnvConfig(name="wiki", corpus=str(world / "corpus.jsonl"), index_dir=str(tmp_path / "idx")),
                       agent=AgentConfig(method="react", exemplar_set="world", num_exemplars=2, max_tokens=40,
                                         episode_steps=3))
    cfg = TrainConfig(objective="grpo", base_model=str(embedded_model), output_dir=tmp_path / "grpo", max_steps=2,
                      per_device_train_batch_size=4, lora={"r": 8, "alpha": 16}, dtype="float32", save_steps=1,
                      grpo={"tasks_per_step": 2, "num_generations": 2, "concurrency": 4}, max_length=1024)
    served = Serving([vllm_server.base_url], vllm_server.model)
    lines: list[str] = []
    meta = train_grpo(cfg, spec, ServeConfig(), served=served, log=lines.append)

    assert meta["steps"] == 2 and len(meta["rewards"]) == 2
    stores = sorted((tmp_path / "grpo.rollouts").glob("step-*.jsonl"))
    assert [p.name for p in stores] == ["step-00000.jsonl", "step-00001.jsonl"]
    for store in stores:
        records = list(read_trajectories(store))
        assert len(records) == 4 and len({r.task.id for r in records}) == 2
        assert sorted(r.attempt for r in records) == [0, 0, 1, 1]
        assert all(r.model.name.startswith("grpo-") and r.model.name in {x.model.name for x in records}
                   for r in records)
        assert all(r.finish_reason != "server_error" for r in records)
    # each step played the weights it had then, under the name hashed from them (the same name when a step whose
    # groups all scored alike left the weights as they were)
    for step, store in enumerate(stores):
        weights = tmp_path / "grpo.rollouts" / "adapters" / f"step-{step:05d}"
        assert {r.model.name for r in read_trajectories(store)} == {adapter_name("grpo", weights)}
    progress = [line for line in lines if line.startswith("grpo step")]
    assert len(progress) == 2 and all("reward" in p and "kept" in p and "tok/s" in p for p in progress)
    saved = json.loads((tmp_path / "grpo" / "training_meta.json").read_text())
    assert saved["objective"] == "grpo" and saved["steps"] == 2 and len(saved["losses"]) == 2
    assert (tmp_path / "grpo" / "adapter_model.safetensors").is_file()
    assert (tmp_path / "grpo" / "actune_prompt.json").is_file()
    trained = {r.task.id for store in stores for r in read_trajectories(store)}
    assert {t["id"] for t in json.loads((tmp_path / "grpo" / "training_tasks.json").read_text())} >= trained
    card = (tmp_path / "grpo" / "README.md").read_text()
    assert "fine-tuned with TRL's `GRPOTrainer` on episodes the model itself played" in card
    assert "\n- grpo\n" in card and f"- The episodes: `{tmp_path / 'grpo.rollouts'}`" in card


def test_a_step_with_unchanged_weights_keeps_its_adapter_loaded(monkeypatch, tmp_path: Path, tokenizer):
    """Fakes stand in for the server's adapter routes and the episodes: only the rollout's bookkeeping is tested."""
    import actune.serve.adapters as adapters
    import actune.train.rollouts as rollouts
    from actune.train.config import GrpoSettings

    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(adapters, "served_models", lambda url, key=None: [n for op, n in calls if op == "load"])
    monkeypatch.setattr(adapters, "load_adapter", lambda url, name, folder, key=None: calls.append(("load", name)))
    monkeypatch.setattr(adapters, "unload_adapter", lambda url, name, key=None: calls.append(("unload", name)))
    monkeypatch.setattr(adapters, "adapter_name", lambda label, folder: "grpo-same")
    monkeypatch.setattr(rollouts, "_play", lambda *a, **k: None)
    monkeypatch.setattr(rollouts, "_save_adapter", lambda trainer, folder: None)
    setup = rollouts.RolloutSetup(tasks={WALKMAN.id: WALKMAN}, env=None, agent=None, endpoints=["http://x/v1"],
                                  store_dir=tmp_path)
    rollout = rollouts.make_rollout_func(setup, GrpoSettings(), log=lambda m: None)
    for step in (0, 1):
        (tmp_path / f"step-{step:05d}.jsonl").write_text("")
        trainer = type("T", (), {"processing_class": tokenizer,
                                 "state": type("S", (), {"global_step": step})()})()
        out = rollout([WALKMAN.id, WALKMAN.id], trainer)
        assert out["reward"] == [None, None] and out["env_mask"] == [[0], [0]]  # no episode played: no loss
    assert calls == [("load", "grpo-same")]
