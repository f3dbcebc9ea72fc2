"""A local Wikipedia: pages from a JSONL corpus, a title index and BM25, built once and memory-mapped.

Corpus lines are ``{"title", "sentences"}`` or ``{"title", "text"}``. The index is built once per version of the
corpus (keyed by its path, size and modification time) and memory-mapped: sentence bytes and offsets, hashed
titles for exact lookup, and a bm25s index that weighs title words more, so a 5M-paragraph corpus costs a few
hundred MB of arrays, not Python strings. Pages that share a title are merged when read.

The rules in full: docs/modules.md, actune.envs.corpus.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import shutil
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from actune.config import actune_home
from actune.envs.bm25_index import Bm25Builder, Bm25Index
from actune.envs.titles import base_title, normalize_title
from actune.records.jsonl import iter_jsonl_objects
from actune.text import split_sentences

__all__ = ["CorpusError", "WikiPage", "LocalCorpus", "read_corpus", "index_dir_for", "INDEX_VERSION"]

log = logging.getLogger(__name__)

INDEX_VERSION = 1


class CorpusError(ValueError):
    """A corpus file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class WikiPage:
    """A page as the environment sees it: its title and its sentences."""

    title: str
    sentences: list[str]


def _record_sentences(record: dict, where: str) -> list[str]:
    if "sentences" in record:
        sents = record["sentences"]
        if not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise CorpusError(f"{where}: 'sentences' must be a list of strings")
        if record.get("sentence_split") is False:
            return split_sentences(" ".join(s.strip() for s in sents))
        return [" ".join(s.split()) for s in sents if s.strip()]
    if "text" in record:
        if not isinstance(record["text"], str):
            raise CorpusError(f"{where}: 'text' must be a string")
        return split_sentences(record["text"])
    raise CorpusError(f"{where}: a page needs 'sentences' (list of strings) or 'text' (string)")


def read_corpus(path: str | Path) -> Iterator[tuple[str, list[str]]]:
    """Yield ``(title, sentences)`` per line; a bad line raises :class:`CorpusError` naming file:line."""
    for where, record in iter_jsonl_objects(path, CorpusError):
        title = record.get("title")
        if not isinstance(title, str) or not title.strip():
            raise CorpusError(f"{where}: missing or empty 'title'")
        yield title.strip(), _record_sentences(record, where)


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def corpus_key(path: Path) -> str:
    st = path.stat()
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|v{INDEX_VERSION}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def index_dir_for(corpus_path: str | Path, index_root: str | Path | None = None) -> Path:
    """Where the index of this corpus (as it is now) lives; root defaults to ``$ACTUNE_HOME/indexes``."""
    path = Path(corpus_path)
    root = Path(index_root) if index_root is not None else actune_home() / "indexes"
    return root / f"{path.stem}-{corpus_key(path)}"


def _save_sorted_hashes(out: Path, name: str, hashes: array) -> None:
    h = np.frombuffer(hashes, dtype=np.uint64) if len(hashes) else np.zeros(0, np.uint64)
    order = np.argsort(h, kind="stable")
    np.save(out / f"{name}_hash.npy", h[order])
    np.save(out / f"{name}_order.npy", order.astype(np.int64))


def build_index(corpus_path: str | Path, index_dir: str | Path, chunk_docs: int = 50_000) -> dict:
    """Build the index of ``corpus_path`` into ``index_dir`` (atomically: temp folder + rename)."""
    corpus_path = Path(corpus_path)
    index_dir = Path(index_dir)
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = index_dir.parent / f".{index_dir.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    started = time.perf_counter()
    try:
        builder = Bm25Builder(tmp / "work", chunk_docs=chunk_docs)
        sent_offsets = array("q", [0])
        page_first = array("q", [0])
        title_offsets = array("q", [0])
        norm_hashes, base_hashes, raw_hashes = array("Q"), array("Q"), array("Q")
        n_sent = 0
        with open(tmp / "text.bin", "wb") as text_f, open(tmp / "titles.bin", "wb") as title_f:
            text_pos = title_pos = 0
            for title, sentences in read_corpus(corpus_path):
                for s in sentences:
                    b = s.encode("utf-8")
                    text_f.write(b)
                    text_pos += len(b)
                    sent_offsets.append(text_pos)
                n_sent += len(sentences)
                page_first.append(n_sent)
                tb = title.encode("utf-8")
                title_f.write(tb)
                title_pos += len(tb)
                title_offsets.append(title_pos)
                norm_hashes.append(_hash(normalize_title(title)))
                base_hashes.append(_hash(base_title(title)))
                raw_hashes.append(_hash(title))
                builder.add(f"{title} {title} {' '.join(sentences)}")
        n_pages = len(page_first) - 1
        if n_pages == 0:
            raise CorpusError(f"{corpus_path}: the corpus has no pages")
        np.save(tmp / "sentence_offsets.npy", np.frombuffer(sent_offsets, dtype=np.int64))
        np.save(tmp / "page_sentences.npy", np.frombuffer(page_first, dtype=np.int64))
        np.save(tmp / "title_offsets.npy", np.frombuffer(title_offsets, dtype=np.int64))
        _save_sorted_hashes(tmp, "title", norm_hashes)
        _save_sorted_hashes(tmp, "base", base_hashes)
        raw = np.frombuffer(raw_hashes, dtype=np.uint64)
        raw_order = np.argsort(raw, kind="stable")
        dup_pos = np.flatnonzero(raw[raw_order][1:] == raw[raw_order][:-1]) + 1
        dup_ids = sorted(int(raw_order[i]) for i in dup_pos)
        builder.finish(tmp / "bm25")
        shutil.rmtree(tmp / "work", ignore_errors=True)
        duplicate_examples = []
        if dup_ids:
            titles_blob = (tmp / "titles.bin").read_bytes()
            offs = np.frombuffer(title_offsets, dtype=np.int64)
            duplicate_examples = [titles_blob[offs[i]:offs[i + 1]].decode("utf-8") for i in dup_ids[:10]]
            log.warning("%s: %d pages repeat an earlier title (merged when read), e.g. %s",
                        corpus_path, len(dup_ids), duplicate_examples[:3])
        st = corpus_path.stat()
        meta = {
            "version": INDEX_VERSION,
            "corpus": str(corpus_path.resolve()),
            "corpus_size": st.st_size,
            "corpus_mtime_ns": st.st_mtime_ns,
            "pages": n_pages,
            "sentences": n_sent,
            "vocabulary": len(builder.vocab),
            "postings": builder.nnz,
            "duplicate_titles": len(dup_ids),
            "duplicate_title_examples": duplicate_examples,
            "build_seconds": round(time.perf_counter() - started, 3),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False))
        try:
            os.rename(tmp, index_dir)
        except OSError:
            if not (index_dir / "meta.json").exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process finished the same index first
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _open_bytes(path: Path) -> mmap.mmap | bytes:
    if path.stat().st_size == 0:
        return b""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


