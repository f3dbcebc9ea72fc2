from __future__ import annotations

import math
from pathlib import Path

import bm25s
import numpy as np
import pytest

from actune.envs.bm25_index import Bm25Builder, Bm25Index, tokenize

DOCS = [
    "The cat sat on the mat",
    "Dogs and cats are pets",
    "A quick brown fox jumps over the lazy dog dog",
    "",
    "Paris is the capital of France",
    "cat cat cat",
    "the of and",  # stop words only: an empty document
]


@pytest.fixture()
def index(tmp_path: Path) -> Bm25Index:
    builder = Bm25Builder(tmp_path / "work", chunk_docs=2)  # several spilled chunks
    for d in DOCS:
        builder.add(d)
    builder.finish(tmp_path / "idx")
    assert not (tmp_path / "work" / "doc.raw").exists()
    return Bm25Index(tmp_path / "idx")


def test_tokenize_matches_bm25s_defaults() -> None:
    assert tokenize("The Quick, brown fox's 2 jumps!") == ["quick", "brown", "fox", "jumps"]
    text = "A quick brown fox jumps over the lazy dog in 1990"
    assert tokenize(text) == bm25s.tokenize([text], return_ids=False, show_progress=False)[0]


def test_streaming_index_scores_equal_an_index_bm25s_builds(index: Bm25Index) -> None:
    ref = bm25s.BM25()  # Lucene, k1=1.5, b=0.75: the same scoring
    ref.index([tokenize(d) for d in DOCS], show_progress=False)
    for query in ["cat", "dog fox", "paris capital cats", "cat cat", "pets lazy mat"]:
        ref_scores = ref.get_scores([t for t in tokenize(query) if t in ref.vocab_dict])
        ours = index.retriever.get_scores([t for t in tokenize(query) if t in index.vocab])
        np.testing.assert_array_equal(ours, ref_scores)


def test_search_ranks_by_score_and_normalises_by_the_best_possible(index: Bm25Index) -> None:
    hits = index.search("cat", k=5)
    assert [h.doc_id for h in hits] == [5, 0]
    n, df = len(DOCS), 2
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    lengths = [len(tokenize(d)) for d in DOCS]
    avg = sum(lengths) / n
    tf, dl = 3, lengths[5]
    expected = idf * tf / (tf + 1.5 * (0.25 + 0.75 * dl / avg))
    assert hits[0].score == pytest.approx(expected, rel=1e-6)
    assert hits[0].normalized == pytest.approx(expected / idf, rel=1e-6)
    assert all(0 < h.normalized <= 1 for h in hits)
    # a second search sees a clean score buffer
    assert [(h.doc_id, h.score) for h in index.search("cat", k=5)] == [(h.doc_id, h.score) for h in hits]


def test_search_with_unknown_or_no_terms_returns_nothing(index: Bm25Index) -> None:
    assert index.search("zebra", k=5) == []
    assert index.search("the of", k=5) == []
    assert index.search("cat", k=0) == []


def test_search_top_k_is_deterministic_on_ties(tmp_path: Path) -> None:
    builder = Bm25Builder(tmp_path / "w")
    for _ in range(6):
        builder.add("same words here")
    builder.finish(tmp_path / "i")
    idx = Bm25Index(tmp_path / "i")
    assert [h.doc_id for h in idx.search("same words", k=3)] == [0, 1, 2]


def test_pruned_search_returns_the_exact_top_k_of_full_scoring(tmp_path: Path) -> None:
    """MaxScore pruning and the dense path give bm25s's full ranking (Zipf words: common terms abound)."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(400)]
    docs = [" ".join(words[min(z, 399)] for z in rng.zipf(1.3, size=int(rng.integers(3, 30))) - 1)
            for _ in range(3000)]
    builder = Bm25Builder(tmp_path / "w", chunk_docs=1000)
    for d in docs:
        builder.add(d)
    builder.finish(tmp_path / "i")
    idx = Bm25Index(tmp_path / "i")
    for n in range(200):
        query = " ".join(rng.choice(words[:60] if n % 2 else words, size=int(rng.integers(1, 5))))
        ids = idx.token_ids(query)
        full = idx.retriever.get_scores(ids).astype(np.float64)
        expected = [int(d) for d in np.lexsort((np.arange(len(full)), -full)) if full[d] > 0][:5]
        got = idx.search(query, k=5)
        assert [h.doc_id for h in got] == expected, query
        assert [h.score for h in got] == pytest.approx([full[d] for d in expected], rel=1e-5)
