"""The pipeline bench's own logic (bench/pipeline.py): the replay and the table. The bench itself runs the
real stack and asserts nothing; these check what it computes from what it measures."""

from __future__ import annotations

import asyncio

from bench_script import load

from actune.llm import Completion, Sampling, Usage

pipeline = load("pipeline")


class FakeClient:
    """Answers every request with one token per prompt character, at most max_tokens; records the calls."""

    def __init__(self):
        self.calls = []

    async def complete(self, prompt, sampling=None, stop=None, **kw):
        self.calls.append(("complete", prompt, kw))
        await asyncio.sleep(0)
        return Completion("x", "stop", Usage(len(prompt), min(len(prompt), sampling.max_tokens)))

    async def chat(self, messages, sampling=None, stop=None, **kw):
        self.calls.append(("chat", messages, kw))
        return Completion("y", "stop", Usage(1, 2))


def test_recorded_requests_are_replayed_once_each_an_episodes_in_its_order(monkeypatch):
    fake = FakeClient()
    rec = pipeline.RecordingLLM(fake)
    s = Sampling(max_tokens=3)

    async def run_loop():  # two episodes, interleaved as the loop interleaves them
        a, b = rec.for_episode(0), rec.for_episode(1)
        await a.complete("abcd", s, ["\n"], model="m-lora")
        await b.chat([{"role": "user", "content": "hi"}], s)
        await a.complete("ab", s)
        await b.complete("xyz", s)

    asyncio.run(run_loop())
    assert [(r[0], r[1]) for r in rec.requests] == [(0, "complete"), (1, "chat"), (0, "complete"), (1, "complete")]

    class OrderedFake(FakeClient):
        """Records when each request starts and ends, so the replay's order within an episode shows."""

        async def complete(self, prompt, sampling=None, stop=None, **kw):
            self.calls.append(("start", prompt))
            await asyncio.sleep(0.01)
            c = await super().complete(prompt, sampling, stop, **kw)
            self.calls.append(("end", prompt))
            return c

    replayed = OrderedFake()

    class Ctx:
        async def __aenter__(self):
            return replayed

        async def __aexit__(self, *a):
            return None

    monkeypatch.setattr(pipeline, "_client", lambda url, model, c: Ctx())
    tokens, wall = asyncio.run(pipeline.replay_episodes("http://x", "m", rec.requests, concurrency=2))
    assert tokens == 3 + 2 + 2 + 3
    assert ("complete", "abcd", {"model": "m-lora"}) in replayed.calls and ("chat", [{"role": "user", "content": "hi"}], {}) in replayed.calls
    # episode 0's second request starts only after its first ended, though two episodes run at once
    calls = replayed.calls
    assert calls.index(("end", "abcd")) < calls.index(("start", "ab"))
    assert calls.index(("start", "xyz")) < calls.index(("end", "abcd"))  # episode 1 ran beside it


def test_a_stages_requests_are_tagged_by_the_worker_that_sent_them():
    rec = pipeline.RecordingLLM(FakeClient(), episode=None)  # as eval's collection records them
    s = Sampling(max_tokens=3)

    async def worker(prompts):  # one worker's episodes, one after another
        for p in prompts:
            await rec.complete(p, s)

    async def stage():
        await asyncio.gather(worker(["a1", "a2"]), worker(["b1"]))

    asyncio.run(stage())
    tags = {}
    for tag, _, prompt, *_ in rec.requests:
        tags.setdefault(tag, []).append(prompt)
    assert sorted(tags.values()) == [["a1", "a2"], ["b1"]]


def test_table_gives_each_ratio_against_its_target():
    table = pipeline.format_table({
        "machine": "cpu X",
        "engine": {"gen_tok_s": 100.0}, "loop": {"gen_tok_s": 80.0, "episodes_h": 1000},
        "bootstrap": {"episodes_h": 950, "kept_h": 200, "split": {"generation": 0.5, "idle": 0.25}},
        "eval_prompted": {"episodes_h": 2000, "gen_tok_s": 90.0, "prompt_tokens_per_episode": 5000},
        "eval_merged": {"episodes_h": 3000, "gen_tok_s": 95.0, "engine_gen_tok_s": 100.0,
                        "prompt_tokens_per_episode": 600},
        "training": {"actune": {"tokens_s": 200.0}, "trl": {"tokens_s": 160.0}},
        "peak_memory_mb": {"server A": 3000},
    }, 16)
    lines = table.splitlines()
    assert lines[0] == "Machine: cpu X"
    assert "loop / engine 0.80 (target >= 0.9: missed by 0.10)" in table
    assert "bootstrap / loop 0.95 (target >= 0.9: met)" in table
    # a tuned eval against the engine on its own requests; episodes/hour against prompted is no target
    assert "| eval tuned, merged: generated tok/s (engine on the same requests) | 95.0 (100.0) | eval / engine 0.95 " \
           "(target >= 0.9: met) |" in lines
    assert "vs prompted 1.50x (not a target: steps differ)" in table
    assert "actune / TRL 1.25 (target >= 1.5: missed by 0.25)" in table
    assert "generation 50%, idle 25%" in table
    assert "| peak memory, server A (MB) | 3000 |  |" in lines


def test_reset_prefix_cache_retries_until_the_server_says_it_emptied(monkeypatch):
    import httpx

    answers = iter([False, False, True])
    posted = []

    def fake_post(url, timeout):  # a fake of vLLM's dev endpoint: false while a request still holds blocks
        posted.append(url)
        return httpx.Response(200, json={"success": next(answers)}, request=httpx.Request("POST", url))

    monkeypatch.setattr(httpx, "post", fake_post)
    monkeypatch.setattr(pipeline.time, "sleep", lambda s: None)
    pipeline.reset_prefix_cache("http://127.0.0.1:8011")
    assert posted == ["http://127.0.0.1:8011/reset_prefix_cache"] * 3

    monkeypatch.setattr(httpx, "post", lambda url, timeout: httpx.Response(
        200, json={"success": False}, request=httpx.Request("POST", url)))
    import pytest
    with pytest.raises(RuntimeError, match="still in use after 2 tries"):
        pipeline.reset_prefix_cache("http://127.0.0.1:8011", attempts=2)


def test_dev_mode_is_set_inside_and_restored_after(monkeypatch):
    monkeypatch.delenv("VLLM_SERVER_DEV_MODE", raising=False)
    with pipeline.dev_mode():
        assert pipeline.os.environ["VLLM_SERVER_DEV_MODE"] == "1"
    assert "VLLM_SERVER_DEV_MODE" not in pipeline.os.environ
