"""Real HotpotQA as a quickstart task source: train/dev/test splits over a local Wikipedia corpus (core, not
``tasks/``: it reads the corpus as the wiki environment names its pages).

    write_hotpotqa_tasks(HotpotQASource(data_dir="data/hotpotqa"), out_dir)

writes the files a synthetic world writes (``corpus.jsonl``, ``train/dev/test.jsonl``, ``tasks.json``), so every
later stage runs on them unchanged. Only answerable questions are used, every seed is tested on the same
questions (``split_seed``), and no question or supporting page is shared between splits, so no training
question is answered from a test question's pages. Each task carries its evidence sentences for the judge.
The data: HotpotQA's distractor-setting files and a pages file (``actune data prepare hotpotqa`` writes them).

The rules in full: docs/modules.md, actune.sources.hotpotqa.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from actune.config import StrictModel
from actune.envs.corpus import CorpusError, read_corpus
from actune.envs.titles import normalize_title
from actune.records.atomic_write import atomic_write_text
from actune.records.task_record import Task
from actune.tasks.config import TaskConfig
from actune.tasks.hotpotqa import REACT_SUBSET_SIZE, react_subset_indices
from actune.tasks.loading import load_tasks
from actune.tasks.sources import TaskFileError, require_files
from actune.text import normalise_question

__all__ = ["HotpotQASource", "MANIFEST", "corpus_titles", "evidence_sentences", "hotpotqa_splits", "task_evidence",
           "write_hotpotqa_tasks"]

MANIFEST = "tasks.json"
_FILES = {"train": "train_with_context.jsonl", "dev": "dev_with_context.jsonl", "corpus": "wiki_paragraphs.jsonl"}
#: HotpotQA's dev questions in official order (question, answer, type): fills the type of a dev record that
#: lacks it, by its ``dev_index``; optional
_SIMPLIFIED = "dev_v1_simplified.json"


class HotpotQASource(StrictModel):
    """Which HotpotQA files, and how many questions each split gets."""

    data_dir: str = "data/hotpotqa"
    """The folder holding ``train_with_context.jsonl``, ``dev_with_context.jsonl`` and ``wiki_paragraphs.jsonl``
    (the module docstring says where they come from)."""
    n_test: int = Field(500, ge=1)
    """Test questions, drawn from HotpotQA's dev questions."""
    n_dev: int = Field(100, ge=0)
    """Dev questions (checkpoint choice), from the dev questions the test split left."""
    n_train: int | None = Field(None, ge=1)
    """Training questions, from the train file and the dev questions left (None: every one left)."""
    split_seed: int = 0
    """Shuffles the questions before the splits are drawn; fixed, so every run seed is tested alike."""
    test_set: Literal["answerable", "react500"] = "answerable"
    """``answerable``: ``n_test`` dev questions drawn from those the corpus answers. ``react500``: the ReAct
    paper's 500 dev questions (official order, seed-233 shuffle; a record's ``dev_index``, else its line), each
    of which the corpus must answer: for a full Wikipedia-abstracts corpus (the GPU preset), not the 17k
    paragraphs of ``../shared`` (58 of the 500 there)."""

    def path(self, name: str) -> Path:
        return Path(self.data_dir) / _FILES[name]


def corpus_titles(corpus: Path) -> set[str]:
    """The normalised titles of a ``{"title", "sentences"}`` corpus, read as the wiki environment reads it; a bad
    line is a :class:`TaskFileError` naming file and line (what the quickstart reports in one line)."""
    try:
        return {normalize_title(title) for title, _ in read_corpus(corpus)}
    except CorpusError as e:
        raise TaskFileError(str(e)) from None


def _answerable(tasks: list[Task], titles: set[str]) -> list[Task]:
    return [t for t in tasks if t.answer and t.meta.get("supporting_titles")
            and all(normalize_title(s) in titles for s in t.meta["supporting_titles"])]


