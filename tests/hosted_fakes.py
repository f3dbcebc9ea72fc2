"""A fake hosted OpenAI-compatible API on ``httpx.MockTransport`` (no socket, no server): the real
:class:`actune.llm.LLMClient` talks to it through an injected transport, so the tests see exactly the requests
and headers the client sends.

``FakeHostedAPI(keys={"api.teacher.example": KEY})`` wants ``Authorization: Bearer KEY`` from that host and
answers 401 otherwise, echoing what it was sent as some hosted APIs do (the client must mask it); other hosts
(a local server's) take any request. ``rate_limits=n`` answers the first n requests 429 with ``Retry-After``.
Replies follow the scripted Walkman episode of ``collect_fakes`` (search, then answer Sony)."""

from __future__ import annotations

import json

import httpx
from collect_fakes import FINISH, SEARCH

from actune.llm import LLMClient

KEY = "sk-fake-0123456789abcdefXYZ"
"""A made-up API key: the tests check it never appears in an error, a log, a record or a report."""


class FakeHostedAPI:
    def __init__(self, keys: dict[str, str] | None = None, rate_limits: int = 0, retry_after: str = "0") -> None:
        self.keys = dict(keys or {})
        self.rate_limits = rate_limits
        self.retry_after = retry_after
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        sent = request.headers.get("authorization", "")
        want = self.keys.get(request.url.host)
        if want is not None and sent != f"Bearer {want}":
            return httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {sent[7:]!r}",
                                                       "type": "invalid_request_error"}})
        if self.rate_limits:
            self.rate_limits -= 1
            return httpx.Response(429, headers={"Retry-After": self.retry_after},
                                  json={"error": {"message": "Rate limit reached for requests"}})
        body = json.loads(request.content)
        if request.url.path.endswith("/chat/completions"):
            text = FINISH if body["messages"][-1]["role"] == "assistant" else SEARCH
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        else:
            text = SEARCH if body["prompt"].rstrip().endswith("Thought 1:") else FINISH
            choice = {"index": 0, "text": text, "finish_reason": "stop"}
        return httpx.Response(200, json={"choices": [choice], "model": body["model"],
                                         "usage": {"prompt_tokens": 11, "completion_tokens": 5}})

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    def client_class(self, configs: list | None = None) -> type[LLMClient]:
        """An LLMClient that talks to this fake, to stand in for ``actune.llm.LLMClient`` in a stage; the
        ClientConfig of each client made is appended to ``configs`` when given."""
        fake = self

        class FakeTransportClient(LLMClient):
            def __init__(self, config, **_: object) -> None:
                if configs is not None:
                    configs.append(config)
                super().__init__(config, transport=fake.transport())

        return FakeTransportClient

    def sent(self, host: str) -> list[tuple[str, str | None, str]]:
        """(path, Authorization header, model) of each request to ``host``."""
        return [(r.url.path, r.headers.get("authorization"), json.loads(r.content)["model"])
                for r in self.requests if r.url.host == host]
