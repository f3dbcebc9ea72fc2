"""The state of one running episode and the calls every method makes through it.

Methods (``actune.agent.methods``) are async generators of :class:`Event` that read and extend an
:class:`Episode`: they ask it for completions (which it counts, times and turns into finish reasons
on context overflow or server failure), add steps, and step the environment.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from actune.agent.config import AgentConfig
from actune.agent.render import PromptContext, render_messages, render_text
from actune.envs.base import Action, Environment, StepResult
from actune.llm import Completion, ContextLengthError, Sampling, ServerError
from actune.records.trajectory import Step, Trajectory

__all__ = ["Event", "Episode", "EpisodeEnd", "LLM", "episode_seed", "approx_tokens", "tokenizer_counter",
           "truncate_observation"]


#: OpenAI-compatible servers (vLLM included) reject requests with more stop strings than this.
MAX_STOP_STRINGS = 4


class LLM(Protocol):
    """What the loop needs from a model client (``actune.llm.LLMClient`` or a test fake)."""

    async def complete(
        self, prompt: str, *, sampling: Sampling, stop: list[str] | None = None, **kw: Any
    ) -> Completion: ...

    async def chat(
        self, messages: list[dict[str, Any]], *, sampling: Sampling, stop: list[str] | None = None, **kw: Any
    ) -> Completion: ...


@dataclass
class Event:
    """One thing that happened in an episode, for live views and logs.

    Types: starting, iteration, thought, reflection, action, observation, parse_error, reprompt,
    adaptive_iteration, max_iterations_reached, repetition, sample, backoff, re_plan (PreFlect),
    plan, critique, critique_retry (PreFlect: the reflector's answer was unreadable, asked again),
    final_answer, done; with ``AgentConfig.stream_events`` also thinking, reflecting, thought_delta,
    reflection_delta, action_delta, observation_delta, delta, adaptive_response (see :mod:`actune.agent.loop`).
    ``done`` carries the finished record in ``data["trajectory"]``.
    """

    type: str
    iteration: int = 0
    data: dict[str, Any] = field(default_factory=dict)


class EpisodeEnd(Exception):
    """Ends the episode with a finish reason (context overflow, server error)."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def episode_seed(run_seed: int, task_id: str, attempt: int) -> int:
    """A stable 31-bit seed from the run seed, task id and attempt (same inputs, same seed)."""
    h = hashlib.sha256(f"{run_seed}\x1f{task_id}\x1f{attempt}".encode()).hexdigest()
    return int(h[:8], 16) & 0x7FFFFFFF


def approx_tokens(text: str) -> int:
    """About 4 characters per token for English BPE vocabularies: cheap and good enough for budgets."""
    return math.ceil(len(text) / 4)


def tokenizer_counter(model_path: str) -> Callable[[str], int]:
    """Exact token counts with the model's own tokenizer (loads transformers; slower than the default)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    return lambda text: len(tok.encode(text, add_special_tokens=False))


def truncate_observation(text: str, max_tokens: int, count_tokens: Callable[[str], int] = approx_tokens) -> str:
    """Cut ``text`` to about ``max_tokens`` tokens at a word boundary, marking the cut."""
    n = count_tokens(text)
    if n <= max_tokens:
        return text
    cut = text
    while count_tokens(cut) > max_tokens and cut:
        keep = max(1, int(len(cut) * max_tokens / max(count_tokens(cut), 1) * 0.95))
        cut = cut[:keep]
        if " " in cut[len(cut) // 2:]:
            cut = cut[: cut.rstrip().rfind(" ")]
    return cut.rstrip() + " ..."


def _accepts_extra_body(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "extra_body" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class Episode:
    """Mutable state of one episode: the record being built and the prompt head."""

    def __init__(
        self,
        traj: Trajectory,
        env: Environment,
        llm: LLM,
        cfg: AgentConfig,
        prompt: PromptContext,
        seed: int,
        count_tokens: Callable[[str], int] = approx_tokens,
        prompt_factory: Callable[[str], PromptContext] | None = None,
    ):
        self.traj = traj
        self._prompt_factory = prompt_factory
        self._prompts: dict[str, PromptContext] = {prompt.method: prompt}
        self.env = env
        self.llm = llm
        self.cfg = cfg
        self.prompt = prompt
        self.seed = seed
        self.count_tokens = count_tokens
        self.requests = 0
        self.env_info: dict[str, Any] = {"titles": []}

    def prompt_for(self, method: str) -> PromptContext:
        """The prompt head for a base method (hybrids switch between two)."""
        if method not in self._prompts:
            if self._prompt_factory is None:
                raise ValueError(f"no prompt for method {method!r}")
            self._prompts[method] = self._prompt_factory(method)
        return self._prompts[method]

    # --- model calls -------------------------------------------------------------------------
    def sampling(
        self, temperature: float | None = None, max_tokens: int | None = None, offset: int | None = None
    ) -> Sampling:
        k = self.requests if offset is None else offset
        return Sampling(
            temperature=self.cfg.temperature if temperature is None else temperature,
            top_p=self.cfg.top_p,
            max_tokens=max_tokens or self.cfg.max_tokens,
            seed=(self.seed + k) % 2**31,
        )

    async def generate(
        self,
        steps: list[Step],
        prefix: str,
        stop: list[str],
        *,
        prompt: PromptContext | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        offset: int | None = None,
    ) -> Completion:
        """Render the prompt (head + ``steps`` + ``prefix``) in the configured wire format and complete it."""
        ctx = prompt or self.prompt
        if self.cfg.wire == "tools":
            raise ValueError("the tools wire renders its own turns (actune.agent.methods.tool_calls); a step that "
                             "asks for a labelled completion cannot run in it")
        if self.cfg.wire == "text":
            return await self.ask(render_text(ctx, steps, prefix), stop, temperature=temperature,
                                  max_tokens=max_tokens, offset=offset)
        prefill = prefix if (self.cfg.chat_prefill and prefix) else None
        return await self.ask(render_messages(ctx, steps, prefill=prefill), stop, temperature=temperature,
                              max_tokens=max_tokens, offset=offset, continue_final=prefill is not None)

    async def ask(
        self,
        prompt: str | list[dict[str, Any]],
        stop: list[str],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        offset: int | None = None,
        continue_final: bool = False,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """Complete an already rendered prompt (text, or chat messages whose last assistant turn is
        continued when ``continue_final``), counted and timed like every step; for prompts that are not
        the agent's own (e.g. PreFlect's reflector). ``tools``: chat with OpenAI tools (the tools wire), where
        no stop string is added: the turn ends at the template's end of turn, and a stop could cut a call."""
        sampling = self.sampling(temperature, max_tokens, offset)
        self.requests += 1
        if not tools:
            stop = list(dict.fromkeys(stop[:1] + self.cfg.stops_for(self.env.name) + stop[1:]))[:MAX_STOP_STRINGS]
        t0 = time.perf_counter()
        try:
            if tools:
                c = await self.llm.chat(prompt, sampling=sampling, stop=stop or None, tools=tools)
            elif isinstance(prompt, str):
                c = await self.llm.complete(prompt, sampling=sampling, stop=stop)
            elif continue_final:
                if not _accepts_extra_body(self.llm.chat):
                    raise TypeError("chat_prefill needs an LLM client whose chat() accepts extra_body "
                                    "(vLLM continue_final_message); set chat_prefill=false")
                c = await self.llm.chat(prompt, sampling=sampling, stop=stop, extra_body={
                    "continue_final_message": True, "add_generation_prompt": False})
            else:
                c = await self.llm.chat(prompt, sampling=sampling, stop=stop)
        except ContextLengthError as e:
            raise EpisodeEnd("context_overflow", str(e)) from None
        except ServerError as e:
            raise EpisodeEnd("server_error", str(e)) from None
        finally:
            self.traj.timings.llm_s += time.perf_counter() - t0
        self.traj.usage.count(c.usage)
        return c

    # --- environment ---------------------------------------------------------------------------
    async def env_step(self, action: Action) -> StepResult:
        # astep: an env that waits on the network (MediaWiki) must not stall the other episodes on the loop
        t0 = time.perf_counter()
        try:
            res = await self.env.astep(action)
        finally:
            self.traj.timings.env_s += time.perf_counter() - t0
        info = res.info or {}
        for t in info.get("titles", []) or []:
            if t not in self.env_info["titles"]:
                self.env_info["titles"].append(t)
        for k, v in info.items():
            if k != "titles":
                self.env_info[k] = v
        return res

    # --- record --------------------------------------------------------------------------------
    def add(self, step: Step, steps: list[Step] | None = None) -> Event:
        (self.traj.steps if steps is None else steps).append(step)
        data: dict[str, Any] = {"text": step.text}
        if step.action_name is not None or step.type in ("action", "answer"):
            data["action_name"] = step.action_name
            data["action_arg"] = step.action_arg
        return Event(step.type, step.iteration, data)
