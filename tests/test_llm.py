"""LLMClient logic against FakeOpenAIServer, a scripted OpenAI-compatible HTTP server in a thread.

The fake only exists to test the client's own logic (retries, error mapping, endpoint spreading,
concurrency); tests/serve/test_server.py runs the client against the real vLLM server.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from hosted_fakes import KEY, FakeHostedAPI
from pydantic import ValidationError

from actune.config import ConfigError
from actune.llm import (
    AuthError,
    ClientConfig,
    Completion,
    ContextLengthError,
    LLMClient,
    LLMError,
    RequestError,
    RetryPolicy,
    Sampling,
    ServerError,
    Usage,
    complete_sync,
    read_api_key,
)

VLLM_CONTEXT_ERROR = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, your prompt contains at least "
        "2049 input tokens, which exceeds this limit even without any output tokens. Please reduce the length "
        "of the input prompt. (parameter=input_tokens, value=2049)",
        "type": "BadRequestError",
        "param": "input_tokens",
        "code": 400,
    }
}


def completion_body(text: str = "ok", finish: str = "stop", cached: int | None = None) -> dict:
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "choices": [{"index": 0, "text": text, "finish_reason": finish,
                     "logprobs": {"token_logprobs": [-0.5, -0.25], "tokens": ["o", "k"]}}],
        "usage": usage,
    }


class FakeOpenAIServer:
    """Answers POSTs with scripted (status, json) replies in order (the last one repeats), records each
    request body, and tracks how many requests were in flight at once."""

    def __init__(self, replies: list[tuple[int, dict]] | None = None, delay_s: float = 0.0):
        self.replies = list(replies or [(200, completion_body())])
        self.delay_s = delay_s
        self.requests: list[tuple[str, dict]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append((self.path, body))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    status, reply = fake.replies.pop(0) if len(fake.replies) > 1 else fake.replies[0]
                time.sleep(fake.delay_s)
                data = json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    if status == 429:
                        self.send_header("Retry-After", "0.2")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up: what the timeout test wants
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOpenAIServer":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def config(*endpoints: str, **kw) -> ClientConfig:
    return ClientConfig(endpoints=list(endpoints), model="m", **{"backoff_s": 0.01, **kw})


def run(coro):
    return asyncio.run(coro)


def test_completion_request_and_response_fields():
    with FakeOpenAIServer([(200, completion_body(" Paris", "stop", cached=4))]) as fake:
        async def go():
            async with LLMClient(config(fake.base_url)) as client:
                c = await client.complete("Q: capital?", Sampling(temperature=0.7, top_p=0.9, max_tokens=12, seed=3,
                                                                  logprobs=1), stop=["\nObservation"])
                return c, client.usage, client.requests

        c, total, n = run(go())
    path, body = fake.requests[0]
    assert path == "/v1/completions"
    assert body == {"model": "m", "prompt": "Q: capital?", "temperature": 0.7, "top_p": 0.9, "max_tokens": 12,
                    "seed": 3, "stop": ["\nObservation"], "logprobs": 1}
    assert (c.text, c.finish_reason, c.endpoint) == (" Paris", "stop", fake.base_url)
    assert c.usage == Usage(prompt_tokens=7, completion_tokens=3, cached_prompt_tokens=4)
    assert c.token_logprobs == [-0.5, -0.25]
    assert total == c.usage and n == 1


def test_chat_request_model_override_and_extra_body():
    reply = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "length",
                          "logprobs": {"content": [{"token": "hi", "logprob": -1.5}]}}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    with FakeOpenAIServer([(200, reply)]) as fake:
        c = run(_chat(fake.base_url))
    path, body = fake.requests[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "my-adapter" and body["messages"] == [{"role": "user", "content": "hello"}]
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert body["continue_final_message"] is True and "seed" not in body and "stop" not in body
    assert (c.text, c.finish_reason, c.token_logprobs) == ("hi", "length", [-1.5])
    assert c.usage == Usage(5, 1, 0)


async def _chat(url):
    async with LLMClient(config(url)) as client:
        return await client.chat([{"role": "user", "content": "hello"}], Sampling(logprobs=2), model="my-adapter",
                                 extra_body={"continue_final_message": True})


def test_retries_5xx_then_succeeds():
    with FakeOpenAIServer([(503, {"error": {"message": "busy"}}), (500, {"error": {"message": "oops"}}),
                           (200, completion_body("fine"))]) as fake:
        c = complete_sync(config(fake.base_url), "x")
    assert c.text == "fine"
    assert len(fake.requests) == 3


def test_rate_limit_is_retried_after_the_time_it_asks():
    """A hosted teacher's 429 (rate limit) is a wait, not a failure; Retry-After sets the pause."""
    with FakeOpenAIServer([(429, {"error": {"message": "slow down"}}), (200, completion_body("fine"))]) as fake:
        t0 = time.perf_counter()
        c = complete_sync(config(fake.base_url, backoff_s=0.0), "x")
        waited = time.perf_counter() - t0
    assert (c.text, len(fake.requests)) == ("fine", 2)
    assert waited >= 0.2  # the header's 0.2 s, not the zero backoff