def _pages(t: Task) -> set[str]:
    return {normalize_title(s) for s in t.meta["supporting_titles"]}


def _take(pool: list[Task], n: int | None, taken_pages: set[str], taken_questions: set[str]) -> list[Task]:
    """Up to ``n`` tasks of ``pool`` in order that share no page and no question text with what is taken."""
    out: list[Task] = []
    for t in pool:
        if n is not None and len(out) >= n:
            break
        if _pages(t) & taken_pages or normalise_question(t.question) in taken_questions:
            continue
        out.append(t)
    for t in out:
        taken_pages |= _pages(t)
        taken_questions.add(normalise_question(t.question))
    return out


def hotpotqa_splits(train: list[Task], dev: list[Task], titles: set[str],
                    cfg: HotpotQASource) -> dict[str, list[Task]]:
    """The splits of the module docstring from HotpotQA's train and dev tasks and the corpus's titles."""
    rng = random.Random(cfg.split_seed)
    dev_pool, train_pool = _answerable(dev, titles), _answerable(train, titles)
    rng.shuffle(dev_pool)
    rng.shuffle(train_pool)
    if cfg.test_set == "react500":
        dev_pool = _react500_first(dev, dev_pool, cfg)
    elif len(dev_pool) < cfg.n_test:
        raise TaskFileError(f"{cfg.path('dev')}: {len(dev_pool)} answerable dev questions (every supporting page "
                            f"in {cfg.path('corpus')}), fewer than hotpotqa.n_test={cfg.n_test}")
    pages: set[str] = set()
    questions: set[str] = set()
    test = _take(dev_pool[:cfg.n_test], None, pages, questions)
    rest = dev_pool[cfg.n_test:]
    held = _take(rest, cfg.n_dev, pages, questions)
    train_out = _take(train_pool + rest, cfg.n_train, pages, questions)
    return {"train": train_out, "dev": held, "test": test}


def _fill_types(dev: list[Task], data_dir: Path) -> None:
    """Set ``meta.type`` of dev tasks without one from the official dev file, when it is there."""
    missing = [t for t in dev if not t.meta.get("type") and isinstance(t.meta.get("dev_index"), int)]
    path = data_dir / _SIMPLIFIED
    if not missing or not path.is_file():
        return
    official = json.loads(path.read_text(encoding="utf-8"))
    for t in missing:
        i = t.meta["dev_index"]
        if 0 <= i < len(official) and official[i].get("question", "").strip() == t.question:
            t.meta["type"] = official[i].get("type")


def _kind(t: Task) -> str:
    return str(t.meta.get("type") or "unknown")


def _react500_first(dev: list[Task], answerable: list[Task], cfg: HotpotQASource) -> list[Task]:
    """``answerable`` with the ReAct paper's 500 dev questions first, in the paper's order (n_test must be 500)."""
    if cfg.n_test != REACT_SUBSET_SIZE:
        raise TaskFileError(f"hotpotqa.test_set=react500 tests the paper's {REACT_SUBSET_SIZE} questions: "
                            f"hotpotqa.n_test must be {REACT_SUBSET_SIZE}, not {cfg.n_test}")
    by_index = {t.meta.get("dev_index", t.meta["index"]): t for t in dev}
    ok = {id(t) for t in answerable}
    subset = [by_index.get(i) for i in react_subset_indices()]
    missing = sum(t is None or id(t) not in ok for t in subset)
    if missing:
        raise TaskFileError(f"{cfg.path('dev')}: {missing} of the ReAct paper's {REACT_SUBSET_SIZE} dev questions are "
                            f"missing or not answerable from {cfg.path('corpus')} (hotpotqa.test_set=react500 needs "
                            "the official dev set and a corpus holding their pages)")
    chosen = {id(t) for t in subset}
    return [*subset, *(t for t in answerable if id(t) not in chosen)]  # type: ignore[misc]


