"""Wikipedia-environment latency: search/lookup p50/p95/p99, index build time, peak build memory and open RSS.

Corpora: the 17,440-paragraph HotpotQA union (when ../shared exists) and a generated corpus of
synthetic paragraphs (Zipf-distributed pseudo-words; 1M by default) in a temp folder.
The index build runs in a child process so its peak RSS is measured alone.

    .venv/bin/python bench/env_latency.py                 # 17k + 1M
    .venv/bin/python bench/env_latency.py --synthetic 100000 --skip-shared
    .venv/bin/python bench/env_latency.py --synthetic 5000000 --skip-shared --workdir /tmp/b5m  # GPU preset scale

Prints one table; nothing is asserted (speed goal: search p50 under 5 ms at 1M paragraphs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from actune.runtime.stop_signals import run_script

REPO = Path(__file__).resolve().parents[1]
SHARED_CORPUS = REPO.parent / "shared" / "data" / "hotpotqa" / "wiki_paragraphs.jsonl"


def _pseudo_words(n: int, rng: np.random.Generator) -> list[str]:
    syll = ["ka", "lo", "mi", "ren", "to", "sa", "vel", "qu", "dor", "an", "is", "ur", "pe", "zan", "tri",
            "bo", "ne", "fi", "gar", "hu"]
    words: dict[str, None] = {}
    assert n < len(syll) ** 5 // 4, "not enough syllable combinations"
    while len(words) < n:
        parts = rng.integers(0, len(syll), size=(n, 5))
        lens = rng.integers(2, 6, size=n)
        for i in range(n):
            words.setdefault("".join(syll[p] for p in parts[i, : lens[i]]), None)
            if len(words) == n:
                break
    return list(words)


def generate_corpus(path: Path, n: int, profile: str = "realistic", seed: int = 0) -> None:
    """``n`` synthetic paragraphs with unique titles (two words + a number).

    ``realistic``: word ranks follow Zipf (s=1.0) over 300k words whose 33 most frequent are
    bm25s's English stop words (about 30% of tokens, as in English); paragraphs of 5-7 sentences of
    8-18 words. This gives about 45 distinct indexed words per paragraph and the most common
    indexed word in about 15% of paragraphs (the HotpotQA union: 49, and 33% for "from").
    ``heavy``: Zipf s=1.2 over 60k pseudo-words, no stop words, 4-6 sentences of 6-14 words: the top
    words occur in nearly every paragraph; a worst case for BM25 posting lists.
    """
    from bm25s.stopwords import STOPWORDS_EN

    rng = np.random.default_rng(seed)
    if profile == "realistic":
        vocab = np.array(list(STOPWORDS_EN) + _pseudo_words(300_000 - len(STOPWORDS_EN), rng))
        weights = 1.0 / np.arange(1, len(vocab) + 1)
        sent_range, n_sent_range = (8, 19), (5, 8)
    elif profile == "heavy":
        vocab = np.array(_pseudo_words(60_000, rng))
        weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.2
        sent_range, n_sent_range = (6, 15), (4, 7)
    else:
        raise ValueError(f"unknown profile {profile!r}")
    cdf = np.cumsum(weights / weights.sum())
    chunk = 20_000
    per_doc = (sent_range[1] - 1) * (n_sent_range[1] - 1)
    from actune.records.atomic_write import atomic_writer

    # Atomic, so an interrupted run cannot leave a short corpus that --workdir would reuse.
    with atomic_writer(path) as f:
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            ids = np.minimum(np.searchsorted(cdf, rng.random((m, per_doc))), len(vocab) - 1)
            toks = vocab[ids]
            n_sent = rng.integers(*n_sent_range, size=m)
            sent_len = rng.integers(*sent_range, size=(m, n_sent_range[1]))
            title_ids = rng.integers(len(STOPWORDS_EN), len(vocab), size=(m, 2))
            for j in range(m):
                row, pos, sents = toks[j], 0, []
                for s in range(n_sent[j]):
                    L = int(sent_len[j, s])
                    sents.append(" ".join(row[pos:pos + L]).capitalize() + ".")
                    pos += L
                title = f"{vocab[title_ids[j, 0]].capitalize()} {vocab[title_ids[j, 1]]} {start + j}"
                f.write(json.dumps({"title": title, "sentences": sents}) + "\n")


def build_in_child(corpus: Path, index_root: Path) -> dict:
    code = (
        "import json,resource,sys,time;"
        "from actune.envs.corpus import build_index, index_dir_for;"
        "t=time.perf_counter();"
        f"m=build_index({str(corpus)!r}, index_dir_for({str(corpus)!r}, {str(index_root)!r}));"
        "peak=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024;"  # ru_maxrss is in KiB on Linux
        "print(json.dumps({'seconds': time.perf_counter()-t, 'peak_rss_mb': peak, 'meta': m}))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def current_rss_mb() -> float:
    """Resident memory now (ru_maxrss is the peak, so differences of it hide what an open adds)."""
    try:
        resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")  # no procfs (macOS): the figure is reported as unknown
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def measure(corpus: Path, index_root: Path, n_queries: int, seed: int = 0) -> dict:
    from actune.envs.base import Action
    from actune.envs.corpus import LocalCorpus
    from actune.envs.wiki_env import WikiEnv
    from actune.records.task_record import Task

    rss0 = current_rss_mb()
    t = time.perf_counter()
    lc = LocalCorpus.open(corpus, index_root)
    open_s = time.perf_counter() - t
    rss_open = current_rss_mb() - rss0
    env = WikiEnv(lc)
    env.reset(Task(id="bench", question=""))
    rng = random.Random(seed)
    ids = [rng.randrange(lc.num_pages) for _ in range(n_queries)]
    titles = [lc.title(i) for i in ids]
    # Misses: two words from a page's text (plus a word no title has): a "Could not find" + BM25 search.
    misses = []
    for i in ids:
        words = " ".join(lc.sentences(i)).split()
        misses.append(" ".join(rng.sample(words, min(2, len(words)))) + " zzqx")
    for q in titles[:20] + misses[:20]:  # warm up page cache and code paths
        env.step(Action("search", q))
    hit_ms, miss_ms, look_ms = [], [], []
    for title, miss in zip(titles, misses):
        t = time.perf_counter()
        r = env.step(Action("search", title))
        hit_ms.append((time.perf_counter() - t) * 1000)
        word = (r.observation.split() or ["the"])[min(3, len(r.observation.split()) - 1)]
        t = time.perf_counter()
        env.step(Action("lookup", word))
        look_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        env.step(Action("search", miss))
        miss_ms.append((time.perf_counter() - t) * 1000)
    return {
        "pages": lc.num_pages,
        "open_s": open_s,
        "rss_after_open_mb": rss_open,
        "search_hit_p50_ms": pct(hit_ms, 50), "search_hit_p95_ms": pct(hit_ms, 95),
        "search_hit_p99_ms": pct(hit_ms, 99),
        "search_miss_p50_ms": pct(miss_ms, 50), "search_miss_p95_ms": pct(miss_ms, 95),
        "search_miss_p99_ms": pct(miss_ms, 99),
        "lookup_p50_ms": pct(look_ms, 50), "lookup_p95_ms": pct(look_ms, 95), "lookup_p99_ms": pct(look_ms, 99),
        "all_search_p50_ms": statistics.median(hit_ms + miss_ms),
    }


def run(name: str, corpus: Path, index_root: Path, n_queries: int) -> dict:
    built = build_in_child(corpus, index_root)
    row = {"corpus": name, "file_mb": corpus.stat().st_size / 1e6, "build_s": built["seconds"],
           "build_peak_rss_mb": built["peak_rss_mb"], "postings": built["meta"]["postings"],
           "vocabulary": built["meta"]["vocabulary"]}
    row.update(measure(corpus, index_root, n_queries))
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synthetic", type=int, default=1_000_000, help="synthetic paragraphs (0: skip)")
    ap.add_argument("--profile", choices=["realistic", "heavy"], default="realistic",
                    help="word distribution of the synthetic corpus (see generate_corpus)")
    ap.add_argument("--skip-shared", action="store_true")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--workdir", default=None, help="where to generate (default: a temp folder, removed)")
    args = ap.parse_args()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="actune-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        if SHARED_CORPUS.exists() and not args.skip_shared:
            rows.append(run("hotpotqa-union-17k", SHARED_CORPUS, work / "indexes", args.queries))
            print(json.dumps(rows[-1]), flush=True)
        if args.synthetic:
            corpus = work / f"synthetic-{args.profile}-{args.synthetic}.jsonl"
            if not corpus.exists():
                t = time.perf_counter()
                generate_corpus(corpus, args.synthetic, args.profile)
                print(f"generated {args.synthetic} paragraphs in {time.perf_counter() - t:.0f}s", flush=True)
            rows.append(run(f"synthetic-{args.profile}-{args.synthetic}", corpus, work / "indexes", args.queries))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    keys = ["corpus", "pages", "build_s", "build_peak_rss_mb", "open_s", "rss_after_open_mb", "search_hit_p50_ms",
            "search_hit_p95_ms", "search_hit_p99_ms", "search_miss_p50_ms", "search_miss_p95_ms", "search_miss_p99_ms",
            "lookup_p50_ms", "lookup_p95_ms", "lookup_p99_ms"]
    print("\n" + " | ".join(keys))
    for r in rows:
        print(" | ".join(f"{r[k]:.2f}" if isinstance(r[k], float) else str(r[k]) for k in keys))
    return 0


if __name__ == "__main__":
    run_script(main)
