"""Real FEVER as a quickstart task source: claims over the local FEVER wiki, train and test sharing no claim
and no page (a claim's evidence page, or the page a NOT ENOUGH INFO claim is about).

    write_fever_tasks(FeverSource(data_dir="data/fever"), out_dir)

writes ``corpus.jsonl``, ``train/dev/test.jsonl`` (task lines with ``env: fever``, so the FEVER actions, label
accuracy and the judge's any-one-evidence-set grounding apply) and ``tasks.json``. A claim is used when one of
its evidence sets lies wholly in the corpus; NOT ENOUGH INFO claims make up ``nei_share`` of each split. They
count as grounded with no page read, so read accuracy (the paper's metric), or correct & grounded on the
SUPPORTS and REFUTES claims alone.

The rules in full: docs/modules.md, actune.sources.fever.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from actune.config import StrictModel
from actune.envs.corpus import CorpusError, read_corpus
from actune.envs.titles import base_title, normalize_title
from actune.records.atomic_write import atomic_write_text, atomic_writer
from actune.records.task_record import Task
from actune.sources.hotpotqa import MANIFEST, corpus_titles
from actune.tasks.config import TaskConfig
from actune.tasks.fever import claim_subject, write_wiki_from_observation_cache
from actune.tasks.loading import load_tasks
from actune.tasks.sources import TaskFileError, require_files
from actune.text import normalise_question

__all__ = ["FeverSource", "MANIFEST", "claim_pages", "fever_splits", "write_fever_tasks"]

_FILES = {"claims": "paper_dev.jsonl", "cache": "observation_cache.json", "pages": "wiki_pages.jsonl"}
NEI = "NOT ENOUGH INFO"


class FeverSource(StrictModel):
    """Which FEVER files, and how many claims each split gets."""

    data_dir: str = "data/fever"
    """The folder holding ``paper_dev.jsonl`` and ``wiki_pages.jsonl`` or ``observation_cache.json`` (the module
    docstring; ``actune data prepare fever`` writes the first two)."""
    n_test: int = Field(300, ge=1)
    """Test claims."""
    n_dev: int = Field(100, ge=0)
    """Dev claims (checkpoint choice, pilots)."""
    n_train: int | None = Field(None, ge=1)
    """Training claims (None: every one left, with NOT ENOUGH INFO claims at ``nei_share``)."""
    nei_share: float = Field(1 / 3, ge=0, lt=1)
    """The share of NOT ENOUGH INFO claims in every split. Dev and test take whole groups of claims that share a
    page until their SUPPORTS and REFUTES claims are reached (with the NOT ENOUGH INFO claims of those groups),
    then groups of NOT ENOUGH INFO claims alone up to ``n_``: a little off the share when the groups overshoot,
    and a split a little larger than ``n_`` when they overshoot ``n_``."""
    split_seed: int = 0
    """Shuffles the claims before the splits are drawn; fixed, so every run seed is tested alike."""

    def path(self, name: str) -> Path:
        return Path(self.data_dir) / _FILES[name]

    def corpus(self) -> Path:
        """The pages file read: ``wiki_pages.jsonl`` when there, else the observation cache."""
        return self.path("pages") if self.path("pages").is_file() else self.path("cache")


def _with_local_evidence(t: Task, titles: set[str]) -> Task | None:
    """``t`` with only the evidence sets the corpus holds (None: it holds none)."""
    sets = [s for s in t.meta.get("evidence_sets") or [] if s and all(normalize_title(x) in titles for x in s)]
    if not sets:
        return None
    pages = list(dict.fromkeys(x for s in sets for x in s))
    return dataclasses.replace(t, meta={**t.meta, "evidence_sets": sets, "supporting_titles": pages})


def _page_finder(titles: set[str]) -> Callable[[str], str | None]:
    """The page (normalised title) a search opens in a corpus of ``titles``, as :meth:`LocalCorpus.find_page
    <actune.envs.corpus.LocalCorpus.find_page>` matches: the same normalised title, or, for a term without a
    parenthetical, the one title whose base it is; None when neither."""
    by_base: dict[str, list[str]] = {}
    for t in sorted(titles):
        by_base.setdefault(base_title(t), []).append(t)

    def find(term: str) -> str | None:
        norm = normalize_title(" ".join(term.split()))
        if not norm or norm in titles:
            return norm or None
        found = by_base.get(norm, []) if base_title(term) == norm else []
        return found[0] if len(found) == 1 else None

    return find


def claim_pages(t: Task, find: Callable[[str], str | None]) -> list[str]:
    """The pages (normalised titles) a claim is about: its evidence pages, or for a NOT ENOUGH INFO claim the page
    its first words name (``find``: :func:`_page_finder`; none when no run of them is a page)."""
    if t.answer != NEI:
        return [normalize_title(p) for p in t.meta["supporting_titles"]]
    subject = claim_subject(t.question, lambda term: find(term) is not None)
    page = find(subject) if subject is not None else None
    return [page] if page is not None else []


def _groups(claims: list[Task], pages: dict[str, list[str]]) -> list[list[Task]]:
    """Claims joined when they share a page (``pages``: task id -> :func:`claim_pages`; union-find), in
    first-seen order; a claim about no page is a group of its own."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def key(t: Task) -> str:
        return find("page:" + pages[t.id][0]) if pages[t.id] else "claim:" + t.id

    for t in claims:
        for p in pages[t.id][1:]:
            parent[find("page:" + p)] = find("page:" + pages[t.id][0])
    out: dict[str, list[Task]] = {}
    for t in claims:
        out.setdefault(key(t), []).append(t)
    return list(out.values())