def _fact_pages(tasks: list[Task]) -> set[str]:
    return {normalize_title(str(f[0])) for t in tasks for f in t.meta.get("supporting_facts") or [] if f}


def evidence_sentences(corpus: Path, wanted: set[str]) -> dict[str, list[str]]:
    """Normalised title -> the page's sentences, for the pages in ``wanted`` only (one pass over the corpus: a
    Wikipedia-abstracts dump need not fit in memory)."""
    out: dict[str, list[str]] = {}
    try:
        for title, sentences in read_corpus(corpus):
            key = normalize_title(title)
            if key in wanted and key not in out:
                out[key] = sentences
    except CorpusError as e:
        raise TaskFileError(str(e)) from None
    return out


def task_evidence(t: Task, pages: dict[str, list[str]]) -> list[str] | None:
    """The supporting sentences of ``t`` as the corpus writes them, in HotpotQA's order; None when the record has
    no supporting facts or the corpus lacks one of them."""
    facts = t.meta.get("supporting_facts") or []
    out: list[str] = []
    for fact in facts:
        sentences = pages.get(normalize_title(str(fact[0]))) if len(fact) == 2 else None
        i = fact[1] if len(fact) == 2 and isinstance(fact[1], int) else -1
        if sentences is None or not 0 <= i < len(sentences) or not sentences[i].strip():
            return None
        out.append(sentences[i].strip())
    return out or None


def _line(t: Task, source: str, pages: dict[str, list[str]]) -> str:
    meta = {"kind": _kind(t), "supporting_titles": t.meta["supporting_titles"],
            "level": t.meta.get("level"), "source": source}
    evidence = task_evidence(t, pages)
    meta.update({"evidence": [evidence]} if evidence else {"evidence_known": False})
    return json.dumps({"id": t.id, "question": t.question, "answer": t.answer, "aliases": [], "meta": meta},
                      ensure_ascii=False) + "\n"


def write_hotpotqa_tasks(cfg: HotpotQASource, out_dir: str | Path) -> dict[str, Any]:
    """Write the corpus, the three splits and ``tasks.json`` (last: a folder with it is complete) into
    ``out_dir``; the manifest."""
    require_files([cfg.path(name) for name in _FILES], "hotpotqa.data_dir", __name__)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    titles = corpus_titles(cfg.path("corpus"))
    load = lambda name, split: load_tasks(TaskConfig(format="hotpotqa", path=str(cfg.path(name)), split=split))  # noqa: E731
    train, dev = load("train", "train"), load("dev", "dev")
    _fill_types(dev, Path(cfg.data_dir))
    splits = hotpotqa_splits(train, dev, titles, cfg)
    origin = {id(t): "hotpotqa-train" for t in train} | {id(t): "hotpotqa-dev" for t in dev}
    _link(cfg.path("corpus"), out / "corpus.jsonl")
    pages = evidence_sentences(cfg.path("corpus"), _fact_pages([t for ts in splits.values() for t in ts]))
    for split, tasks in splits.items():
        atomic_write_text(out / f"{split}.jsonl", "".join(_line(t, origin[id(t)], pages) for t in tasks))
    manifest = {"source": "hotpotqa", "config": cfg.model_dump(mode="json"), "pages": len(titles),
                "counts": {split: len(tasks) for split, tasks in splits.items()},
                "evidence_known": {split: sum(task_evidence(t, pages) is not None for t in tasks)
                                   for split, tasks in splits.items()},
                "kinds": {split: _kinds(tasks) for split, tasks in splits.items()}}
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest


def _link(source: Path, link: Path) -> None:
    """``link`` -> ``source`` (absolute), replacing what is there in one rename."""
    tmp = link.with_name(f".{link.name}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(source.resolve())
    tmp.replace(link)


def _kinds(tasks: list[Task]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tasks:
        out[_kind(t)] = out.get(_kind(t), 0) + 1
    return dict(sorted(out.items()))
