"""collect(): concurrent episodes through the real agent loop (fake model and env), judged and stored;
interruption leaves no torn line and no duplicate; the target stops it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent.fakes import FakeEnvironment
from collect_fakes import PacedScriptedLLM, walkman_llm, walkman_tasks

from actune.agent import AgentConfig
from actune.collect import CollectError, collect, pending_episodes
from actune.judge import verdict_of
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import Trajectory, read_trajectories

AGENT = AgentConfig(method="react", temperature=0.4)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_interrupted_collect_resumes_without_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    tasks = walkman_tasks()
    llm1 = walkman_llm()

    async def interrupted() -> int:
        with TrajectoryStore.open(path) as store:
            todo = pending_episodes(tasks, 3, store, AGENT.method)
            assert len(todo) == 12
            job = asyncio.create_task(collect(todo, FakeEnvironment, llm1, AGENT, store, concurrency=3,
                                              target_correct=1000, run_id="first"))
            while store.records < 5:
                await asyncio.sleep(0)
            job.cancel()  # what Ctrl-C does to asyncio.run's main task
            with pytest.raises(asyncio.CancelledError):
                await job
            return store.records

    n1 = asyncio.run(interrupted())
    lines = _lines(path)
    assert len(lines) == n1 and 5 <= n1 < 12
    assert path.read_bytes().endswith(b"\n")
    # episodes in flight at the cancel had asked the model but were not written
    assert len(llm1.calls) > 2 * n1

    llm2 = walkman_llm()

    async def resumed() -> None:
        with TrajectoryStore.open(path) as store:
            assert (store.cut_bytes, store.records) == (0, n1)
            todo = pending_episodes(tasks, 3, store, AGENT.method)
            assert len(todo) == 12 - n1
            res = await collect(todo, FakeEnvironment, llm2, AGENT, store, concurrency=3, target_correct=1000,
                                run_id="second")
            assert (res.written, res.failed, res.target_reached) == (12 - n1, 0, False)

    asyncio.run(resumed())
    assert len(llm2.calls) == 2 * (12 - n1)  # nothing done twice: two model calls per remaining episode
    records = list(read_trajectories(path))
    keys = [(t.task.id, t.attempt) for t in records]
    assert len(keys) == 12 and set(keys) == {(f"t{i}", a) for i in range(4) for a in range(3)}
    # kept: t0 and t1 (correct, grounded), 3 attempts each; t3 is correct but ungrounded; t2 wrong
    assert sum(verdict_of(t).kept for t in records) == 6
    assert sum(verdict_of(t).correct for t in records) == 9
    assert {t.run_id for t in records} == {"first", "second"}
    for line in _lines(path):
        assert Trajectory.from_json(line).to_json() == line
    # attempts have distinct seeds, stable across the interruption
    seeds = {(t.task.id, t.attempt): t.sampling.seed for t in records}
    assert len(set(seeds.values())) == 12


def test_methods_share_a_store_and_cot_is_kept_without_reading_pages(tmp_path: Path) -> None:
    """ReAct and CoT episodes of the same tasks and attempts are different episodes of one store; CoT reads
    no pages, so grounding does not apply to it: a right CoT answer is kept even on t3 (whose Sony page
    ReAct never reads), a wrong one (t2) is not."""
    path = tmp_path / "trajectories.jsonl"
    tasks = walkman_tasks()
    cot = AgentConfig(method="cot", temperature=0.4)
    cot_llm = PacedScriptedLLM([" Walkman is made by Sony.\nAnswer: Sony"] * 100)

    async def go() -> None:
        with TrajectoryStore.open(path) as store:
            await collect(pending_episodes(tasks, 2, store, "react"), FakeEnvironment, walkman_llm(), AGENT, store,
                          concurrency=2, target_correct=100, run_id="react")
            assert pending_episodes(tasks, 2, store, "react") == []
            todo = pending_episodes(tasks, 2, store, "cot")  # ReAct's episodes are not CoT's
            assert [(t.id, a) for t, a in todo] == [(f"t{i}", a) for a in range(2) for i in range(4)]
            res = await collect(todo, FakeEnvironment, cot_llm, cot, store, concurrency=2, target_correct=100,
                                run_id="cot")
            assert (res.written, res.kept, store.records, store.kept) == (8, 6, 16, 10)

    asyncio.run(go())
    records = list(read_trajectories(path))
    assert {(t.task.id, t.method, t.attempt) for t in records} == \
        {(f"t{i}", m, a) for i in range(4) for m in ("react", "cot") for a in range(2)}
    kept = {(t.task.id, t.method) for t in records if verdict_of(t).kept}
    assert kept == {("t0", "react"), ("t1", "react"), ("t0", "cot"), ("t1", "cot"), ("t3", "cot")}
    for t in records:
        v = verdict_of(t)
        assert v.grounding_applies == (t.method == "react")
        if t.method == "cot":
            assert (v.grounded, v.grounding_checked, v.missing_titles) == (False, False, [])


def test_collect_stops_at_the_target(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    tasks = walkman_tasks()

    async def go(target: int):
        with TrajectoryStore.open(path) as store:
            res = await collect(pending_episodes(tasks, 3, store, AGENT.method), FakeEnvironment, llm, AGENT, store,
                                concurrency=4, target_correct=target, run_id="r")
            return res, store.kept

    llm = walkman_llm()
    res, kept = asyncio.run(go(3))
    assert res.target_reached and res.kept == 3 and kept == 3
    records = list(read_trajectories(path))
    assert len(records) == res.written and sum(verdict_of(t).kept for t in records) == 3
    assert len(records) < 12
    # already at the target: nothing runs
    llm = walkman_llm()
    res2, kept2 = asyncio.run(go(3))
    assert (res2.written, res2.target_reached, kept2, len(llm.calls)) == (0, True, 3, 0)
    # a higher target resumes from there
    res3, kept3 = asyncio.run(go(5))
    assert res3.target_reached and kept3 == 5
    assert len(list(read_trajectories(path))) == len(records) + res3.written


def test_a_failing_episode_is_skipped_and_retried_later(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    from agent.fakes import ScriptedLLM

    class Refused(Exception):
        pass

    # the first request raises an unexpected error (e.g. an HTTP 400): that episode is not written
    llm = ScriptedLLM([Refused("bad request")] + [r for r in walkman_llm().replies])
    messages: list[str] = []

    async def go(max_failed: int):
        with TrajectoryStore.open(path) as store:
            return await collect(pending_episodes(walkman_tasks()[:2], 1, store, AGENT.method), FakeEnvironment, llm,
                                 AGENT, store, concurrency=1, target_correct=100, max_failed=max_failed,
                                 log=messages.append)

    res = asyncio.run(go(5))
    assert (res.written, res.failed) == (1, 1)
    assert messages == ["bootstrap: episode (task 't0', attempt 0) failed: Refused: bad request"]
    res = asyncio.run(go(5))  # the rerun retries it
    assert (res.written, res.failed) == (1, 0)
    assert len(_lines(path)) == 2
    # too many failures abort
    llm = ScriptedLLM([Refused("x")] * 3)
    path.unlink()
    with pytest.raises(CollectError, match="more than 1 episodes failed; the last: Refused: x"):
        asyncio.run(go(1))


def test_a_store_failure_stops_collection_and_is_raised(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"

    async def go() -> None:
        with TrajectoryStore.open(path) as store:
            store.append = _failing_append(store.append, after=2)
            await collect(pending_episodes(walkman_tasks(), 3, store, AGENT.method), FakeEnvironment, walkman_llm(),
                          AGENT, store, concurrency=3, target_correct=100)

    with pytest.raises(OSError, match="disk full"):
        asyncio.run(go())
    assert len(_lines(path)) == 2


def _failing_append(append, after: int):
    n = [0]

    def fake_append(traj):
        if n[0] >= after:
            raise OSError(28, "disk full")
        n[0] += 1
        append(traj)

    return fake_append


def test_a_server_error_is_retried_and_never_stored(tmp_path: Path) -> None:
    """Regression: a dying server ended episodes as ``server_error``; they were stored as done and never
    retried (12 of 12 stored, 0 pending after resume)."""
    from agent.fakes import ScriptedLLM

    from actune.llm import ServerError

    path = tmp_path / "trajectories.jsonl"
    # t0's first request fails through the client's retries; the episode runs again and succeeds
    llm = ScriptedLLM([ServerError("connection refused")] + list(walkman_llm().replies))
    messages: list[str] = []

    async def go(tasks: list[Task], max_failed: int):
        with TrajectoryStore.open(path) as store:
            return await collect(pending_episodes(tasks, 1, store, AGENT.method), FakeEnvironment, llm, AGENT,
                                 store, concurrency=1, target_correct=100, max_failed=max_failed,
                                 log=messages.append, retry_pause_s=0)

    res = asyncio.run(go(walkman_tasks()[:2], 5))
    assert (res.written, res.failed, res.server_errors, res.retried) == (2, 1, 1, 1)
    assert res.server_lost == 0  # run again in this call and stored: not left to a rerun
    assert messages == ["bootstrap: episode (task 't0', attempt 0) lost its model server: connection refused; "
                        "not stored, run again after a pause"]
    records = list(read_trajectories(path))
    assert [(t.task.id, t.finish_reason) for t in records] == [("t0", "answered"), ("t1", "answered")]

    # a dead server: nothing is stored, and the run stops instead of draining the queue
    path.unlink()
    llm = ScriptedLLM([ServerError("dead")] * 50)
    with pytest.raises(CollectError, match="more than 3 episodes failed; the last: ServerFailedError: dead"):
        asyncio.run(go(walkman_tasks(), 3))
    assert _lines(path) == []
    with TrajectoryStore.open(path) as store:
        assert len(pending_episodes(walkman_tasks(), 1, store, AGENT.method)) == 4  # all still to do


def test_collect_stamps_its_fingerprint_into_every_record(tmp_path: Path) -> None:
    from actune.collect import producer_fingerprint
    from actune.records.trajectory import ModelRecord

    path = tmp_path / "trajectories.jsonl"
    tasks = walkman_tasks()
    fp = producer_fingerprint(ModelRecord(name="m"), AGENT, "wiki", {"task_file": "t.jsonl", "tasks": "h"}, tasks)

    async def go() -> None:
        with TrajectoryStore.open(path) as store:
            await collect(pending_episodes(tasks, 1, store, AGENT.method), FakeEnvironment, walkman_llm(), AGENT,
                          store, concurrency=2, target_correct=100, fingerprint=fp)
            assert store.state.check_producer(path, "react", fp) == []  # the handle knows what it appended

    asyncio.run(go())
    assert [t.info["fingerprint"] for t in read_trajectories(path)] == [fp] * 4


def test_the_fingerprint_changes_with_what_changes_the_prompt_only() -> None:
    from actune.collect import producer_fingerprint
    from actune.records.trajectory import ModelRecord

    tasks = walkman_tasks()
    files = {"task_file": "t.jsonl", "tasks": "h"}

    def fp(agent: AgentConfig, env: str = "wiki", of: list[Task] = tasks, **kw) -> dict:
        return producer_fingerprint(ModelRecord(name="m", adapter=kw.pop("adapter", None)), agent, env, files, of,
                                    **kw)

    base = fp(AGENT)
    assert base == {"version": 1, "model": "m", "adapter": None, "regime": "few_shot", "wire": "text",
                    "exemplar_set": "wiki", "prompt": base["prompt"], "task_file": "t.jsonl", "tasks": "h"}
    assert fp(AGENT, base="org/base")["base"] == "org/base"
    assert fp(AGENT.model_copy(update={"temperature": 0.9, "episode_steps": 3})) == base  # sampling, budgets
    assert fp(AGENT.model_copy(update={"chat_prefill": False})) == base  # no prefill on the text wire
    assert fp(AGENT.model_copy(update={"num_exemplars": 2}))["prompt"] != base["prompt"]
    assert fp(AGENT, env="fever")["exemplar_set"] == "fever"
    zero = AgentConfig(regime="zero_shot")
    assert fp(zero)["exemplar_set"] is None
    assert fp(zero.model_copy(update={"exemplar_kinds": ["bridge"], "num_exemplars": 1})) == fp(zero)
    assert fp(zero.model_copy(update={"wire": "chat"}))["prompt"] != fp(zero.model_copy(update={
        "wire": "chat", "chat_prefill": False}))["prompt"]
    # [K] on tasks all of kind K shows each task its own kind's exemplars, as [task] does
    bridges = [t for t in tasks if t.meta["kind"] == "bridge"]
    typed = AGENT.model_copy(update={"exemplar_kinds": ["task"]})
    assert fp(AGENT.model_copy(update={"exemplar_kinds": ["bridge"]}), of=bridges) == fp(typed, of=bridges)
    assert fp(AGENT.model_copy(update={"exemplar_kinds": ["bridge"]})) != fp(typed)
    # the kind is the loop's (actune.agent.loop.task_kind): an ALFWorld game names it task_type
    games = [Task(id=f"g{i}", question="put a mug in the sink", env="alfworld", meta={"task_type": "put"})
             for i in range(2)]
    assert fp(AGENT.model_copy(update={"exemplar_kinds": ["put"]}), of=games) == fp(typed, of=games)


def test_the_task_file_hash_is_of_the_whole_file_and_its_ids(tmp_path: Path) -> None:
    import json

    from actune.collect import task_file_id
    from actune.tasks.config import TaskConfig
    from actune.tasks.loading import load_tasks

    path = tmp_path / "tasks.jsonl"
    rows = [{"question": t.question, "answer": t.answer, "meta": t.meta} for t in walkman_tasks()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = TaskConfig(format="custom", path=str(path), split="train")
    whole = task_file_id(cfg, load_tasks(cfg))
    assert whole["task_file"] == f"{path} (train)"
    sliced = cfg.model_copy(update={"where": {"kind": "bridge"}, "limit": 1})
    assert task_file_id(sliced, load_tasks(sliced)) == whole  # a slice of the same file
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[1:] + rows[:1]))  # positional ids move
    assert task_file_id(cfg, load_tasks(cfg))["tasks"] != whole["tasks"]
    path.write_text("".join(json.dumps({**r, "id": f"q{i}"}) + "\n" for i, r in enumerate(rows)))
    with_ids = task_file_id(cfg, load_tasks(cfg))
    path.write_text("".join(json.dumps({**r, "id": f"q{i}", "answer": "edited"}) + "\n"
                            for i, r in reversed(list(enumerate(rows)))))
    assert task_file_id(cfg, load_tasks(cfg)) == with_ids  # reordered by id, answers fixed: same tasks


def test_a_config_no_episode_can_run_with_stops_the_run_as_one_named_error(tmp_path: Path) -> None:
    # the wiki exemplars shown to an environment without search: every episode would fail alike, so the first
    # one stops the run with the check's ConfigError instead of being logged and retried max_failed times
    from actune.config import ConfigError

    def no_search() -> FakeEnvironment:  # the FAKE encyclopedia without the search the wiki exemplars use
        return FakeEnvironment(action_names=("lookup", "finish"))

    tasks = walkman_tasks()
    agent = AgentConfig(method="react", exemplar_set="wiki")
    with TrajectoryStore.open(tmp_path / "s.jsonl") as store:
        with pytest.raises(ConfigError, match="search"):
            asyncio.run(collect(pending_episodes(tasks, 1, store, "react"), no_search, walkman_llm(), agent, store,
                                concurrency=2, target_correct=100))
        assert store.state.done == set()
