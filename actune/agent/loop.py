"""The loop driver: run one episode of any method and return its trajectory record.

    traj = await run_episode(task, env, llm, AgentConfig(method="react"))
    async for event in iter_episode(task, env, llm, cfg): ...   # live view; last event is "done"

Bootstrap and eval both call this, so a fine-tuned model is evaluated in exactly the loop that
produced its training data.

It yields ``Event(type, iteration, data)`` under LLARS' names: ``starting`` first, one event per recorded step
(``thought``, ``action``, ``observation``, ``answer``...), ``final_answer`` once there is a prediction, and
``done`` last, always. With ``AgentConfig.stream_events`` (``actune run``; off for bootstrap and eval) each step's
text also comes as it is generated (``thought_delta``, ``action_delta``, ``delta``...;
:mod:`actune.agent.methods.live`); the record is the same with and without them.

Every event and its payload: docs/modules.md, actune.agent.loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any, AsyncIterator, Callable

from actune.agent.config import AgentConfig
from actune.agent.episode import LLM, Episode, EpisodeEnd, Event, approx_tokens, episode_seed
from actune.agent.exemplar_check import check_exemplar_actions
from actune.agent.exemplars import EVERY_STEP, ExemplarSet, paper_prompt_file, paper_prompt_key
from actune.agent.method_registry import method_spec
from actune.agent.methods.live import LiveLLM
from actune.agent.render import PromptContext, build_paper_prompt_context, build_prompt_context, instruction_for
from actune.agent.validate import steps_method
from actune.envs.base import Environment
from actune.records.task_record import Task
from actune.records.trajectory import ModelRecord, SamplingRecord, TaskRecord, Trajectory
from actune.tasks.metrics import score_prediction

__all__ = ["run_episode", "iter_episode", "Scorer", "default_scorer"]

Scorer = Callable[[Task, "str | None", dict], "tuple[bool, dict[str, float]]"]


def default_scorer() -> Scorer:
    return score_prediction


def task_kind(task: Task) -> str | None:
    """The task's kind for ``exemplar_kinds: [task]`` (None: the task names none). ALFWorld games name
    theirs ``task_type``; ReAct prompted each game with the two exemplars of its type."""
    kind = task.meta.get("kind", task.meta.get("task_type"))
    return None if kind is None or kind == "" else str(kind)


def _prompt_factory(cfg: AgentConfig, env: Environment, task: Task, initial_obs: str,
                    exemplar_set: ExemplarSet | None) -> Callable[[str], PromptContext]:
    def make(method: str) -> PromptContext:
        if cfg.fidelity == "paper" and cfg.regime == "few_shot":
            return _paper_prompt(cfg, env, task, initial_obs, method)
        paper = None
        if cfg.paper_prompt_file is not None and method == method_spec(cfg.method).steps.name:
            if not cfg.paper_prompt_key:
                raise ValueError("paper_prompt_file needs paper_prompt_key")
            paper = (str(cfg.paper_prompt_file), cfg.paper_prompt_key)
        return build_prompt_context(
            method, env.name, env.describe_actions(), task.question,
            regime=cfg.regime, exemplar_set=exemplar_set or cfg.exemplar_set,
            exemplar_kinds=cfg.exemplar_kinds, num_exemplars=cfg.num_exemplars,
            paper_prompt=paper, initial_observation=initial_obs, finish_action=env.finish_action,
            task_kind=task_kind(task),
        )

    return make


def _paper_prompt(cfg: AgentConfig, env: Environment, task: Task, initial_obs: str, method: str) -> PromptContext:
    """Paper fidelity: the paper's prompt for ``method`` (a hybrid asks for both of its phases'). The main method
    reads ``paper_prompt_key`` as configured, the other phase the same variant of its own method (ReAct's
    ``webthink_simple6``, CoT-SC's ``cotqa_simple6``); ALFWorld picks by the game's type instead."""
    key = cfg.paper_prompt_key
    if env.name != "alfworld" and not (key and method == method_spec(cfg.method).steps.name):
        key = paper_prompt_key(method, env.name, key)
    return build_paper_prompt_context(method, env.name, task.question,
                                      paper_prompt_file(env.name, cfg.paper_prompt_file), key,
                                      initial_observation=initial_obs, finish_action=env.finish_action,
                                      task_kind=task_kind(task))


async def iter_episode(
    task: Task,
    env: Environment,
    llm: LLM,
    cfg: AgentConfig,
    *,
    model: ModelRecord | None = None,
    attempt: int = 0,
    run_id: str = "",
    scorer: Scorer | None = None,
    exemplar_set: ExemplarSet | None = None,
    count_tokens: Callable[[str], int] = approx_tokens,
) -> AsyncIterator[Event]:
    """Run one episode, yielding events as they happen; the last event is ``done`` with the record. Exemplars that
    do not fit ``env`` are a config error before the environment or the model is asked anything."""
    check_exemplar_actions(cfg, env, exemplar_set)
    seed = episode_seed(cfg.seed, task.id, attempt)
    model = model or ModelRecord()
    model = ModelRecord(name=model.name, adapter=model.adapter, regime=cfg.regime, wire=cfg.wire,
                        exemplar_set=(cfg.paper_prompt_key or cfg.exemplar_set or env.name)
                        if cfg.regime == "few_shot" else None)
    spec = method_spec(cfg.method)
    temperature = getattr(cfg, spec.temperature)
    traj = Trajectory(
        task=TaskRecord.of(task),
        method=cfg.method,
        model=model,
        sampling=SamplingRecord(temperature, cfg.top_p, cfg.max_tokens, seed),
        attempt=attempt,
        run_id=run_id,
        episode_id=hashlib.sha256(f"{run_id}\x1f{task.id}\x1f{cfg.method}\x1f{attempt}".encode()).hexdigest()[:16],
    )
    traj.timings.started_at = time.time()
    t0 = time.perf_counter()
    t_env = time.perf_counter()
    initial_obs = env.reset(task, seed=seed) or ""
    traj.timings.env_s += time.perf_counter() - t_env
    if initial_obs:
        traj.info["initial_observation"] = initial_obs
    factory = _prompt_factory(cfg, env, task, initial_obs, exemplar_set)
    base = spec.steps.name
    deltas: asyncio.Queue[Event] | None = asyncio.Queue() if cfg.stream_events else None
    if deltas is not None:
        llm = LiveLLM(llm, deltas.put_nowait)
    ep = Episode(traj, env, llm, cfg, factory(base), seed, count_tokens, prompt_factory=factory)
    yield Event("starting", 0, {"task_id": task.id, "goal": task.question, "method": cfg.method,
                                "max_iterations": cfg.step_budget(env.name)})
    events = spec.run(ep)
    try:
        async for ev in (events if deltas is None else _with_deltas(events, deltas)):
            yield ev
    except EpisodeEnd as e:
        traj.finish_reason = e.reason
        traj.info["error"] = e.detail
    # The zero-shot prompt head of the steps' format, so exporters can render the record as a tuned
    # model will see it in this loop (instruction + question + steps) without the environment at hand.
    head = ep.prompt_for(steps_method(traj))
    traj.info["prompt"] = {"method": head.method, "env": head.env,
                           "instruction": instruction_for(head.method, env.name, env.describe_actions(), head.style),
                           "question": head.question, "finish_action": head.finish_action}
    if head.style != EVERY_STEP:
        traj.info["prompt"]["style"] = head.style
    info: dict[str, Any] = dict(ep.env_info)
    traj.info["env_info"] = info
    correct, scores = (scorer or default_scorer())(task, traj.prediction, info)
    traj.correct = bool(correct)
    traj.scores = {k: float(v) for k, v in scores.items()}
    traj.timings.wall_s = time.perf_counter() - t0
    if traj.prediction is not None:
        yield Event("final_answer", 0, {"answer": traj.prediction, "correct": traj.correct})
    yield Event("done", 0, {"trajectory": traj, "finish_reason": traj.finish_reason,
                            "sources": info.get("sources"), "goal": task.question,
                            "full_response": traj.prediction})


async def _with_deltas(events: AsyncIterator[Event], deltas: asyncio.Queue[Event]) -> AsyncIterator[Event]:
    """The method's ``events`` with the delta events its streamed requests put on ``deltas`` meanwhile, in the
    order they happened. The method still pauses at each of its own events until the consumer asks for more."""
    it = aiter(events)
    while True:
        step = asyncio.ensure_future(anext(it))
        try:
            while not step.done():
                get = asyncio.ensure_future(deltas.get())
                await asyncio.wait({step, get}, return_when=asyncio.FIRST_COMPLETED)
                if get.done():
                    yield get.result()
                else:
                    get.cancel()
        finally:
            if not step.done():  # the consumer stopped listening
                step.cancel()
        while not deltas.empty():
            yield deltas.get_nowait()
        try:
            ev = step.result()  # raises what the method raised (EpisodeEnd ...)
        except StopAsyncIteration:
            return
        yield ev


async def run_episode(
    task: Task,
    env: Environment,
    llm: LLM,
    cfg: AgentConfig,
    **kwargs: Any,
) -> Trajectory:
    """Run one episode to the end and return its record (see :func:`iter_episode` for arguments)."""
    traj = None
    async for ev in iter_episode(task, env, llm, cfg, **kwargs):
        if ev.type == "done":
            traj = ev.data["trajectory"]
    assert traj is not None
    return traj
