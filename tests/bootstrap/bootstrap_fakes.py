"""Fakes for the bootstrap tests: a ScriptedLLM that yields to the event loop before answering (so
concurrent episodes interleave and can be cancelled mid-way) and a reply that follows the episode."""

from __future__ import annotations

import asyncio

from agent.fakes import Call, ScriptedLLM  # tests/agent/fakes.py (tests/ is on sys.path via conftest)

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
