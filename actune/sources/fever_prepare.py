"""FEVER's official release -> the files the fever preset reads (``actune data prepare fever``).

    summary = prepare_fever(claims="paper_dev.jsonl", wiki_pages="wiki-pages", out="data/fever")

The inputs (https://fever.ai/dataset/fever.html): a claims file, JSONL lines ``{id, label, claim, evidence}``
(``paper_dev.jsonl``, ``shared_task_dev.jsonl`` or ``train.jsonl``), and the wiki dump, ``wiki-pages/wiki-NNN.jsonl``
lines ``{id, text, lines}`` whose ``lines`` are ``"index<TAB>sentence<TAB>links..."`` joined by newlines. Written
(:mod:`actune.sources.fever` reads them):

- ``paper_dev.jsonl``: the claims, checked, as the release writes them (the preset reads that name whichever
  claims file it came from);
- ``wiki_pages.jsonl``: one ``{"title", "sentences"}`` line for every page a claim's evidence names and every page
  a NOT ENOUGH INFO claim's first words may name (:func:`actune.tasks.fever.claim_subject`), titles as Wikipedia
  writes them (``Soul_Food_-LRB-film-RRB-`` -> ``Soul Food (film)``), empty sentences dropped;
- ``prepared.json``: every input's size and SHA-256, the counts (claims per label, pages, evidence pages the dump
  lacks) and the provenance.

Both inputs are streamed (the dump is 5.4 million pages); only the pages the claims need are kept. The outputs are
moved into place together when all are complete (:func:`actune.tasks.prepare.prepared_folder`); a bad record is an
error naming the file, the line and the key, and nothing is moved then.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actune.envs.titles import base_title, normalize_title
from actune.records.atomic_write import atomic_write_text, atomic_writer
from actune.records.jsonl import iter_jsonl_objects
from actune.runtime.provenance import provenance
from actune.tasks.fever import fever_task, fever_text, fever_title
from actune.tasks.prepare import PREPARED_FILE, NothingToPrepare, file_digest, prepared_folder
from actune.tasks.sources import TaskFileError

__all__ = ["FeverPrepareSummary", "prepare_fever", "wiki_page_files"]

OUTPUT_FILES = ("paper_dev.jsonl", "wiki_pages.jsonl", PREPARED_FILE)
_SUBJECT_WORDS = 6  # claim_subject tries a claim's first six words at most


@dataclass
class FeverPrepareSummary:
    """What ``prepare_fever`` read and wrote (``prepared.json``)."""

    inputs: dict[str, Any] = field(default_factory=dict)
    """The claims file and each wiki-pages file: path, bytes and SHA-256."""
    labels: dict[str, int] = field(default_factory=dict)
    """Claims written per label."""
    pages: int = 0
    """Pages written: the evidence pages found, and the pages a NOT ENOUGH INFO claim's first words may name."""
    missing_evidence_pages: int = 0
    """Evidence pages the claims name that the dump does not hold (their claims lose those evidence sets)."""


def wiki_page_files(wiki_pages: Path) -> list[Path]:
    """The dump's JSONL files: the folder's ``*.jsonl`` in name order, or ``wiki_pages`` itself when a file."""
    if wiki_pages.is_file():
        return [wiki_pages]
    files = sorted(wiki_pages.glob("*.jsonl")) if wiki_pages.is_dir() else []
    if not files:
        raise TaskFileError(f"{wiki_pages}: no wiki-pages JSONL files (FEVER's wiki-pages/wiki-NNN.jsonl: "
                            "https://fever.ai/dataset/fever.html)")
    return files


def _evidence_shape(rec: dict[str, Any], where: str) -> None:
    if not isinstance(rec.get("evidence") or [], list):
        raise TaskFileError(f"{where}: evidence: must be a list of evidence sets, got {type(rec['evidence']).__name__}")
    for i, group in enumerate(rec.get("evidence") or []):
        if not isinstance(group, list) or not all(
                isinstance(item, list) and len(item) == 4 and (item[2] is None or isinstance(item[2], str))
                for item in group):
            raise TaskFileError(f"{where}: evidence[{i}]: must be a list of [annotation id, evidence id, page id, "
                                "sentence index]")


def _write_claims(src: Path, out: Path, summary: FeverPrepareSummary) -> tuple[set[str], set[str]]:
    """The claims checked and copied to ``out``; the normalised evidence titles, and the terms a NOT ENOUGH INFO
    claim's subject may be (its first one to six words)."""
    evidence: set[str] = set()
    subjects: set[str] = set()
    with atomic_writer(out) as f:
        for i, (where, rec) in enumerate(iter_jsonl_objects(src, TaskFileError)):
            _evidence_shape(rec, where)
            task = fever_task(rec, where, i, "dev", "fever")
            summary.labels[task.answer] = summary.labels.get(task.answer, 0) + 1
            evidence.update(normalize_title(t) for t in task.meta["supporting_titles"])
            if not task.meta["supporting_titles"]:
                words = task.question.rstrip(".").split()
                subjects.update(normalize_title(" ".join(words[:n])) for n in range(1, _SUBJECT_WORDS + 1)
                                if n <= len(words))
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return evidence, subjects


def _page(rec: dict[str, Any], where: str) -> tuple[str, list[str]]:
    """A dump line's title and sentences (the ``lines`` field's second column, FEVER's bracket tokens undone)."""
    page_id, lines = rec.get("id"), rec.get("lines")
    if not isinstance(page_id, str) or not isinstance(lines, str):
        key = "id" if not isinstance(page_id, str) else "lines"
        raise TaskFileError(f"{where}: {key}: must be a str, got {type(rec.get(key)).__name__}")
    sentences = []
    for line in lines.split("\n"):
        parts = line.split("\t")
        if len(parts) > 1 and parts[1].strip():
            sentences.append(fever_text(parts[1]))
    return fever_title(page_id), sentences


def _write_pages(files: list[Path], out: Path, evidence: set[str], subjects: set[str]) -> tuple[int, set[str]]:
    """The wanted pages written to ``out`` (the first text met for a title wins); how many, and the evidence
    titles found."""
    written: set[str] = set()
    with atomic_writer(out) as f:
        for path in files:
            for where, rec in iter_jsonl_objects(path, TaskFileError):
                title, sentences = _page(rec, where)
                norm = normalize_title(title)
                if not sentences or norm in written or not (norm in evidence or base_title(title) in subjects):
                    continue
                written.add(norm)
                f.write(json.dumps({"title": title, "sentences": sentences}, ensure_ascii=False) + "\n")
    return len(written), written & evidence


def prepare_fever(claims: str | Path, wiki_pages: str | Path, out: str | Path) -> FeverPrepareSummary:
    """Write the fever preset's files in ``out`` from FEVER's ``claims`` file and its ``wiki_pages`` dump (a folder
    or one of its files; the module docstring)."""
    claims, out = Path(claims), Path(out)
    if not claims.is_file():
        raise TaskFileError(f"{claims}: file not found (FEVER's claims: https://fever.ai/dataset/fever.html)")
    files = wiki_page_files(Path(wiki_pages))
    with prepared_folder(out, OUTPUT_FILES) as tmp:
        summary = FeverPrepareSummary(inputs={"claims": file_digest(claims),
                                              "wiki_pages": [file_digest(p) for p in files]})
        evidence, subjects = _write_claims(claims, tmp / "paper_dev.jsonl", summary)
        if not summary.labels:  # nothing is published: no claim is no preset's data
            raise NothingToPrepare(f"{claims}: no claims")
        summary.pages, found = _write_pages(files, tmp / "wiki_pages.jsonl", evidence, subjects)
        summary.missing_evidence_pages = len(evidence - found)
        atomic_write_text(tmp / PREPARED_FILE, json.dumps({**asdict(summary), "provenance": provenance()}, indent=2)
                          + "\n")
    return summary
