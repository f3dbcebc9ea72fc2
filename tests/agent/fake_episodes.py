"""Stores of real loop records from scripted replies (the fake LLM and environment of ``agent.fakes``), for tests of
what reads stores: preference pairs, DPO."""

from __future__ import annotations

import asyncio
from pathlib import Path

from actune.agent import AgentConfig, run_episode
from actune.judge import judge, record_verdict
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from agent.fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

WALKMAN = Task(id="t1", question="Which company makes the Walkman?", answer="Sony")
DANUBE = Task(id="t2", question="How long is the Danube?", answer="2,850 km")
NILE = Task(id="t3", question="How long is the Nile?", answer="6,650 km")

RIGHT = [" I need the maker of the Walkman.\nAction 1: search[Walkman]", " It is made by Sony.\nAction 2: finish[Sony]"]
# the same first step, then a wrong answer: a pair of RIGHT and this starts at step 2
WRONG_LATE = [" I need the maker of the Walkman.\nAction 1: search[Walkman]",
              " It is made by Panasonic.\nAction 2: finish[Panasonic]"]
# an unreadable action, then a wrong answer: nothing shared with RIGHT
WRONG_EARLY = [" Look it up.\nAction 1: look up Walkman", " Guess.\nAction 2: finish[Panasonic]"]


def scripted_episode(task: Task, replies: list[str], attempt: int):
    """The judged record of one ReAct episode (zero-shot, text) whose model says ``replies``."""
    cfg = AgentConfig(method="react", regime="zero_shot", wire="text", chat_prefill=False, reprompt_action=False)
    traj = asyncio.run(run_episode(task, FakeEnvironment(), ScriptedLLM(list(replies)), cfg,
                                   scorer=exact_match_scorer, attempt=attempt, run_id="r"))
    return record_verdict(traj, judge(traj))


def scripted_store(path: Path, episodes: list[tuple[Task, list[str]]]) -> list:
    """A store of ``episodes`` (task, replies) in order, each task's attempts numbered from 0; returns the records."""
    written, attempts = [], {}
    with TrajectoryStore.open(path) as store:
        for task, replies in episodes:
            attempts[task.id] = attempts.get(task.id, -1) + 1
            written.append(scripted_episode(task, replies, attempts[task.id]))
            store.append(written[-1])
    return written