class LocalCorpus:
    """An opened corpus index: exact title lookup, BM25 search, pages read from disk on demand."""

    def __init__(self, index_dir: str | Path) -> None:
        d = Path(index_dir)
        self.index_dir = d
        self.meta = json.loads((d / "meta.json").read_text())
        self._text = _open_bytes(d / "text.bin")
        self._titles = _open_bytes(d / "titles.bin")
        load = lambda name: np.load(d / name, mmap_mode="r")  # noqa: E731
        self._sent_offsets = load("sentence_offsets.npy")
        self._page_first = load("page_sentences.npy")
        self._title_offsets = load("title_offsets.npy")
        self._title_hash, self._title_order = load("title_hash.npy"), load("title_order.npy")
        self._base_hash, self._base_order = load("base_hash.npy"), load("base_order.npy")
        self.bm25 = Bm25Index(d / "bm25", mmap=True)

    @classmethod
    def open(cls, corpus_path: str | Path, index_root: str | Path | None = None,
             rebuild: bool = False) -> "LocalCorpus":
        """Open the corpus's index, building it first when missing (or when ``rebuild``)."""
        corpus_path = Path(corpus_path)
        if not corpus_path.is_file():
            raise CorpusError(f"{corpus_path}: corpus file not found")
        index_dir = index_dir_for(corpus_path, index_root)
        if rebuild and index_dir.exists():
            shutil.rmtree(index_dir)
        if not (index_dir / "meta.json").exists():
            log.info("building the index of %s in %s", corpus_path, index_dir)
            build_index(corpus_path, index_dir)
        return cls(index_dir)

    @property
    def num_pages(self) -> int:
        return len(self._page_first) - 1

    def title(self, page_id: int) -> str:
        s, e = int(self._title_offsets[page_id]), int(self._title_offsets[page_id + 1])
        return self._titles[s:e].decode("utf-8")

    def sentences(self, page_id: int) -> list[str]:
        first, last = int(self._page_first[page_id]), int(self._page_first[page_id + 1])
        offs = self._sent_offsets[first:last + 1]
        text = self._text
        return [text[int(offs[i]):int(offs[i + 1])].decode("utf-8") for i in range(len(offs) - 1)]

    def _ids_with_hash(self, hashes: np.ndarray, order: np.ndarray, key: str) -> list[int]:
        h = np.uint64(_hash(key))
        lo = int(np.searchsorted(hashes, h, side="left"))
        hi = int(np.searchsorted(hashes, h, side="right"))
        return sorted(int(i) for i in order[lo:hi])

    def _merged(self, ids: list[int], title: str) -> WikiPage:
        same = [i for i in ids if self.title(i) == title]
        sentences: list[str] = []
        for i in same:
            sentences.extend(self.sentences(i))
        return WikiPage(title, sentences)

    def find_page(self, entity: str) -> WikiPage | None:
        """The page whose title matches ``entity`` (see :mod:`actune.envs.titles`), else None.

        Order: identical title; then the same normalised title (if several differ only in case, the
        first in the corpus); then, when ``entity`` has no parenthetical, the one title whose base
        ("Paris (band)" -> "paris") matches, if exactly one distinct title does.
        """
        entity = " ".join(entity.split())
        norm = normalize_title(entity)
        if not norm:
            return None
        ids = [i for i in self._ids_with_hash(self._title_hash, self._title_order, norm)
               if normalize_title(self.title(i)) == norm]
        if ids:
            titles = [self.title(i) for i in ids]
            chosen = entity if entity in titles else titles[0]
            return self._merged(ids, chosen)
        if base_title(entity) != norm:
            return None
        ids = [i for i in self._ids_with_hash(self._base_hash, self._base_order, norm)
               if base_title(self.title(i)) == norm]
        distinct = {self.title(i) for i in ids}
        if len(distinct) == 1:
            return self._merged(ids, distinct.pop())
        return None

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        """Up to ``k`` distinct titles by BM25 over title and text, with normalised scores (0..1)."""
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for hit in self.bm25.search(query, k=k * 2):
            title = self.title(hit.doc_id)
            if title not in seen:
                seen.add(title)
                out.append((title, hit.normalized))
            if len(out) == k:
                break
        return out