def test_gives_up_after_max_retries_with_last_error():
    with FakeOpenAIServer([(502, {"error": {"message": "bad gateway"}})]) as fake:
        with pytest.raises(ServerError, match="after 3 attempts.*HTTP 502: bad gateway"):
            complete_sync(config(fake.base_url, max_retries=2), "x")
    assert len(fake.requests) == 3


def test_4xx_is_not_retried():
    error = {"error": {"message": "The model `nope` does not exist.", "code": 404}}
    with FakeOpenAIServer([(404, error), (200, completion_body())]) as fake:
        with pytest.raises(RequestError, match="HTTP 404: The model `nope` does not exist"):
            complete_sync(config(fake.base_url), "x")
    assert len(fake.requests) == 1


def test_context_length_400_becomes_context_length_error():
    with FakeOpenAIServer([(400, VLLM_CONTEXT_ERROR), (200, completion_body())]) as fake:
        with pytest.raises(ContextLengthError, match="maximum context length is 2048"):
            complete_sync(config(fake.base_url), "x" * 10000)
    assert len(fake.requests) == 1


def test_other_400_is_a_request_error():
    with FakeOpenAIServer([(400, {"error": {"message": "temperature must be non-negative"}})]) as fake:
        with pytest.raises(RequestError) as e:
            complete_sync(config(fake.base_url), "x")
    assert not isinstance(e.value, ContextLengthError)


def test_connection_refused_is_retried_on_the_other_endpoint():
    dead = "http://127.0.0.1:9/v1"  # discard port: nothing listens
    with FakeOpenAIServer() as fake:
        async def go():
            async with LLMClient(config(dead, fake.base_url)) as client:
                return [await client.complete(str(i)) for i in range(4)]

        results = run(go())
    assert [c.endpoint for c in results] == [fake.base_url] * 4
    assert len(fake.requests) == 4


def test_connection_errors_only_raise_server_error():
    with pytest.raises(ServerError, match="ConnectError"):
        complete_sync(config("http://127.0.0.1:9/v1", max_retries=1), "x")


def test_requests_spread_over_endpoints():
    with FakeOpenAIServer(delay_s=0.05) as a, FakeOpenAIServer(delay_s=0.05) as b:
        async def go():
            async with LLMClient(config(a.base_url, b.base_url, max_concurrency=8)) as client:
                return await asyncio.gather(*(client.complete(str(i)) for i in range(8)))

        results = run(go())
    assert len(a.requests) == 4 and len(b.requests) == 4
    assert sorted(c.endpoint for c in results) == sorted([a.base_url] * 4 + [b.base_url] * 4)


