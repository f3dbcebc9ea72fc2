"""A BM25 index over millions of pages: built streaming, stored in bm25s's format, searched memory-mapped.

``bm25s.BM25.index`` wants the whole tokenised corpus as Python lists (about 2 GB per million
paragraphs), so the index is built here in chunks with numpy and written in exactly the layout
``bm25s.BM25.save`` writes (``data/indices/indptr.csc.index.npy``, ``vocab.index.json``,
``params.index.json``, Lucene BM25 with k1=1.5, b=0.75). It is opened with
``bm25s.BM25.load(dir, mmap=True)``; the tests check its scores equal an index bm25s builds itself.

Search reads only the posting lists of the query's terms (bm25s scores every document, which costs
milliseconds per query at a million pages): a reused score buffer accumulates them, and the top k
come from the touched documents only.
"""

from __future__ import annotations

import json
import math
import re
import threading
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

__all__ = ["tokenize", "Bm25Builder", "Bm25Index", "Hit"]

# bm25s's default token pattern and English stop words, so queries and pages split the same way.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(STOPWORDS_EN)

K1 = 1.5
B = 0.75


def tokenize(text: str) -> list[str]:
    """Lower-cased words of two or more characters, English stop words removed."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


class Bm25Builder:
    """Add documents one at a time (in id order), then :meth:`finish` writes the bm25s index.

    Postings are spilled to ``workdir`` every ``chunk_docs`` documents, so memory stays at the
    vocabulary plus one chunk until the final sort.
    """

    def __init__(self, workdir: Path, chunk_docs: int = 50_000) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.vocab: dict[str, int] = {}
        self.doc_lengths = array("i")
        self.chunk_docs = chunk_docs
        self._doc = array("q")
        self._tok = array("q")
        self._files = {name: open(self.workdir / f"{name}.raw", "wb") for name in ("doc", "tok", "tf")}
        self.nnz = 0

    def add(self, text: str) -> None:
        vocab = self.vocab
        ids = [vocab.setdefault(t, len(vocab)) for t in tokenize(text)]
        doc_id = len(self.doc_lengths)
        self.doc_lengths.append(len(ids))
        self._tok.extend(ids)
        self._doc.extend([doc_id] * len(ids))
        if (doc_id + 1) % self.chunk_docs == 0:
            self._flush()

    def _flush(self) -> None:
        if not self._tok:
            return
        doc = np.frombuffer(self._doc, dtype=np.int64)
        tok = np.frombuffer(self._tok, dtype=np.int64)
        keys, counts = np.unique((doc << 32) | tok, return_counts=True)
        self._files["doc"].write((keys >> 32).astype(np.int32).tobytes())
        self._files["tok"].write((keys & 0xFFFFFFFF).astype(np.int32).tobytes())
        self._files["tf"].write(counts.astype(np.float32).tobytes())
        self.nnz += len(keys)
        self._doc = array("q")
        self._tok = array("q")

    def finish(self, out_dir: Path) -> None:
        """Compute scores and write the index files into ``out_dir`` (created)."""
        self._flush()
        for f in self._files.values():
            f.close()
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        if "" not in self.vocab:  # bm25s's empty token: lets an all-unknown query score zero
            self.vocab[""] = len(self.vocab)
        n_docs = len(self.doc_lengths)
        n_vocab = len(self.vocab)

        def raw(name: str, dtype) -> np.ndarray:
            if self.nnz == 0:
                return np.zeros(0, dtype=dtype)
            return np.memmap(self.workdir / f"{name}.raw", dtype=dtype, mode="r", shape=(self.nnz,))

        doc, tok, tf = raw("doc", np.int32), raw("tok", np.int32), raw("tf", np.float32)
        lengths = np.frombuffer(self.doc_lengths, dtype=np.int32) if n_docs else np.zeros(0, np.int32)
        avg_len = float(lengths.mean()) if n_docs else 1.0
        df = np.bincount(tok, minlength=n_vocab)
        # Lucene idf, as bm25s computes it (float64, stored as float32).
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        norm = K1 * ((1 - B) + B * lengths.astype(np.float64) / (avg_len or 1.0))
        scores = np.empty(self.nnz, dtype=np.float32)
        step = 10_000_000
        for s in range(0, self.nnz, step):
            e = min(s + step, self.nnz)
            t = tf[s:e].astype(np.float64)
            scores[s:e] = (idf[tok[s:e]].astype(np.float64) * (t / (norm[doc[s:e]] + t))).astype(np.float32)
        # Postings arrive sorted by document; a stable sort by term gives bm25s's CSC layout.
        order = np.argsort(tok, kind="stable")
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        np.save(out_dir / "data.csc.index.npy", scores[order])
        del scores
        np.save(out_dir / "indices.csc.index.npy", np.asarray(doc)[order])
        np.save(out_dir / "indptr.csc.index.npy", indptr)
        (out_dir / "vocab.index.json").write_text(json.dumps(self.vocab, ensure_ascii=False))
        params = dict(k1=K1, b=B, delta=0.5, method="lucene", idf_method="lucene", dtype="float32",
                      int_dtype="int32", num_docs=n_docs, version=bm25s.__version__, backend="numpy")
        (out_dir / "params.index.json").write_text(json.dumps(params, indent=4))
        del doc, tok, tf
        for name in ("doc", "tok", "tf"):
            (self.workdir / f"{name}.raw").unlink(missing_ok=True)


@dataclass(frozen=True)
class Hit:
    """One search result: document id, raw BM25 score, and score / best possible score (0..1)."""

    doc_id: int
    score: float
    normalized: float


class Bm25Index:
    """A saved index opened with bm25s (memory-mapped); :meth:`search` returns the top documents."""

    def __init__(self, index_dir: Path, mmap: bool = True) -> None:
        self.retriever = bm25s.BM25.load(str(index_dir), mmap=mmap, load_vocab=True)
        s = self.retriever.scores
        self.data, self.indices, self.indptr = s["data"], s["indices"], s["indptr"]
        self.num_docs = int(s["num_docs"])
        self.vocab: dict[str, int] = self.retriever.vocab_dict
        self._buffer = np.zeros(self.num_docs, dtype=np.float32)
        self._lock = threading.Lock()  # the score buffer is shared by every caller

    def idf(self, token_id: int) -> float:
        df = int(self.indptr[token_id + 1] - self.indptr[token_id])
        return math.log(1.0 + (self.num_docs - df + 0.5) / (df + 0.5))

    def token_ids(self, query: str) -> list[int]:
        return [self.vocab[t] for t in tokenize(query) if t in self.vocab]

    def search(self, query: str, k: int = 5) -> list[Hit]:
        """Top ``k`` documents by BM25, best first (ties: lower id first); [] when no term is known.

        ``normalized`` divides by the sum of the query terms' idf: a term's BM25 contribution is
        idf * tf / (tf + k1 * length norm) < idf, so this is the fraction of the best score any
        document could reach for these terms.
        """
        ids = self.token_ids(query)
        if not ids or k <= 0:
            return []
        with self._lock:
            return self._search(ids, k)

    def _search(self, ids: list[int], k: int) -> list[Hit]:
        # MaxScore, exact: add whole posting lists rarest term first. A term adds less than its idf
        # to any document, so once the terms left (sum of idf: ``rest``) cannot lift a document
        # from its current score above a lower bound of the k-th best score, they are only looked
        # up (binary search) for the few documents that can still reach the top k. Common words
        # ("film", "american") then cost a lookup per candidate, not a pass over their postings.
        counts = Counter(ids)
        terms = sorted(counts, key=lambda t: (-self.idf(t), t))
        bounds = [counts[t] * self.idf(t) for t in terms]
        buf = self._buffer
        touched: list[np.ndarray] = []
        n_touched = 0
        kth = 0.0
        i = 0
        while i < len(terms):
            t = terms[i]
            s, e = int(self.indptr[t]), int(self.indptr[t + 1])
            i += 1
            if e > s:
                idx = np.asarray(self.indices[s:e])
                data = np.asarray(self.data[s:e])
                buf[idx] += data * counts[t] if counts[t] > 1 else data  # ids in a list are distinct
                touched.append(idx)
                n_touched += len(idx)
            rest = sum(bounds[i:])
            if i < len(terms) and rest < sum(bounds[:i]):
                kth = self._kth_lower_bound(touched, k)
                if rest < kth:
                    break
        rest = sum(bounds[i:])
        if not touched:
            return []
        kth = max(kth, self._kth_lower_bound(touched, k))
        dense = n_touched > self.num_docs // 8
        if dense:
            cand = np.flatnonzero(buf >= max(kth - rest, 1e-30))
        else:
            cand = self._union(touched)
            cand = cand[buf[cand] >= kth - rest]
        for t in terms[i:]:  # the terms left: only the candidates' entries
            s, e = int(self.indptr[t]), int(self.indptr[t + 1])
            if e == s or len(cand) == 0:
                continue
            if len(cand) * 16 > e - s:  # many candidates: one pass over the list is cheaper
                idx = np.asarray(self.indices[s:e])
                buf[idx] += np.asarray(self.data[s:e]) * counts[t]
                touched.append(idx)
                dense = dense or len(idx) > self.num_docs // 8
                continue
            col = self.indices[s:e]
            pos = np.minimum(np.searchsorted(col, cand), e - s - 1)
            hit = np.asarray(col[pos]) == cand
            buf[cand[hit]] += np.asarray(self.data[s:e][pos[hit]]) * counts[t]
        scores = buf[cand]
        if len(cand) > k:  # keep every tie of the k-th score: the sort below breaks ties by id
            cut = np.partition(scores, len(cand) - k)[len(cand) - k]
            keep = scores >= cut
            cand, scores = cand[keep], scores[keep]
        if dense:
            buf.fill(0.0)
        else:
            for idx in touched:
                buf[idx] = 0.0
        order = np.lexsort((cand, -scores))[:k]
        upper = sum(self.idf(t) for t in ids) or 1.0
        return [Hit(int(cand[j]), float(scores[j]), min(1.0, float(scores[j]) / upper)) for j in order]

    def _union(self, lists: list[np.ndarray]) -> np.ndarray:
        """Sorted distinct doc ids of sorted posting lists (while only they have scores in the buffer)."""
        if len(lists) == 1:
            return lists[0]
        if sum(len(x) for x in lists) > self.num_docs // 16:
            return np.flatnonzero(self._buffer > 0)  # every touched document, in one pass
        c = np.sort(np.concatenate(lists))
        return c[np.concatenate(([True], c[1:] != c[:-1]))] if len(c) else c

    def _kth_lower_bound(self, touched: list[np.ndarray], k: int, sample: int = 1 << 16) -> float:
        """The k-th best current score among at most ``sample`` touched documents: a lower bound of
        the final k-th best score (scores only grow; a subset's k-th best is at most the whole's)."""
        docs = self._union([d[:sample] for d in touched])
        if len(docs) < k:
            return 0.0
        scores = self._buffer[docs]
        return float(np.partition(scores, len(docs) - k)[len(docs) - k])
