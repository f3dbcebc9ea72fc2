"""Fakes for the collection tests (bootstrap, eval, judge): a ScriptedLLM that yields to the event loop before answering (so
concurrent episodes interleave and can be cancelled mid-way) and a reply that follows the episode."""

from __future__ import annotations

import asyncio

from agent.fakes import Call, ScriptedLLM  # tests/agent/fakes.py (tests/ is on sys.path via conftest)

from actune.records.task_record import Task

SEARCH = " I need to search Walkman.\nAction 1: search[Walkman]"
FINISH = " Walkman is made by Sony.\nAction 2: finish[Sony]"


def walkman_reply(call: Call) -> str:
    """Step 1 searches Walkman, step 2 answers Sony, whichever episode asks."""
    return SEARCH if call.prompt.rstrip().endswith("Thought 1:") else FINISH


class PacedScriptedLLM(ScriptedLLM):
    """ScriptedLLM that awaits once per request, like a real client does, so episodes interleave."""

    async def complete(self, prompt, *, sampling, stop=None):
        await asyncio.sleep(0)
        return await super().complete(prompt, sampling=sampling, stop=stop)


def walkman_llm(n: int = 1000) -> PacedScriptedLLM:
    return PacedScriptedLLM([walkman_reply] * n)


def walkman_tasks() -> list[Task]:
    """4 tasks; the scripted model answers "Sony" to all: t0, t1 (single) and t3 (bridge) are right,
    t2 expects another answer. t3 also needs the Sony page, which the model never reads."""
    return [
        Task(id="t0", question="Who makes the Walkman?", answer="Sony",
             meta={"kind": "single", "supporting_titles": ["Walkman"]}),
        Task(id="t1", question="Which company makes the Walkman?", answer="Sony",
             meta={"kind": "single", "supporting_titles": ["walkman"]}),
        Task(id="t2", question="Where is the Walkman's maker based?", answer="Japan",
             meta={"kind": "bridge", "supporting_titles": ["Walkman", "Sony"]}),
        Task(id="t3", question="Who makes the Walkman, founded in 1946?", answer="Sony",
             meta={"kind": "bridge", "supporting_titles": ["Walkman", "Sony"]}),
    ]
