"""What trains after SFT: GRPO's tasks narrowed to those the SFT model's exploration solved sometimes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent.fake_episodes import DANUBE, NILE, RIGHT, WALKMAN, WRONG_LATE, scripted_store

from actune.config import ConfigError
from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.layout import Layout
from actune.quickstart.objectives import _sometimes_solved

AFTER_SFT = ["rounds=1", "after_sft=[dpo,grpo]", "grpo_tasks=sometimes"]


def _run(tmp_path: Path, logs: list[str]) -> RunContext:
    cfg = load_quickstart("smoke", AFTER_SFT)
    run = RunContext(cfg, Layout(tmp_path / "run", cfg.source), False, logs.append)
    run.layout.tasks_dir.mkdir(parents=True)
    (run.layout.tasks_dir / "train.jsonl").write_text("".join(
        json.dumps({"id": t.id, "question": t.question, "answer": t.answer}) + "\n" for t in (WALKMAN, DANUBE, NILE)))
    run.layout.explore_store("react").parent.mkdir(parents=True)
    return run


def test_grpo_plays_only_the_training_tasks_the_exploration_solved_sometimes(tmp_path: Path) -> None:
    logs: list[str] = []
    run = _run(tmp_path, logs)
    scripted_store(run.layout.explore_store("react"), [
        (WALKMAN, RIGHT), (WALKMAN, WRONG_LATE),  # solved sometimes
        (DANUBE, [" It is long.\nAction 1: finish[2,850 km]"]),  # always: every rollout rewarded alike
        (NILE, [" Guess.\nAction 1: finish[100 km]"])])  # never
    tasks = _sometimes_solved(run, "react")
    assert tasks.path == str(run.layout.objective_dir("react", "grpo") / "tasks.jsonl")
    assert [json.loads(line)["id"] for line in Path(tasks.path).read_text().splitlines()] == ["t1"]
    assert (tasks.format, tasks.split) == ("custom", "train")
    assert logs == ["train grpo react: 1 training tasks the exploration solved sometimes"]


def test_no_task_solved_sometimes_is_a_named_error(tmp_path: Path) -> None:
    run = _run(tmp_path, [])
    scripted_store(run.layout.explore_store("react"), [(NILE, [" Guess.\nAction 1: finish[100 km]"])])
    with pytest.raises(ConfigError, match=r"grpo_tasks=sometimes: the exploration \(.*explore.jsonl\) solved no "):
        _sometimes_solved(run, "react")


def test_grpo_tasks_sometimes_needs_dpos_exploration_first() -> None:
    for after_sft in ("[grpo]", "[grpo,dpo]"):
        with pytest.raises(ConfigError, match=r"grpo_tasks=sometimes picks GRPO's tasks from dpo's exploration"):
            load_quickstart("smoke", ["rounds=1", f"after_sft={after_sft}", "grpo_tasks=sometimes"])
    assert load_quickstart("smoke", AFTER_SFT).grpo_tasks == "sometimes"