def _verifiable(claims: list[Task]) -> int:
    return sum(t.answer != NEI for t in claims)


def _fill(groups: list[list[Task]], n: int | None, cap: int | None = None) -> tuple[list[Task], list[list[Task]]]:
    """Whole groups, in order, until ``n`` SUPPORTS and REFUTES claims (None: all), passing over a group that
    would take the split past ``cap`` claims unless too few are left without it; the groups left."""
    taken: list[Task] = []
    passed: list[list[Task]] = []
    for i, g in enumerate(groups):
        if n is not None and _verifiable(taken) >= n:
            return taken, passed + groups[i:]
        if cap is not None and len(taken) + len(g) > cap:
            passed.append(g)
            continue
        taken += g
    if cap is not None:  # too few within the cap: the groups passed over, in order, overshoot it
        more, passed = _fill(passed, None if n is None else n - _verifiable(taken))
        taken += more
    return taken, passed


def _fill_nei(groups: list[list[Task]], n: int) -> tuple[list[Task], list[list[Task]]]:
    """Whole groups of NOT ENOUGH INFO claims, in order, each that fits in ``n`` claims; the groups left."""
    taken: list[Task] = []
    left = []
    for g in groups:
        if len(taken) + len(g) <= n:
            taken += g
        else:
            left.append(g)
    return taken, left


def _half_up(x: float) -> int:
    # not round(): 3 * (1/3) / (2/3) is 1.4999999999999998 in floats, and round() takes halves to even
    return int(x + 0.5 + 1e-9)


def _verifiable_count(n: int, nei_share: float) -> int:
    return n - _half_up(n * nei_share)


def _nei_count(verifiable: int, nei_share: float) -> int:
    """NOT ENOUGH INFO claims that make ``nei_share`` of a split beside ``verifiable`` other claims."""
    return _half_up(verifiable * nei_share / (1 - nei_share))


