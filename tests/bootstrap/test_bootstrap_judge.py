"""The judge: correct, grounded (pages actually read, normalised) and well-ordered -> kept."""

from __future__ import annotations

import asyncio

from agent.fakes import FakeEnvironment, ScriptedLLM
from bootstrap_fakes import FINISH, SEARCH

from actune.agent import AgentConfig, run_episode
from actune.bootstrap.judge import judge, record_verdict, titles_read, verdict_of
from actune.task import Task
from actune.trajectory import Step, TaskRecord, Trajectory


def _traj(supporting, titles, *, correct=True, steps=None, extra_info=None) -> Trajectory:
    meta = {"kind": "bridge"} if supporting is None else {"kind": "bridge", "supporting_titles": supporting}
    steps = steps if steps is not None else [
        Step("thought", "search first", 1), Step("action", "search[A]", 1, "search", "A"),
        Step("observation", "A is ...", 1),
        Step("thought", "done", 2), Step("answer", "finish[X]", 2, "finish", "X"),
    ]
    info = {"env_info": {"titles": list(titles), **(extra_info or {})}}
    return Trajectory(task=TaskRecord("t1", "q?", "X", meta=meta), method="react", steps=steps, prediction="X",
                      correct=correct, info=info)


def test_grounded_compares_normalised_titles() -> None:
    v = judge(_traj(["Scott Derrickson", "Ed Wood"], ["Scott_Derrickson", "ed  wood"]))
    assert (v.correct, v.grounded, v.kept, v.missing_titles, v.order_problems) == (True, True, True, [], [])
    assert v.grounding_checked


def test_a_supporting_page_not_read_makes_it_ungrounded() -> None:
    # "similar" titles listed by a failed search were not read
    t = _traj(["Scott Derrickson", "Ed Wood"], ["Scott Derrickson"], extra_info={"similar": ["Ed Wood"]})
    v = judge(t, require_grounded=True)
    assert (v.correct, v.grounded, v.kept, v.missing_titles) == (True, False, False, ["Ed Wood"])
    loose = judge(t, require_grounded=False)
    assert (loose.grounded, loose.kept, loose.require_grounded) == (False, True, False)


def test_wrong_answers_and_bad_step_order_are_not_kept() -> None:
    assert judge(_traj(["A"], ["A"], correct=False)).kept is False
    bad = _traj(["A"], ["A"], steps=[Step("action", "search[A]", 1, "search", "A"),
                                     Step("answer", "finish[X]", 1, "finish", "X")])
    v = judge(bad)
    assert v.correct and v.grounded and not v.kept
    assert v.order_problems == ["steps[0]: expected thought, got action", "steps[1]: expected observation, got answer"]


def test_tasks_without_supporting_titles_are_vacuously_grounded() -> None:
    v = judge(_traj(None, []))
    assert (v.grounded, v.grounding_checked, v.kept) == (True, False, True)


def test_the_verdict_is_stored_in_the_record_and_round_trips() -> None:
    t = record_verdict(_traj(["A", "B"], ["A"]), judge(_traj(["A", "B"], ["A"])))
    assert t.scores["grounded"] == 0.0 and t.scores["kept"] == 0.0
    back = Trajectory.from_json(t.to_json())
    assert back == t
    assert verdict_of(back) == judge(_traj(["A", "B"], ["A"]))
    assert t.info["verdict"]["missing_titles"] == ["B"]


def test_titles_come_from_the_loops_observations() -> None:
    """Through the real agent loop: the pages the env reported as read are what grounding sees."""
    env = FakeEnvironment()
    task = Task(id="w", question="Who makes the Walkman?", answer="Sony",
                meta={"kind": "single", "supporting_titles": ["walkman"]})
    traj = asyncio.run(run_episode(task, env, ScriptedLLM([SEARCH, FINISH]), AgentConfig()))
    assert titles_read(traj) == ["Walkman"]
    v = judge(traj)
    assert (v.correct, v.grounded, v.kept) == (True, True, True)
    task2 = Task(id="w2", question="Who makes the Walkman?", answer="Sony",
                 meta={"supporting_titles": ["Walkman", "Sony"]})
    traj2 = asyncio.run(run_episode(task2, FakeEnvironment(), ScriptedLLM([SEARCH, FINISH]), AgentConfig()))
    v2 = judge(traj2)
    assert (v2.correct, v2.grounded, v2.kept, v2.missing_titles) == (True, False, False, ["Sony"])
