"""Async client for OpenAI-compatible servers (vLLM): completions and chat completions.

PUBLIC API (other modules code against exactly this; the implementation is being filled in):

    client = LLMClient(ClientConfig(endpoints=["http://127.0.0.1:8000/v1"], model="m"))
    c: Completion = await client.complete(prompt, sampling=Sampling(...), stop=["\nObservation"])
    c: Completion = await client.chat(messages, sampling=Sampling(...), stop=[...])
    await client.aclose()    # or: async with LLMClient(cfg) as client: ...

Errors: LLMError (base), ContextLengthError (prompt + max_tokens exceed the model's context; callers
end the episode with finish reason ``context_overflow``), ServerError (5xx / connection after retries),
RequestError (4xx other than context length; never retried).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from actune.config import StrictModel


class ClientConfig(StrictModel):
    """How to reach the model server(s)."""

    endpoints: list[str] = Field(default_factory=lambda: ["http://127.0.0.1:8000/v1"])
    """Base URLs of OpenAI-compatible servers (ending in /v1); requests are spread over all of them."""
    model: str = ""
    """Model name as the server knows it (a served model name or a LoRA adapter name)."""
    api_key: str | None = None
    """Bearer token, when the server was started with --api-key."""
    max_concurrency: int = Field(16, ge=1)
    """Most requests in flight at once, over all endpoints."""
    timeout_s: float = Field(300.0, gt=0)
    """Per-request timeout in seconds."""
    max_retries: int = Field(4, ge=0)
    """Retries on connection errors and 5xx (never on 4xx), with exponential backoff."""
    backoff_s: float = Field(0.5, ge=0)
    """First backoff delay; doubles each retry."""


@dataclass
class Sampling:
    """Sampling parameters sent with every request."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None
    logprobs: int | None = None
    """Number of top log-probabilities per generated token to return (None: none)."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


@dataclass
class Completion:
    text: str
    finish_reason: str  # "stop" | "length" | ...
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    endpoint: str = ""
    token_logprobs: list[float] | None = None
    raw: dict[str, Any] | None = None


class LLMError(RuntimeError):
    """Base of every client error."""


class ContextLengthError(LLMError):
    """The prompt plus max_tokens do not fit the model's context window."""


class ServerError(LLMError):
    """5xx or connection failure that persisted through all retries."""


class RequestError(LLMError):
    """A 4xx answer (bad request, unknown model, auth); not retried."""