def fever_splits(claims: list[Task], titles: set[str], cfg: FeverSource) -> dict[str, list[Task]]:
    """The splits of the module docstring from FEVER's claims and the corpus's titles."""
    rng = random.Random(cfg.split_seed)
    seen: set[str] = set()
    unique = []
    for t in claims:  # a claim asked twice (FEVER repeats some) is one claim
        key = normalise_question(t.question)
        if key not in seen:
            seen.add(key)
            unique.append(t)
    verifiable = [v for t in unique if t.answer != NEI and (v := _with_local_evidence(t, titles)) is not None]
    claims = verifiable + [t for t in unique if t.answer == NEI]
    find = _page_finder(titles)
    groups = _groups(claims, {t.id: claim_pages(t, find) for t in claims})
    rng.shuffle(groups)
    nei = [g for g in groups if not _verifiable(g)]  # groups of NOT ENOUGH INFO claims alone
    groups = [g for g in groups if _verifiable(g)]
    out: dict[str, list[Task]] = {}
    for split, n in (("test", cfg.n_test), ("dev", cfg.n_dev)):
        out[split], groups = _fill(groups, _verifiable_count(n, cfg.nei_share), cap=n)
        if _verifiable(out[split]) < _verifiable_count(n, cfg.nei_share):
            raise TaskFileError(f"{cfg.path('claims')}: too few SUPPORTS/REFUTES claims with evidence in "
                                f"{cfg.corpus()} for fever.n_{split}={n} after the earlier splits")
        # NOT ENOUGH INFO claims fill the split to n (fewer than nei_share when whole groups overshoot)
        more, nei = _fill_nei(nei, max(0, n - len(out[split])))
        out[split] += more
    train, _ = _fill(groups, None if cfg.n_train is None else _verifiable_count(cfg.n_train, cfg.nei_share))
    more, _ = _fill_nei(nei, max(0, _nei_count(_verifiable(train), cfg.nei_share) - (len(train) - _verifiable(train))))
    out["train"] = train + more
    for split in out:
        rng.shuffle(out[split])
    return {split: out[split] for split in ("train", "dev", "test")}


def _line(t: Task) -> str:
    meta = {"kind": "claim", "label": t.answer, "supporting_titles": t.meta.get("supporting_titles") or [],
            "evidence_sets": t.meta.get("evidence_sets") or [], "source": "fever-paper-dev"}
    return json.dumps({"id": t.id, "question": t.question, "answer": t.answer, "aliases": [], "env": "fever",
                       "meta": meta}, ensure_ascii=False) + "\n"


def _copy_pages(src: Path, out: Path) -> int:
    """``src``'s pages, read as the wiki environment reads a corpus (:func:`actune.envs.corpus.read_corpus`: a bad
    line names file and line), written to ``out``; how many."""
    n = 0
    try:
        with atomic_writer(out) as f:
            for title, sentences in read_corpus(src):
                f.write(json.dumps({"title": title, "sentences": sentences}, ensure_ascii=False) + "\n")
                n += 1
    except CorpusError as e:
        raise TaskFileError(str(e)) from None
    return n


def write_fever_tasks(cfg: FeverSource, out_dir: str | Path) -> dict[str, Any]:
    """Write the corpus, the three splits and ``tasks.json`` (last) into ``out_dir``; the manifest."""
    require_files([cfg.path("claims"), cfg.corpus()], "fever.data_dir", __name__)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if cfg.corpus() == cfg.path("pages"):
        pages = _copy_pages(cfg.corpus(), out / "corpus.jsonl")
    else:
        pages = write_wiki_from_observation_cache(cfg.path("cache"), out / "corpus.jsonl")
    titles = corpus_titles(out / "corpus.jsonl")
    claims = load_tasks(TaskConfig(format="fever", path=str(cfg.path("claims")), split="dev"))
    splits = fever_splits(claims, titles, cfg)
    for split, tasks in splits.items():
        atomic_write_text(out / f"{split}.jsonl", "".join(_line(t) for t in tasks))
    labels = {split: {lab: sum(t.answer == lab for t in tasks) for lab in ("SUPPORTS", "REFUTES", NEI)}
              for split, tasks in splits.items()}
    manifest = {"source": "fever", "config": cfg.model_dump(mode="json"), "pages": pages,
                "counts": {split: len(tasks) for split, tasks in splits.items()}, "labels": labels}
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest
