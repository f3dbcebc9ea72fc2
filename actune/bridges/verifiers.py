"""actune environments as verifiers environments (``verifiers`` 0.4, its ``verifiers.v1`` stack).

    env = load_environment(tasks={"format": "custom", "path": "tasks.jsonl"}, env={"name": "wiki", "corpus": ...})
    episodes = await evaluate(env, base_url="http://127.0.0.1:8000/v1", model="smollm2-135m", n=20)

This module is a verifiers taskset package (id ``actune_verifiers``) for any actune environment and task set:
the model's reply is parsed into an action with actune's parser, the observation comes back as the next user
turn, and the reward ``correct`` is the task's metric. Its one hand-written piece, :class:`ReplyHarness`, calls
the model in-process through the run's interception endpoint, where verifiers' own harness installs its
requirements from PyPI at every run. Installed by actune's ``verifiers`` extra.

The rules in full: docs/modules.md, actune.bridges.verifiers.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.dialects.chat import message_to_wire

from actune.agent.parser import parse_step
from actune.bridges.shared import ScoredEpisode
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks

__all__ = ["ActuneData", "ActuneEnv", "ActuneEnvConfig", "ActuneTask", "ActuneTaskset", "ActuneTasksetConfig",
           "ReplyHarness", "TASKSET_ID", "episode_rows", "evaluate", "load_environment"]

TASKSET_ID = "actune_verifiers"
# verifiers resolves a taskset id to a module by its plain name (a dotted path is not searched)
sys.modules.setdefault(TASKSET_ID, sys.modules[__name__])

SYSTEM_PROMPT = """Answer the question by acting in an environment, one step a reply:
Thought: what you know and what to do next
Action: name[argument]
Each action's result comes back as the next Observation. The actions:
{actions}"""


class ActuneData(vf.TaskData):
    """One actune task as verifiers' task data."""

    question: str
    answer: str = ""
    aliases: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


class ActuneTask(vf.Task[ActuneData]):
    """An actune task (no tools of verifiers' own: the environment is played turn by turn)."""


class ActuneTasksetConfig(vf.TasksetConfig):
    """Which tasks, in which environment."""

    tasks: dict[str, Any] = Field(default_factory=dict)
    """The task set, as actune's ``tasks`` section (:class:`actune.tasks.config.TaskConfig`)."""
    env: dict[str, Any] = Field(default_factory=dict)
    """The environment, as actune's ``env`` section (:class:`actune.envs.config.EnvConfig`)."""


class ActuneTaskset(vf.Taskset[ActuneTask, ActuneTasksetConfig]):
    """The tasks actune's loader reads, each with the environment's actions as the system prompt."""

    def load(self):
        env = make_env(EnvConfig(**self.config.env))
        system = SYSTEM_PROMPT.format(actions=env.describe_actions())
        for t in load_tasks(TaskConfig(**self.config.tasks)):
            data = ActuneData(id=t.id, name=t.id, prompt=None, system_prompt=system, question=t.question,
                              answer=t.answer, aliases=list(t.aliases), meta=dict(t.meta))
            yield ActuneTask(data, self.config.task)


class ReplyHarness(vf.Harness[vf.HarnessConfig]):
    """One chat completion a turn, in-process, through the run's interception endpoint (module docstring)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, tool_interception_url: str | None = None) -> Any:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [message_to_wire(m) for m in prompt or []]
        async with httpx.AsyncClient(timeout=None) as http:
            r = await http.post(f"{endpoint}/chat/completions", headers={"Authorization": f"Bearer {secret}"},
                                json={"model": ctx.model, "messages": messages})
        return vf.ProgramResult(exit_code=0 if r.status_code < 400 else 1, stdout="", stderr=r.text[-2000:])


class ActuneEnvConfig(vf.EnvConfig):
    """One seat, the player, on this machine (no sandbox: the model only talks; the environment runs here)."""

    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig(), max_turns=8)


class ActuneEnv(vf.Env[ActuneEnvConfig]):
    """An actune task played as a conversation: observations as user turns, the model's replies as actions."""

    async def run(self, task: ActuneTask, agents: Any) -> None:
        d = task.data
        episode = ScoredEpisode(lambda: make_env(EnvConfig(**self.taskset.config.env)))
        env = episode.env
        shown = episode.reset({"question": d.question, "answer": d.answer, "id": d.id, "aliases": d.aliases,
                               "meta": d.meta})
        steps = 0
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn(f"Question: {d.question}" + (f"\nObservation: {shown}" if shown else ""))
            while not segment.terminated:
                parsed = parse_step(segment.last_reply, env.action_names, env.finish_action)
                if parsed.action is None:
                    said = parsed.error or "Write one action as Action: name[argument]."
                else:
                    steps += 1
                    result, _ = episode.step(parsed.action.name, parsed.action.argument)
                    if result.done:
                        break
                    said = result.observation
                segment = await interaction.turn(f"Observation: {said}")
        interaction.trace.record_reward("correct", episode.reward)
        interaction.trace.record_metric("steps", steps)


def _fields(section: Any) -> dict[str, Any]:
    return section.model_dump(mode="json") if hasattr(section, "model_dump") else dict(section)


def load_environment(tasks: TaskConfig | dict[str, Any], env: EnvConfig | dict[str, Any],
                     max_turns: int = 8) -> ActuneEnv:
    """A verifiers environment of actune's ``tasks`` in actune's environment ``env`` (the model gets at most
    ``max_turns`` replies an episode)."""
    config = ActuneEnvConfig(taskset=ActuneTasksetConfig(id=TASKSET_ID, tasks=_fields(tasks), env=_fields(env)),
                             player=vf.AgentConfig(runtime=vf.SubprocessConfig(), max_turns=max_turns))
    return ActuneEnv(config)


async def evaluate(env: ActuneEnv, base_url: str, model: str, n: int | None = None, temperature: float = 0.0,
                   max_tokens: int = 128, concurrency: int = 4, api_key_var: str = "ACTUNE_API_KEY") -> list[Any]:
    """verifiers' episodes of the first ``n`` tasks (all: None) against an OpenAI-compatible server at
    ``base_url`` serving ``model``, one each, at most ``concurrency`` at once; the key, if any, from the
    environment variable ``api_key_var`` (never an argument). Nothing is written and nothing leaves the machine
    but the calls to ``base_url``."""
    ctx = vf.ModelContext(model=model, client=vf.EvalClientConfig(base_url=base_url, api_key_var=api_key_var),
                          sampling=vf.SamplingConfig(temperature=temperature, max_tokens=max_tokens,
                                                     stop=["\nObservation"]))
    tasks = list(env.taskset if n is None else env.taskset.take(n))
    gate = asyncio.Semaphore(concurrency)

    async def one(task: ActuneTask) -> Any:
        async with gate:
            return await env.run_episode(task, ctx)

    async with env.serving():
        return list(await asyncio.gather(*(one(t) for t in tasks)))


def episode_rows(episodes: list[Any]) -> list[dict[str, Any]]:
    """One row per episode: task id, reward, steps, replies and errors (what a report or a test reads)."""
    rows = []
    for ep in episodes:
        trace = ep.traces[0] if ep.traces else None
        rows.append({"id": ep.task.data.id, "ok": ep.ok, "errors": [e.message for e in ep.errors],
                     "correct": trace.rewards["correct"].score if trace and "correct" in trace.rewards else None,
                     "steps": trace.metrics.get("steps") if trace else None,
                     "replies": [m.content for m in trace.assistant_messages] if trace else []})
    return rows

