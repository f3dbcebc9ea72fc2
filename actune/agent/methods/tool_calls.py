"""Act, ReAct and ReflAct in the tools wire (:mod:`actune.agent.tool_calls`): one assistant turn a step.

The same loop as :func:`~actune.agent.methods.interactive.run_interactive`, with the same endings (an answer,
unusable actions in a row, a repeated action, the step budget) and records; only the turns differ: the model
gets the environment's actions as tools and answers each turn with its thought and one call, which the
server's tool parser reads. Steps are not streamed as deltas: a call's arguments arrive whole.
"""

from __future__ import annotations

from typing import AsyncIterator, Callable

from actune.agent.episode import Episode, Event
from actune.agent.method_registry import reason_type
from actune.agent.methods.interactive import ActingState, act_on, run_interactive
from actune.agent.methods.live import iteration_event, record_step
from actune.agent.tool_calls import read_tool_call, render_tool_messages, tool_hint, tools_for
from actune.envs.actions import action_specs
from actune.records.trajectory import Step

__all__ = ["acting", "run_tool_calls"]


async def run_tool_calls(ep: Episode, method: str, budget: int | None = None) -> AsyncIterator[Event]:
    cfg, env, traj = ep.cfg, ep.env, ep.traj
    budget = budget or cfg.step_budget(env.name)
    prompt = ep.prompt_for(method)
    specs = action_specs(env)
    tools = tools_for(specs)
    thought_type = reason_type(method)
    state = ActingState()
    traj.info.setdefault("parse_errors", 0)

    def hint(_ep: Episode, error: str | None) -> str:
        return tool_hint(env.action_names, error)

    for i in range(1, budget + 1):
        yield iteration_event(i, traj.task.question, budget)
        messages = [{k: v for k, v in m.items() if k != "train"}
                    for m in render_tool_messages(prompt, traj.steps, specs)]
        c = await ep.ask(messages, [], tools=tools)
        parsed = read_tool_call(c.text, c.tool_calls, specs, method, env.finish_action)
        tokens, latency = c.usage.completion_tokens, c.latency_s
        if method != "act":
            for ev in record_step(ep, Step(thought_type, parsed.thought, i, tokens=tokens, latency_s=latency)):
                yield ev
            tokens, latency = 0, 0.0  # counted once, on the turn's first step
        async for ev in act_on(ep, method, parsed, i, tokens, latency, {}, state, hint):
            yield ev
        if state.ended:
            return
    yield Event("max_iterations_reached", budget, {})
    traj.finish_reason = "max_steps"


def acting(method: str) -> Callable[[Episode], AsyncIterator[Event]]:
    """Act, ReAct or ReflAct (``method``: its step format) in the episode's wire: labelled text steps, or tool
    calls."""
    return lambda ep: (run_tool_calls if ep.cfg.wire == "tools" else run_interactive)(ep, method)
