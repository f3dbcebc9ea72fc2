"""Generated tokens/s of a vLLM server at several concurrency levels, with a shared prompt prefix.

Every request is the same ~1,500-token prefix plus a short distinct question, generating exactly
``--max-tokens`` tokens (ignore_eos), so the numbers measure decoding throughput with prefix caching.
The prefix-cache hit rate comes from the server's Prometheus counters (vllm:prefix_cache_hits_total /
vllm:prefix_cache_queries_total in vLLM 0.32), as the change over each level.

    python bench/serve_throughput.py                      # starts the embedded model itself (CPU: ~40 s)
    python bench/serve_throughput.py --endpoint http://127.0.0.1:8000/v1
    python bench/serve_throughput.py --enable-lora        # what a LoRA-enabled server costs
    python bench/serve_throughput.py --dtype float32      # bf16 vs float32 on this CPU

Starting a server takes the server lock (actune.serve.lock), like the tests (one server at a time on small machines).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import time

import httpx

from actune.llm import ClientConfig, LLMClient, Sampling
from actune.runtime.stop_signals import run_script

PARAGRAPH = (
    "The river delta was mapped in detail by surveyors who walked its channels for three dry seasons. "
    "They recorded the depth of each channel, the kind of soil on its banks, the birds that nested there "
    "and the names the fishing villages gave to every bend. "
)


def read_counters(root_url: str) -> dict[str, float]:
    """Sum of each vllm:* counter over all label sets, from /metrics."""
    totals: dict[str, float] = {}
    for line in httpx.get(f"{root_url}/metrics", timeout=30).text.splitlines():
        m = re.match(r"^(vllm:[a-z_]+_total)(?:\{[^}]*\})? ([0-9.eE+-]+)$", line)
        if m:
            totals[m.group(1)] = totals.get(m.group(1), 0.0) + float(m.group(2))
    return totals


def shared_prefix(root_url: str, model: str, tokens: int) -> str:
    """A text of exactly ``tokens`` tokens for the served model (via /tokenize and /detokenize)."""
    text = PARAGRAPH * (tokens // 40 + 2)
    ids = httpx.post(f"{root_url}/tokenize", json={"model": model, "prompt": text}, timeout=60).json()["tokens"]
    if len(ids) < tokens:
        raise SystemExit(f"prefix too short: {len(ids)} tokens")
    answer = httpx.post(f"{root_url}/detokenize", json={"model": model, "tokens": ids[:tokens]}, timeout=60)
    return answer.json()["prompt"]


async def run_level(client: LLMClient, prefix: str, concurrency: int, requests: int, max_tokens: int) -> dict:
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens)
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int):
        async with sem:
            return await client.complete(f"{prefix}\nQuestion {i}: which village named bend {i}?\nAnswer:",
                                         sampling, extra_body={"ignore_eos": True})

    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(requests)))
    wall = time.perf_counter() - started
    generated = sum(c.usage.completion_tokens for c in results)
    return {
        "wall_s": wall,
        "generated": generated,
        "tok_s": generated / wall,
        "latency_s": sum(c.latency_s for c in results) / len(results),
        "prompt_tokens": sum(c.usage.prompt_tokens for c in results),
        "cached_tokens": sum(c.usage.cached_prompt_tokens for c in results),
    }


async def bench(base_url: str, model: str, args: argparse.Namespace) -> None:
    root = base_url.removesuffix("/v1")
    prefix = shared_prefix(root, model, args.prefix_tokens)
    cfg = ClientConfig(endpoints=[base_url], model=model, max_concurrency=max(args.concurrency), timeout_s=900)
    async with LLMClient(cfg) as client:
        # Warm-up (not counted): first requests pay one-off costs; it uses an unrelated prompt so the
        # first measured level still has to fill the prefix cache.
        await client.complete("Hello, how are", Sampling(max_tokens=8))
        rows = []
        for c in args.concurrency:
            before = read_counters(root)
            r = await run_level(client, prefix, c, args.requests or max(2, c), args.max_tokens)
            after = read_counters(root)
            hits = after.get("vllm:prefix_cache_hits_total", 0) - before.get("vllm:prefix_cache_hits_total", 0)
            queries = after.get("vllm:prefix_cache_queries_total", 0) - before.get("vllm:prefix_cache_queries_total", 0)
            r["hit_rate"] = hits / queries if queries else float("nan")
            rows.append((c, r))
            print(f"  concurrency {c:>3}: {r['tok_s']:7.1f} tok/s", flush=True)
    print()
    print(f"model {model} at {base_url}; prefix {args.prefix_tokens} tokens, {args.max_tokens} new tokens per request")
    print(f"{'concurrency':>11} {'requests':>8} {'gen tok/s':>9} {'wall s':>7} {'mean lat s':>10} "
          f"{'prefix hit':>10} {'cached/prompt':>13}")
    for c, r in rows:
        n = args.requests or max(2, c)
        print(f"{c:>11} {n:>8} {r['tok_s']:>9.1f} {r['wall_s']:>7.1f} {r['latency_s']:>10.2f} "
              f"{r['hit_rate']:>10.1%} {r['cached_tokens'] / r['prompt_tokens']:>13.1%}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", help="base URL of a running server (…/v1); default: start one")
    p.add_argument("--model", default="smollm2-135m", help="model to start, or the served name at --endpoint")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--requests", type=int, default=0, help="requests per level (default: max(2, concurrency))")
    p.add_argument("--prefix-tokens", type=int, default=1500)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--enable-lora", action="store_true", help="start the server with LoRA enabled")
    p.add_argument("--dtype", default="auto", help="dtype of the started server (auto: bf16 only where the CPU has "
                   "native bf16; compare with --dtype float32 / bfloat16)")
    p.add_argument("--kv-cache-gib", type=float, default=2, help="CPU KV cache of the started server (GiB)")
    args = p.parse_args()
    if args.endpoint:
        asyncio.run(bench(args.endpoint.rstrip("/"), args.model, args))
        return
    from actune.serve.config import ServeConfig
    from actune.serve.lock import exclusive_server_lock
    from actune.serve.server import free_port, vllm_server

    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive_server_lock())
        cfg = ServeConfig(model=args.model, port=free_port(), enable_lora=args.enable_lora, dtype=args.dtype,
                          cpu_kv_cache_gib=args.kv_cache_gib)
        t0 = time.perf_counter()
        server = stack.enter_context(vllm_server(cfg))
        print(f"server ready in {time.perf_counter() - t0:.0f} s ({server.device}; log {server.log_path})", flush=True)
        asyncio.run(bench(server.base_url, server.model, args))


if __name__ == "__main__":
    run_script(main)