def test_sequential_requests_alternate_endpoints():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        async def go():
            async with LLMClient(config(a.base_url, b.base_url)) as client:
                return [(await client.complete(str(i))).endpoint for i in range(4)]

        assert run(go()) == [a.base_url, b.base_url, a.base_url, b.base_url]


def test_concurrency_limit_holds():
    with FakeOpenAIServer(delay_s=0.1) as fake:
        async def go():
            async with LLMClient(config(fake.base_url, max_concurrency=3)) as client:
                await asyncio.gather(*(client.complete(str(i)) for i in range(9)))

        run(go())
    assert len(fake.requests) == 9
    assert fake.max_in_flight == 3


def test_timeout_is_retried_then_server_error():
    with FakeOpenAIServer(delay_s=0.5) as fake:
        with pytest.raises(ServerError, match="ReadTimeout"):
            complete_sync(config(fake.base_url, timeout_s=0.1, max_retries=1), "x")
    assert len(fake.requests) == 2


def test_missing_model_name_is_an_error():
    with pytest.raises(ValueError, match="no model name"):
        complete_sync(ClientConfig(endpoints=["http://127.0.0.1:9/v1"]), "x")


# --- the wire: what the hand-written httpx client sent, openai's client sends (issue #50) ----------------------

WIRE_MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": 'héllo "x"\n'},
                 {"role": "assistant", "content": "Thought:"}]
WIRE_TOOLS = [{"type": "function", "function": {"name": "search", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}]
BASE = {"model": "m", "temperature": 0.0, "top_p": 1.0, "max_tokens": 256}
STREAM = {"stream": True, "stream_options": {"include_usage": True}}
# the JSON bodies the client sent before openai carried them (recorded from it, one per call of wire_calls)
WIRE_BODIES = [
    ("/v1/completions", {**BASE, "prompt": "p"}),
    ("/v1/completions", {"model": "lora-1", "temperature": 0.0, "top_p": 0.95, "max_tokens": 7, "seed": 11,
                         "stop": ["\nObs", "END"], "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1,
                         "include_stop_str_in_output": False, "prompt": "Q: ü\n", "logprobs": 3}),
    ("/v1/chat/completions", {**BASE, "seed": 0, "continue_final_message": True, "add_generation_prompt": False,
                              "top_k": -1, "messages": WIRE_MESSAGES, "tools": WIRE_TOOLS, "logprobs": True,
                              "top_logprobs": 0}),
    ("/v1/completions", {**BASE, "stop": ["x"], **STREAM, "prompt": "p"}),
    ("/v1/chat/completions", {**BASE, "max_tokens": 3, "seed": 5, **STREAM, "messages": WIRE_MESSAGES}),
]


def wire_answer(request: httpx.Request) -> httpx.Response:
    chat = request.url.path.endswith("/chat/completions")
    if json.loads(request.content).get("stream"):
        part = {"index": 0, "delta": {"content": "ok"}} if chat else {"index": 0, "text": "ok"}
        chunk = json.dumps({"choices": [{**part, "finish_reason": "stop"}]}).encode()
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=b"data: " + chunk + b"\n\ndata: [DONE]\n\n")
    choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}} if chat else {"index": 0, "text": "ok"}
    return httpx.Response(200, json={"choices": [{**choice, "finish_reason": "stop"}]})


