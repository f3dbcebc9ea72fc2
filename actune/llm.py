"""Async client for OpenAI-compatible servers (vLLM): completions and chat completions.

PUBLIC API (other modules code against exactly this):

    client = LLMClient(ClientConfig(endpoints=["http://127.0.0.1:8000/v1"], model="m"))
    c: Completion = await client.complete(prompt, sampling=Sampling(...), stop=["\nObservation"])
    c: Completion = await client.chat(messages, sampling=Sampling(...), stop=[...])
    await client.aclose()    # or: async with LLMClient(cfg) as client: ...

Callers catch its error classes (:class:`LLMError`: context length, server, request, auth), not the transport's.
The official ``openai`` client sends the requests; this module keeps what it cannot do: several endpoints, the
retry policy, the error classes, a hosted teacher's key kept out of every message, a stream assembled into one answer.

The rules in full: docs/modules.md, actune.llm.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, AsyncIterator, Callable

import httpx
from pydantic import AfterValidator, ConfigDict, Field, model_validator

from actune.config import MASK, ConfigError, StrictModel, mask_url_credentials
from actune.records.trajectory import SamplingRecord, Usage

if TYPE_CHECKING:
    import openai

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _env_name(value: str) -> str:
    # the message never repeats the value: a key pasted here by mistake must not reach an error or a log
    if not _ENV_NAME.match(value):
        raise ValueError("must be the NAME of an environment variable holding the API key (letters, digits and _, "
                         "not starting with a digit), never the key itself")
    return value


EnvVarName = Annotated[str, AfterValidator(_env_name)]
"""The name of an environment variable (``api_key_env`` of the client, bootstrap and eval models)."""


def env_var_name(value: str, option: str) -> str:
    """``value`` when it can name an environment variable, else a :class:`ConfigError` naming ``option`` (a
    command-line flag, say) and never the value: a key given there by mistake must not be shown."""
    try:
        return _env_name(value)
    except ValueError as e:
        raise ConfigError(f"{option}: {e}") from None


def read_api_key(env: str, option: str = "api_key_env") -> str:
    """The API key held by environment variable ``env``; a :class:`ConfigError` naming ``option`` (the config key
    that named the variable, e.g. ``bootstrap.api_key_env``) and the variable when it is unset or empty."""
    key = os.environ.get(env_var_name(env, option), "").strip()
    if not key:
        raise ConfigError(f"{option}: environment variable {env} is not set (or empty); export it with the API "
                          f"key of the endpoint (export {env}=...), or remove {option} for an endpoint without a key")
    return key


class RetryPolicy(StrictModel):
    """How a request the server did not answer is tried again: connection errors, timeouts, 5xx, 429 (rate limit)
    and 408, never another 4xx. The client's own fields (``ClientConfig`` is one), and the ``retries`` section of
    ``bootstrap``, ``eval`` and each ``eval.models[i]``, which are handed to the client as they are.

    The pause before retry n is ``backoff_s * 2**(n-1)`` (plus up to 10% jitter), at least what the server asked
    for (``Retry-After`` / ``retry-after-ms``), at most ``max_backoff_s``. A hosted API's long rate-limit window is
    survived by configuration: ``max_retries: 30`` and ``max_backoff_s: 120`` keep a request trying for about an
    hour before its episode fails."""

    max_retries: int = Field(4, ge=0)
    """Retries after the first try (0: one try only). Past them the request fails (a :class:`ServerError`) and its
    episode is counted toward the stage's ``max_failed_episodes``."""
    backoff_s: float = Field(0.5, ge=0)
    """Pause before the first retry, in seconds; it doubles each retry, up to ``max_backoff_s``."""
    max_backoff_s: float = Field(60.0, gt=0)
    """Longest pause between two tries, in seconds: the doubling stops at it, and a ``Retry-After`` asking for
    longer is cut to it (a bad header cannot stall a run). Raise it above what a rate-limited API asks for."""

    def pause_s(self, retry: int, asked_s: float | None = None, jitter: float = 0.0) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first): the doubled backoff times
        ``1 + jitter``, at least ``asked_s`` (the server's ``Retry-After``), at most ``max_backoff_s``."""
        backoff = self.backoff_s * 2.0 ** min(retry - 1, 64) * (1 + jitter)
        return min(max(backoff, asked_s or 0.0), self.max_backoff_s)


class ClientConfig(RetryPolicy):
    """How to reach the model server(s), and how requests are retried (:class:`RetryPolicy`'s fields)."""

    # a validation error shows no input: api_key is a key, and api_key_env may hold one pasted by mistake
    model_config = ConfigDict(**StrictModel.model_config, hide_input_in_errors=True)

    endpoints: list[str] = Field(default_factory=lambda: ["http://127.0.0.1:8000/v1"])
    """Base URLs of OpenAI-compatible servers (ending in /v1); requests are spread over all of them."""
    model: str = ""
    """Model name as the server knows it (a served model name or a LoRA adapter name)."""
    api_key: str | None = Field(None, repr=False)
    """Bearer token, when the server was started with --api-key (a server actune starts: ``serve.api_key``)."""
    api_key_env: EnvVarName | None = None
    """Name of the environment variable holding the bearer token (a hosted API's key), read when the client is
    made; the key itself never goes in a config. Not together with ``api_key``."""
    max_concurrency: int = Field(16, ge=1)
    """Most requests in flight at once, over all endpoints."""
    timeout_s: float = Field(300.0, gt=0)
    """Per-request timeout in seconds."""

    @model_validator(mode="after")
    def _one_key_source(self) -> "ClientConfig":
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("api_key and api_key_env both set: give the key one way (api_key_env for a hosted API)")
        return self


@dataclass
class Sampling(SamplingRecord):
    """Sampling parameters sent with every request: those a record keeps, and ``logprobs``."""

    logprobs: int | None = None
    """Number of top log-probabilities per generated token to return (None: none)."""


@dataclass
class Completion:
    text: str
    finish_reason: str  # "stop" | "length" | ...
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    endpoint: str = ""
    token_logprobs: list[float] | None = None
    raw: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    """Chat with ``tools``: the calls the server's tool parser read from the output (OpenAI form)."""


class LLMError(RuntimeError):
    """Base of every client error."""


class ContextLengthError(LLMError):
    """The prompt does not fit the model's context window (vLLM answered 400 "maximum context length")."""


class ServerError(LLMError):
    """5xx or connection failure that persisted through all retries."""


class RequestError(LLMError):
    """A 4xx answer (bad request, unknown model, auth); not retried."""


class AuthError(RequestError):
    """401 or 403: the endpoint refused the key (or wanted one and got none). The message says where the key
    came from (the variable's name), never the key."""


# vLLM 0.32 answers 400 with "This model's maximum context length is N tokens. However, your prompt
# contains ..." (renderers/params.py) or "Input length (N) exceeds model's maximum context length (M)."
# (serve/utils/api_utils.py); OpenAI says "maximum context length" too. When only prompt + max_tokens
# overflow, vLLM 0.32 shortens max_tokens instead of failing (finish_reason "length").
_CONTEXT_MARKERS = ("maximum context length", "context length is", "max_model_len")


def is_context_length_message(message: str) -> bool:
    text = message.lower()
    return any(marker in text for marker in _CONTEXT_MARKERS)


_NO_KEY = "no-key"
"""The key openai is given when the endpoint takes none: it refuses to start without one; never sent, as every
request then omits the Authorization header (:data:`LLMClient._options`)."""


class LLMClient:
    """Async client for one or more OpenAI-compatible endpoints (see the module docstring).

    Requests go to the endpoint with the fewest requests in flight (ties: round-robin), at most
    ``max_concurrency`` at once over all endpoints. Connection errors, timeouts, 5xx, 429 and 408 answers are
    retried with exponential backoff (:class:`RetryPolicy`; possibly on another endpoint); other 4xx are not.
    """

    def __init__(self, config: ClientConfig, *, transport: httpx.AsyncBaseTransport | None = None):
        if not config.endpoints:
            raise ValueError("ClientConfig.endpoints is empty: give at least one base URL ending in /v1")
        self.config = config
        self._endpoints = [e.rstrip("/") for e in config.endpoints]
        self._in_flight = {e: 0 for e in self._endpoints}
        self._next = 0
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        self._key = config.api_key or (read_api_key(config.api_key_env) if config.api_key_env else None)
        timeout = httpx.Timeout(config.timeout_s, connect=min(config.timeout_s, 10.0))
        limits = httpx.Limits(max_connections=config.max_concurrency,
                              max_keepalive_connections=config.max_concurrency)
        import openai

        # one openai client for every request and endpoint (a request names its endpoint's full URL); max_retries=0:
        # the loop in _post retries, as openai's own (0.5 s doubling to 8 s, one endpoint) cannot follow RetryPolicy
        self._openai = openai.AsyncOpenAI(
            api_key=self._key or _NO_KEY, base_url=self._endpoints[0], timeout=timeout, max_retries=0,
            http_client=httpx.AsyncClient(timeout=timeout, limits=limits, transport=transport),
        )
        # without a key no Authorization header at all: openai sends one unless a request omits it
        self._options: dict[str, Any] = {} if self._key else {"headers": {"Authorization": openai.Omit()}}
        self.usage = Usage()
        """Token usage summed over every successful request of this client."""
        self.requests = 0
        """Successful requests so far."""
        self._sleep = asyncio.sleep  # the pause between tries (tests record it)

    async def __aenter__(self) -> "LLMClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._openai.close()  # closes the httpx client it was handed

    async def complete(
        self,
        prompt: str,
        sampling: Sampling | None = None,
        stop: list[str] | None = None,
        *,
        model: str | None = None,
        extra_body: dict[str, Any] | None = None,
        stream: bool = False,
        on_delta: Callable[[str], None] | None = None,
    ) -> Completion:
        """Text completion of ``prompt`` (POST /completions). ``model`` overrides ClientConfig.model
        for this request (e.g. a LoRA adapter name); ``extra_body`` adds server-specific fields.
        ``on_delta`` (or ``stream``): stream it, calling ``on_delta`` with each piece of text."""
        sampling = sampling or Sampling()
        body = self._body(sampling, stop, model, extra_body, stream or on_delta is not None)
        body["prompt"] = prompt
        if sampling.logprobs is not None:
            body["logprobs"] = sampling.logprobs
        data, endpoint, latency = await self._post("/completions", body, on_delta)
        choice = _first_choice(data, endpoint)
        logprobs = choice.get("logprobs") or {}
        token_logprobs = logprobs.get("token_logprobs") if sampling.logprobs is not None else None
        return self._completion(data, choice.get("text") or "", choice, endpoint, latency, token_logprobs)

    async def chat(
        self,
        messages: list[dict[str, str]],
        sampling: Sampling | None = None,
        stop: list[str] | None = None,
        *,
        model: str | None = None,
        extra_body: dict[str, Any] | None = None,
        stream: bool = False,
        on_delta: Callable[[str], None] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """Chat completion of ``messages`` ([{"role": ..., "content": ...}], POST /chat/completions).
        ``tools``: OpenAI function tools the model may call (the server needs a tool parser: vLLM's
        ``--enable-auto-tool-choice --tool-call-parser``); the calls come back in ``Completion.tool_calls``.
        ``extra_body`` adds server-specific fields, e.g. vLLM's ``{"continue_final_message": True,
        "add_generation_prompt": False}`` to continue a prefilled assistant message. ``on_delta`` (or
        ``stream``): stream it, calling ``on_delta`` with each piece of the assistant's text."""
        sampling = sampling or Sampling()
        body = self._body(sampling, stop, model, extra_body, stream or on_delta is not None)
        body["messages"] = messages
        if tools:
            body["tools"] = tools
        if sampling.logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = sampling.logprobs
        data, endpoint, latency = await self._post("/chat/completions", body, on_delta)
        choice = _first_choice(data, endpoint)
        text = (choice.get("message") or {}).get("content") or ""
        token_logprobs = None
        if sampling.logprobs is not None:
            token_logprobs = [t["logprob"] for t in ((choice.get("logprobs") or {}).get("content") or [])]
        c = self._completion(data, text, choice, endpoint, latency, token_logprobs)
        c.tool_calls = (choice.get("message") or {}).get("tool_calls") or None
        return c

    # -- internals -----------------------------------------------------------------------------

    def _body(
        self, sampling: Sampling, stop: list[str] | None, model: str | None, extra_body: dict[str, Any] | None,
        stream: bool = False,
    ) -> dict[str, Any]:
        """The request's JSON body, sent as it is (openai's typed ``create`` would take vLLM's own sampling keys
        through ``extra_body`` and turn each answer into its models, which the agent loop's many requests pay for)."""
        name = model or self.config.model
        if not name:
            raise ValueError("no model name: set ClientConfig.model or pass model=")
        body: dict[str, Any] = {
            "model": name,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if stop:
            body["stop"] = list(stop)
        body.update(extra_body or {})
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})  # usage comes in the last chunk
        return body

    def _completion(
        self, data: dict, text: str, choice: dict, endpoint: str, latency: float, token_logprobs: list[float] | None
    ) -> Completion:
        raw_usage = data.get("usage") or {}
        details = raw_usage.get("prompt_tokens_details") or {}
        usage = Usage(
            prompt_tokens=int(raw_usage.get("prompt_tokens") or 0),
            completion_tokens=int(raw_usage.get("completion_tokens") or 0),
            cached_prompt_tokens=int(details.get("cached_tokens") or 0),
        )
        self.usage = self.usage + usage
        self.requests += 1
        return Completion(
            text=text,
            finish_reason=choice.get("finish_reason") or "",
            usage=usage,
            latency_s=latency,
            endpoint=endpoint,
            token_logprobs=token_logprobs,
            raw=data,
        )

    def _pick_endpoint(self) -> str:
        # kept: openai talks to one base URL; actune spreads requests over several servers
        fewest = min(self._in_flight.values())
        n = len(self._endpoints)
        for i in range(n):
            endpoint = self._endpoints[(self._next + i) % n]
            if self._in_flight[endpoint] == fewest:
                self._next = (self._next + i + 1) % n
                return endpoint
        raise AssertionError("unreachable")

    async def _post(
        self, path: str, body: dict[str, Any], on_delta: Callable[[str], None] | None = None
    ) -> tuple[dict, str, float]:
        """POST ``body`` with retries: (answer, endpoint, latency). A streamed body (``stream: true``) hands its
        text to ``on_delta`` as it comes, and is assembled into the answer the plain request would have given.
        Kept rather than openai's retries: RetryPolicy's pauses (Retry-After waited up to ``max_backoff_s``, which
        openai caps at two minutes and refuses past), each retry on the least busy endpoint, the last error named."""
        async with self._semaphore:
            last_error = ""
            wait_s: float | None = None  # what a 429 / 408 asked for (Retry-After)
            for attempt in range(self.config.max_retries + 1):
                if attempt:
                    await self._sleep(self.config.pause_s(attempt, wait_s, 0.1 * random.random()))
                endpoint = self._pick_endpoint()
                self._in_flight[endpoint] += 1
                started = time.perf_counter()
                try:
                    data = await self._send(endpoint, path, body, on_delta)
                    return data, endpoint, time.perf_counter() - started
                except _Retry as retry:
                    last_error, wait_s = retry.args
                finally:
                    self._in_flight[endpoint] -= 1
            raise ServerError(f"request failed after {self.config.max_retries + 1} attempts; last error: {last_error}")

    async def _send(
        self, endpoint: str, path: str, body: dict[str, Any], on_delta: Callable[[str], None] | None
    ) -> dict[str, Any]:
        """One try at ``endpoint``: the answer, or a :class:`_Retry` for a failure worth another try, or the
        :class:`LLMError` of a refusal. Raised ``from None``: openai's error text may hold what the server echoed
        of the key."""
        import openai

        reader = _ChunkReader(path == "/chat/completions", on_delta)
        try:
            if body.get("stream"):
                stream = await self._openai.post(endpoint + path, body=body, cast_to=object, stream=True,
                                                 stream_cls=openai.AsyncStream[object], options=self._options)
                async with stream:
                    return await reader.read(stream)
            resp = await self._openai.post(endpoint + path, body=body, cast_to=httpx.Response, options=self._options)
        except openai.APIStatusError as e:
            raise self._refusal(e, endpoint) from None
        # connection refused or reset, timeouts (APITimeoutError is one); openai 2.x lets a stream's httpx error out
        except (openai.APIConnectionError, httpx.TransportError, _BrokenStream) as e:
            error = self._mask(f"{endpoint}: {_named(e)}")
            if reader.delivered:  # the caller has shown text of this answer: no second answer
                raise ServerError(f"the stream broke off after its first text: {error}") from None
            raise _Retry(error, None) from None
        try:
            return resp.json()
        except ValueError:
            raise _Retry(self._mask(f"{endpoint}: answer is not JSON: {resp.text[:200]!r}"), None) from None

    def _refusal(self, e: openai.APIStatusError, endpoint: str) -> Exception:
        """The error of an answer openai raised for its status: a :class:`_Retry` for one worth retrying (5xx, 429,
        408), else the LLMError the caller gets (4xx: never retried). Kept: openai's classes know neither the
        context-length error nor the key's source, and its messages are not masked."""
        status, message = e.status_code, self._mask(_error_message(e.body))
        endpoint = mask_url_credentials(endpoint)
        if status in (408, 429):
            # a hosted API's rate limit or request timeout: the request is fine, retry when told
            return _Retry(f"{endpoint}: HTTP {status}: {message}", self._retry_after_s(e.response))
        if status in (401, 403):
            return AuthError(f"{endpoint}: HTTP {status}: the endpoint refused the request ({self._key_source()}): "
                             f"{message}")
        if status == 400 and is_context_length_message(message):
            return ContextLengthError(f"{endpoint}: {message}")
        if 400 <= status < 500:
            return RequestError(f"{endpoint}: HTTP {status}: {message}")
        return _Retry(f"{endpoint}: HTTP {status}: {message}", None)  # 5xx (or a redirect, not followed)

    def _retry_after_s(self, resp: httpx.Response) -> float | None:
        """Seconds the server asked to wait (``retry-after-ms``, else ``Retry-After`` as seconds or an HTTP date),
        read by openai's own parser; a past date waits 0. ``RetryPolicy.pause_s`` cuts it to ``max_backoff_s``."""
        asked = self._openai._parse_retry_after_header(resp.headers)
        return None if asked is None else max(asked, 0.0)

    def _mask(self, text: str) -> str:
        """``text`` with the key replaced by ``***`` (a server may echo what it was sent) and any password written
        into an endpoint's URL too (``https://***@host/v1``)."""
        return mask_url_credentials(text.replace(self._key, MASK) if self._key else text)

    def _key_source(self) -> str:
        if self.config.api_key_env:
            return f"API key from environment variable {self.config.api_key_env}"
        if self.config.api_key:
            return "the configured api_key"
        return "no API key was sent; name the variable holding it in api_key_env"


class _Retry(Exception):
    """One try failed in a way worth another (5xx, 408, 429, connection, timeout, a broken stream); ``args``: the
    error (masked) and the seconds the server asked to wait (None: it did not ask)."""


class _BrokenStream(Exception):
    """A streamed answer that ended before its finish reason, or carried an error event or a chunk that is not JSON."""


class _ChunkReader:
    """Assembles a streamed answer's chunks (openai reads the server-sent events into one dict each) into the answer
    the plain request gives: the choice's text (``text``, or ``message.content`` for chat), its finish_reason and
    logprobs, and the usage of the last chunk. Kept: openai hands out the chunks, not the answer they add up to."""

    def __init__(self, chat: bool, on_delta: Callable[[str], None] | None):
        self.chat = chat
        self.on_delta = on_delta
        self.delivered = False
        """Whether any text reached ``on_delta`` (after that the request cannot be retried)."""
        self.data: dict[str, Any] = {}
        self.choice: dict[str, Any] | None = None
        self.pieces: list[str] = []

    async def read(self, chunks: AsyncIterator[Any]) -> dict[str, Any]:
        import openai

        try:
            async for chunk in chunks:
                self._take(chunk)
        except json.JSONDecodeError as e:
            raise _BrokenStream(f"a chunk is not JSON: {e}") from None
        except openai.APIConnectionError:
            raise
        except openai.APIError as e:  # an error event (openai raises it for a chunk with an "error")
            raise _BrokenStream(f"error event: {e.message[:500]}") from None
        if self.choice is None or not self.choice["finish_reason"]:
            # openai ends a stream quietly when it stops before [DONE]: an answer without its finish reason is cut
            raise _BrokenStream("the stream ended before its finish reason")
        text = "".join(self.pieces)
        self.choice.update({"message": {"role": "assistant", "content": text}} if self.chat else {"text": text})
        return {**self.data, "choices": [self.choice]}

    def _take(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise _BrokenStream(f"a chunk is not a JSON object: {str(chunk)[:200]!r}")
        for key in ("id", "object", "created", "model"):
            self.data.setdefault(key, chunk.get(key))
        if chunk.get("usage"):
            self.data["usage"] = chunk["usage"]
        for part in chunk.get("choices") or []:
            if part.get("index", 0) == 0:
                self._take_part(part)

    def _take_part(self, part: dict[str, Any]) -> None:
        self.choice = self.choice or {"index": 0, "finish_reason": None}
        text = ((part.get("delta") or {}).get("content") if self.chat else part.get("text")) or ""
        if text:
            self.pieces.append(text)
            if self.on_delta is not None:
                self.delivered = True
                self.on_delta(text)
        if part.get("finish_reason"):
            self.choice["finish_reason"] = part["finish_reason"]
        _extend_logprobs(self.choice, part.get("logprobs"))


def _extend_logprobs(choice: dict[str, Any], logprobs: Any) -> None:
    """Append a chunk's logprobs to the choice's (lists of the same keys: ``token_logprobs``, ``tokens``... for
    completions, ``content`` for chat)."""
    if not isinstance(logprobs, dict):
        return
    mine = choice.setdefault("logprobs", {})
    for key, value in logprobs.items():
        if isinstance(value, list):
            mine.setdefault(key, []).extend(value)


def _named(e: BaseException) -> str:
    """``Type: message`` of a failed try: the httpx error under openai's APIConnectionError ("Connection error.")."""
    cause = e.__cause__ or e
    return f"{type(cause).__name__}: {cause}"


def _first_choice(data: dict, endpoint: str) -> dict:
    choices = data.get("choices") or []
    if not choices:
        raise ServerError(f"{endpoint}: answer has no choices: {str(data)[:300]}")
    return choices[0]


def _error_message(body: object) -> str:
    """The message of an error answer, from its body as openai read it (the ``error`` object, else the JSON or
    text answered)."""
    if isinstance(body, dict) and "message" in body:
        return str(body["message"])
    return str(body)[:500]


def complete_sync(
    config: ClientConfig, prompt: str, sampling: Sampling | None = None, stop: list[str] | None = None
) -> Completion:
    """One completion from synchronous code (scripts, notebooks): opens and closes its own client."""

    async def _run() -> Completion:
        async with LLMClient(config) as client:
            return await client.complete(prompt, sampling, stop)

    return asyncio.run(_run())


def chat_sync(
    config: ClientConfig,
    messages: list[dict[str, str]],
    sampling: Sampling | None = None,
    stop: list[str] | None = None,
) -> Completion:
    """One chat completion from synchronous code."""

    async def _run() -> Completion:
        async with LLMClient(config) as client:
            return await client.chat(messages, sampling, stop)

    return asyncio.run(_run())
