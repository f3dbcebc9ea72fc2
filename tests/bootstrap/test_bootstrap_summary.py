"""The bootstrap summary: counts per task kind over the whole store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from agent.fakes import FakeEnvironment
from collect_fakes import walkman_llm, walkman_tasks

from actune.agent import AgentConfig
from actune.bootstrap.config import BootstrapConfig
from actune.bootstrap.run import run_bootstrap
from actune.bootstrap.summary import foreign_summary, format_summary, summarize, summary_path, write_summary
from actune.collect import collect, pending_episodes
from actune.config import ConfigError
from actune.records.store import TrajectoryStore
from actune.serve.config import ServeConfig

AGENT = AgentConfig(method="react", temperature=0.4)


def _collect_walkman(path: Path) -> None:
    """Two attempts of the four walkman tasks into ``path`` (run id r1)."""

    async def go() -> None:
        with TrajectoryStore.open(path) as store:
            await collect(pending_episodes(walkman_tasks(), 2, store, AGENT.method), FakeEnvironment, walkman_llm(),
                          AGENT, store, concurrency=2, target_correct=100, run_id="r1")

    asyncio.run(go())


def test_summary_counts_per_kind(tmp_path: Path) -> None:
    path = tmp_path / "store" / "trajectories.jsonl"
    _collect_walkman(path)
    s = summarize(path, tasks=4, attempts_per_task=2, target_correct=100, run_id="r1")
    assert s["by_kind"] == {
        "bridge": {"attempts": 4, "correct": 2, "grounded": 0, "kept": 0},
        "single": {"attempts": 4, "correct": 4, "grounded": 4, "kept": 4},
    }
    assert (s["episodes"], s["correct"], s["grounded"], s["kept"], s["keep_rate"]) == (8, 6, 4, 4, 0.5)
    assert (s["tasks_with_kept"], s["target_reached"], s["run_ids"]) == (2, False, ["r1"])
    assert s["finish_reasons"] == {"answered": 8}
    assert s["kept_with_incomplete_reflections"] == 0 and "lacking a part" not in format_summary(s)
    out = write_summary(s, tmp_path / "store" / "summary.json")
    assert json.loads(out.read_text()) == s


def test_summary_of_a_subset_run_counts_tasks_over_the_whole_store(tmp_path: Path) -> None:
    # Regression (quickstart run): bootstrapping one kind at a time (tasks.where) into one store printed
    # "124 of 40 tasks have a kept episode": store-wide kept tasks over this run's task count.
    path = tmp_path / "trajectories.jsonl"
    _collect_walkman(path)
    s = summarize(path, tasks=1, attempts_per_task=2, target_correct=100, run_id="r2")
    assert (s["tasks"], s["tasks_in_store"], s["tasks_with_kept"]) == (1, 4, 2)
    assert "; 2 of 4 tasks in the store have a kept episode (this run: 1 tasks); " in format_summary(s)


def test_summary_counts_kept_reflact_episodes_whose_reflections_lack_a_part(tmp_path: Path) -> None:
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import Step, TaskRecord, Trajectory, write_trajectories

    def episode(task_id: str, reflection: str) -> Trajectory:
        t = Trajectory(task=TaskRecord(task_id, "Who makes the Walkman?", "Sony"), method="reflact",
                       steps=[Step("reflection", reflection, 1),
                              Step("answer", "FINAL ANSWER: Sony", 1, action_name="finish", action_arg="Sony")],
                       prediction="Sony", correct=True, episode_id=task_id)
        return record_verdict(t, judge(t, require_grounded=False))

    whole = "Current state: Sony makes it. Latest discovery: the maker. Goal relation: the answer."
    path = tmp_path / "trajectories.jsonl"
    write_trajectories(path, [episode("t1", "Current state: Sony makes it."), episode("t2", whole)])
    s = summarize(path, tasks=2, attempts_per_task=1, target_correct=100)
    assert (s["kept"], s["kept_with_incomplete_reflections"]) == (2, 1)
    assert format_summary(s).splitlines()[-1].startswith("1 kept ReflAct episodes have a reflection lacking a part")


def test_a_file_at_the_summarys_place_that_no_bootstrap_wrote_is_refused_before_any_episode(tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    assert foreign_summary(store) is None
    _collect_walkman(store)
    write_summary(summarize(store, tasks=3, attempts_per_task=1, target_correct=1), summary_path(store))
    assert foreign_summary(store) is None  # a bootstrap's own: replaced by the next run
    summary_path(store).write_text('{"experiment": "mine"}')
    assert foreign_summary(store) == tmp_path / "summary.json"
    cfg = BootstrapConfig(store=store, tasks={"path": str(tmp_path / "no-tasks.jsonl")})
    with pytest.raises(ConfigError, match=r"summary.json: exists and is not a bootstrap summary"):
        run_bootstrap(cfg, ServeConfig(), show_progress=False)  # before the tasks are read, or any server started
    assert summary_path(store).read_text() == '{"experiment": "mine"}'