async def wire_calls(client: LLMClient) -> None:
    await client.complete("p")
    await client.complete("Q: ü\n", Sampling(temperature=0.0, top_p=0.95, max_tokens=7, seed=11, logprobs=3),
                          ["\nObs", "END"], model="lora-1", extra_body={
                              "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1, "include_stop_str_in_output": False})
    await client.chat(WIRE_MESSAGES, Sampling(logprobs=0, seed=0), [], tools=WIRE_TOOLS,
                      extra_body={"continue_final_message": True, "add_generation_prompt": False, "top_k": -1})
    await client.complete("p", stop=["x"], on_delta=lambda text: None)
    await client.chat(WIRE_MESSAGES, Sampling(max_tokens=3), stream=True, extra_body={"seed": 5})


@pytest.mark.parametrize("api_key", [None, KEY])
def test_the_bodies_and_headers_sent_are_the_hand_written_clients(api_key):
    sent: list[httpx.Request] = []

    async def go():
        cfg = ClientConfig(endpoints=["http://a/v1", "http://b/v1/"], model="m", api_key=api_key)
        async with LLMClient(cfg, transport=httpx.MockTransport(lambda r: sent.append(r) or wire_answer(r))) as client:
            await wire_calls(client)

    run(go())
    assert [(r.url.path, json.loads(r.content)) for r in sent] == WIRE_BODIES
    assert [r.url.host for r in sent] == ["a", "b", "a", "b", "a"]
    assert {r.headers.get("authorization") for r in sent} == {api_key and f"Bearer {api_key}"}
    assert {r.headers["content-type"] for r in sent} == {"application/json"}


# --- a hosted API: the key from the variable api_key_env names, never shown (issue #8) ----------------------

HOSTED = "https://api.teacher.example/v1"


def hosted_complete(fake, cfg: ClientConfig, prompt: str = "Question: q\nThought 1:"):
    async def go():
        async with LLMClient(cfg, transport=fake.transport()) as client:
            return await client.complete(prompt)

    return run(go())


def test_api_key_env_sends_the_key_as_a_bearer_token(monkeypatch):
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    fake = FakeHostedAPI(keys={"api.teacher.example": KEY})
    cfg = ClientConfig(endpoints=[HOSTED], model="teacher-xl", api_key_env="TEACHER_API_KEY")
    c = hosted_complete(fake, cfg)
    assert c.text.startswith(" I need to search Walkman")
    assert fake.sent("api.teacher.example") == [("/v1/completions", f"Bearer {KEY}", "teacher-xl")]
    assert KEY not in repr(cfg) and KEY not in cfg.model_dump_json()  # the config holds the name only


def test_a_missing_variable_is_a_config_error_naming_option_and_variable(monkeypatch):
    monkeypatch.delenv("TEACHER_API_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"^api_key_env: environment variable TEACHER_API_KEY is not set"):
        LLMClient(ClientConfig(endpoints=[HOSTED], model="m", api_key_env="TEACHER_API_KEY"))
    monkeypatch.setenv("TEACHER_API_KEY", "  ")
    with pytest.raises(ConfigError, match=r"^bootstrap.api_key_env: environment variable TEACHER_API_KEY is not "
                                          r"set \(or empty\)"):
        read_api_key("TEACHER_API_KEY", "bootstrap.api_key_env")


def test_api_key_env_takes_a_name_and_never_shows_a_pasted_key():
    with pytest.raises(ValidationError) as e:
        ClientConfig(api_key_env=KEY)
    assert "NAME of an environment variable" in str(e.value) and KEY not in str(e.value)
    with pytest.raises(ValidationError, match="api_key and api_key_env both set") as e:
        ClientConfig(api_key=KEY, api_key_env="TEACHER_API_KEY")
    assert KEY not in str(e.value)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_an_auth_error_that_names_the_variable_not_the_key(monkeypatch, status, caplog):
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    fake = FakeHostedAPI(keys={"api.teacher.example": "sk-another-key"})  # ours is refused, echoed back
    if status == 403:
        fake.handler = lambda request: httpx.Response(
            403, json={"error": {"message": f"key {request.headers['authorization'][7:]} may not use this model"}})
    cfg = ClientConfig(endpoints=[HOSTED], model="m", api_key_env="TEACHER_API_KEY", backoff_s=0.0)
    with caplog.at_level("DEBUG"), pytest.raises(AuthError) as e:
        hosted_complete(fake, cfg)
    message = str(e.value)
    assert message.startswith(f"{HOSTED}: HTTP {status}: the endpoint refused the request (API key from environment "
                              "variable TEACHER_API_KEY): ")
    assert "***" in message and KEY not in message and KEY not in caplog.text
    assert len(fake.requests) <= 1  # never retried


def test_no_key_sent_says_so():
    fake = FakeHostedAPI(keys={"api.teacher.example": KEY})
    with pytest.raises(AuthError, match="no API key was sent; name the variable holding it in api_key_env"):
        hosted_complete(fake, ClientConfig(endpoints=[HOSTED], model="m"))
    assert fake.requests[0].headers.get("authorization") is None


def test_a_rate_limited_hosted_api_is_retried_with_the_key_each_time(monkeypatch):
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    fake = FakeHostedAPI(keys={"api.teacher.example": KEY}, rate_limits=2, retry_after="0.05")
    t0 = time.perf_counter()
    c = hosted_complete(fake, ClientConfig(endpoints=[HOSTED], model="m", api_key_env="TEACHER_API_KEY",
                                           backoff_s=0.0))
    assert c.finish_reason == "stop" and time.perf_counter() - t0 >= 0.1  # two waits of Retry-After
    assert [h for _, h, _ in fake.sent("api.teacher.example")] == [f"Bearer {KEY}"] * 3
    fake = FakeHostedAPI(keys={"api.teacher.example": KEY}, rate_limits=10)
    with pytest.raises(ServerError, match=r"after 2 attempts; last error: .*HTTP 429: Rate limit") as e:
        hosted_complete(fake, ClientConfig(endpoints=[HOSTED], model="m", api_key_env="TEACHER_API_KEY",
                                           max_retries=1, backoff_s=0.0))
    assert KEY not in str(e.value)


def test_the_pause_doubles_up_to_the_cap_and_waits_what_the_server_asks():
    policy = RetryPolicy(backoff_s=0.5, max_backoff_s=3.0)
    assert [policy.pause_s(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.pause_s(2, jitter=0.1) == 1.1
    assert policy.pause_s(1, asked_s=0.8) == 0.8  # Retry-After longer than the backoff: waited
    assert policy.pause_s(3, asked_s=0.8) == 2.0  # shorter: the backoff
    assert policy.pause_s(1, asked_s=500.0) == 3.0  # longer than the cap: cut to it
    assert policy.pause_s(10_000) == 3.0  # no overflow however many retries
    assert RetryPolicy().model_dump() == {"max_retries": 4, "backoff_s": 0.5, "max_backoff_s": 60.0}
    with pytest.raises(ValidationError, match="max_backoff_s"):
        RetryPolicy(max_backoff_s=0)


def test_retry_after_is_read_as_seconds_milliseconds_or_an_http_date():
    """The pause after a 429 is what its headers ask (openai's parser reads them); no readable header: the backoff
    (0 here), a past date or a negative value: no wait."""

    def asked(**headers: str) -> float:
        replies = [httpx.Response(429, headers=headers, json={"error": {"message": "slow down"}}),
                   httpx.Response(200, json=completion_body())]
        pauses: list[float] = []

        async def record(seconds: float) -> None:
            pauses.append(seconds)

        async def go():
            cfg = config("http://fake/v1", backoff_s=0.0, max_backoff_s=1000.0)
            async with LLMClient(cfg, transport=httpx.MockTransport(lambda r: replies.pop(0))) as client:
                client._sleep = record
                await client.complete("x")

        run(go())
        assert len(pauses) == 1
        return pauses[0]

    assert asked(**{"Retry-After": "7"}) == 7.0
    assert asked(**{"Retry-After": "-3"}) == 0.0
    assert asked(**{"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5  # OpenAI's, more precise, first
    assert asked(**{"Retry-After": formatdate(time.time() + 150, usegmt=True)}) == pytest.approx(150.0, abs=2.0)
    assert asked(**{"Retry-After": "Mon, 30 Nov 2020 11:00:00 GMT"}) == 0.0  # already past
    assert asked(**{"Retry-After": "soon"}) == 0.0 and asked() == 0.0


def rate_limited_pauses(fake: FakeHostedAPI, cfg: ClientConfig) -> tuple[list[float], Completion | Exception]:
    """The pauses the client took (recorded, not slept) and what the request gave."""
    pauses: list[float] = []

    async def record(seconds: float) -> None:
        pauses.append(seconds)

    async def go():
        async with LLMClient(cfg, transport=fake.transport()) as client:
            client._sleep = record
            try:
                return await client.complete("Question: q\nThought 1:")
            except LLMError as e:
                return e

    return pauses, run(go())


def test_a_long_rate_limit_window_is_survived_by_configuration(monkeypatch):
    """An API that says "come back in 2 minutes" five times: the default policy (4 retries, pauses cut to 60 s)
    fails the request; 5 retries with max_backoff_s 150 wait exactly what it asks and get the answer."""
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    keyed = {"endpoints": [HOSTED], "model": "m", "api_key_env": "TEACHER_API_KEY", "backoff_s": 0.0}
    fake = FakeHostedAPI(keys={"api.teacher.example": KEY}, rate_limits=5, retry_after="120")
    pauses, result = rate_limited_pauses(fake, ClientConfig(**keyed))
    assert pauses == [60.0] * 4 and len(fake.requests) == 5
    assert isinstance(result, ServerError) and "after 5 attempts; last error:" in str(result)
    fake = FakeHostedAPI(keys={"api.teacher.example": KEY}, rate_limits=5, retry_after="120")
    pauses, result = rate_limited_pauses(fake, ClientConfig(**keyed, max_retries=5, max_backoff_s=150.0))
    assert pauses == [120.0] * 5 and len(fake.requests) == 6
    assert isinstance(result, Completion) and result.finish_reason == "stop"


def test_a_server_echoing_the_key_in_any_error_is_masked(monkeypatch):
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    for status in (500, 400, 404):
        transport = httpx.MockTransport(lambda r, s=status: httpx.Response(s, text=f"bad {r.headers['authorization']}"))

        async def go(t=transport):
            async with LLMClient(ClientConfig(endpoints=[HOSTED], model="m", api_key_env="TEACHER_API_KEY",
                                              max_retries=0), transport=t) as client:
                await client.complete("x")

        with pytest.raises((ServerError, RequestError)) as e:
            run(go())
        assert "Bearer ***" in str(e.value) and KEY not in str(e.value)



def test_a_password_written_into_an_endpoints_url_is_in_no_error():
    url = "http://alice:S3CRETPW@127.0.0.1:9/v1"  # nothing listens: a connection error
    for status in (None, 500, 401, 400):
        transport = None if status is None else httpx.MockTransport(lambda r, s=status: httpx.Response(s, text="no"))

        async def go(t=transport):
            async with LLMClient(ClientConfig(endpoints=[url], model="m", max_retries=0, backoff_s=0.01),
                                 **({"transport": t} if t else {})) as client:
                await client.complete("x")

        with pytest.raises(LLMError) as e:
            run(go())
        assert "S3CRETPW" not in str(e.value) and "http://***@127.0.0.1:9/v1" in str(e.value), (status, e.value)


# --- streaming (server-sent events) against FakeStreamingAPI, a FAKE server on httpx.MockTransport -----------

from agent.fakes import Dropped, FakeStreamingAPI  # noqa: E402


def streaming_client(fake: FakeStreamingAPI, **kw) -> LLMClient:
    return LLMClient(config("http://fake/v1", **kw), transport=fake.transport)


@pytest.mark.parametrize("kind", ["complete", "chat"])
@pytest.mark.parametrize("finish", ["stop", "length"])
def test_a_streamed_completion_is_the_plain_one(kind, finish):
    text = " Sony was founded in 1946.\nAction 3: finish[1946]"
    fake = FakeStreamingAPI([text, text], piece=2, finish=finish)
    prompt = "Question: q\nThought 1:"
    pieces: list[str] = []

    async def go():
        async with streaming_client(fake) as client:
            call = client.complete if kind == "complete" else client.chat
            arg = prompt if kind == "complete" else [{"role": "user", "content": prompt}]
            plain = await call(arg, Sampling(max_tokens=64), ["\nObservation"])
            streamed = await call(arg, Sampling(max_tokens=64), ["\nObservation"], on_delta=pieces.append)
            return plain, streamed, client.usage, client.requests

    plain, streamed, total, n = run(go())
    assert (streamed.text, streamed.finish_reason, streamed.usage) == (plain.text, plain.finish_reason, plain.usage)
    assert streamed.usage == Usage(prompt_tokens=len(prompt) // 4, completion_tokens=8, cached_prompt_tokens=2)
    assert pieces == fake.pieces(text) and "".join(pieces) == text and len(pieces) == 4
    assert total == Usage(2 * (len(prompt) // 4), 16, 4) and n == 2
    (_, plain_body), (_, stream_body) = fake.requests
    assert "stream" not in plain_body
    assert stream_body["stream"] is True and stream_body["stream_options"] == {"include_usage": True}
    assert {k: v for k, v in stream_body.items() if not k.startswith("stream")} == plain_body


def test_stream_flag_streams_without_a_callback():
    fake = FakeStreamingAPI(["a b c"])

    async def go():
        async with streaming_client(fake) as client:
            return await client.complete("p", stream=True)

    c = run(go())
    assert c.text == "a b c" and c.usage.completion_tokens == 3 and fake.requests[0][1]["stream"] is True


def test_errors_before_the_first_text_are_retried():
    # a 503, then a stream that breaks off before any text: both retried, as a plain request would be
    fake = FakeStreamingAPI([(503, "overloaded"), Dropped("never shown", after=0), "ok then"])
    pieces: list[str] = []

    async def go():
        async with streaming_client(fake) as client:
            return await client.complete("p", on_delta=pieces.append)

    c = run(go())
    assert c.text == "ok then" and "".join(pieces) == "ok then" and len(fake.requests) == 3


def test_a_stream_that_breaks_off_after_its_first_text_is_a_server_error_not_retried():
    fake = FakeStreamingAPI([Dropped(" Sony was founded in", after=2), "a second answer"])
    pieces: list[str] = []

    async def go():
        async with streaming_client(fake) as client:
            return await client.complete("p", on_delta=pieces.append)

    with pytest.raises(ServerError, match="broke off after its first text.*RemoteProtocolError"):
        run(go())
    assert pieces == [" Sony", " was"] and len(fake.requests) == 1  # no second answer after shown text


def test_a_stream_cut_short_or_carrying_an_error_is_retried_and_named():
    """openai ends a stream quietly when it stops before [DONE]: without a finish reason the answer is cut short,
    retried like an error event; the last one names what broke."""
    def events(*chunks: dict) -> httpx.Response:
        data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=data)

    no_text = {"choices": [{"index": 0, "text": "", "finish_reason": None}]}
    replies = [events(), events(no_text), events({"error": {"message": "engine died"}}),
               events({"choices": [{"index": 0, "text": "fine", "finish_reason": "stop"}]})]

    async def go(max_retries: int):
        async with LLMClient(config("http://fake/v1", max_retries=max_retries),
                             transport=httpx.MockTransport(lambda r: replies.pop(0))) as client:
            return await client.complete("p", stream=True)

    with pytest.raises(ServerError, match="after 3 attempts; last error: .*_BrokenStream: error event: engine died"):
        run(go(2))
    assert run(go(0)).text == "fine"


def test_streamed_4xx_keep_their_errors():
    fake = FakeStreamingAPI([(400, VLLM_CONTEXT_ERROR["error"]["message"]), (404, "no such model")])

    async def go(client):
        return await client.complete("p", on_delta=lambda t: None)

    async def both():
        async with streaming_client(fake) as client:
            with pytest.raises(ContextLengthError):
                await go(client)
            with pytest.raises(RequestError, match="404: no such model"):
                await go(client)

    run(both())
    assert len(fake.requests) == 2
