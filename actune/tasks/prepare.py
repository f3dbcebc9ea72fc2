"""HotpotQA's official release -> the files the hotpotqa preset reads (``actune data prepare hotpotqa``).

    summary = prepare_hotpotqa(train="hotpot_train_v1.1.json", dev="hotpot_dev_distractor_v1.json", out="data/hotpotqa")

The official files (https://hotpotqa.github.io: ``hotpot_train_v1.1.json``, ``hotpot_dev_distractor_v1.json``) are
JSON arrays of records ``{_id, question, answer, type, level, supporting_facts, context}``, the context a list of
``[title, [sentences]]`` paragraphs. Written (:mod:`actune.sources.hotpotqa` reads them):

- ``train_with_context.jsonl`` and ``dev_with_context.jsonl``: the records as JSONL, with ``supporting_titles``
  (the titles of ``supporting_facts``, in order);
- ``wiki_paragraphs.jsonl``: one ``{"title", "sentences"}`` line a page, the union of every record's context
  paragraphs (the first text met for a title wins; how many titles had another text is counted); with the
  Wikipedia-abstracts dump HotpotQA was built on (``abstracts``, :mod:`actune.tasks.wiki_abstracts`; the GPU
  preset's corpus), its pages first and then the context paragraphs of any title it lacks;
- ``prepared.json``: the inputs' sizes and SHA-256, the counts, and the provenance (actune's version, commit).

The arrays are read record by record (the train file is half a gigabyte); the outputs are written in a folder
beside them and moved into place when all are complete, ``prepared.json`` last. A record that is not what the
release holds is an error naming the file, the record's index and the key; nothing is moved into place then.
The same publishing (:func:`prepared_folder`) and checksums serve :mod:`actune.sources.fever_prepare`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actune.records.atomic_write import atomic_write_text, atomic_writer, fsync_dir
from actune.records.jsonl import shown_bytes
from actune.runtime.provenance import provenance
from actune.tasks.sources import TaskFileError
from actune.tasks.wiki_abstracts import iter_abstracts

__all__ = ["NothingToPrepare", "PREPARED_FILE", "PrepareSummary", "file_digest", "iter_json_array", "prepare_hotpotqa",
           "prepared_folder"]

PREPARED_FILE = "prepared.json"
OUTPUT_FILES = ("train_with_context.jsonl", "dev_with_context.jsonl", "wiki_paragraphs.jsonl", PREPARED_FILE)
_CHUNK = 1 << 20


@dataclass
class PrepareSummary:
    """What ``prepare_hotpotqa`` read and wrote (``prepared.json``)."""

    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per input file: its path, bytes and SHA-256."""
    records: dict[str, int] = field(default_factory=dict)
    """Records written per split."""
    pages: int = 0
    """Pages in the corpus."""
    abstract_pages: int = 0
    """Of them, pages from the Wikipedia-abstracts dump (``--abstracts``; the rest are the records' context)."""
    conflicting_titles: int = 0
    """Titles whose paragraph differed between records (the first one met is kept)."""


class NothingToPrepare(TaskFileError):
    """An input held no record: nothing is written, and the command exits 3 (nothing done)."""


def iter_json_array(path: Path) -> Iterator[Any]:
    """The items of a JSON array file, one at a time, without holding the file in memory.

    Hand-written on the standard library's ``raw_decode``: the one JSON reader we need is an array's items, which
    adds no dependency (ijson) for it. Bad JSON or bytes that are not UTF-8 raise :class:`TaskFileError` naming the
    file (and the item)."""
    try:
        yield from _array_items(path)
    except UnicodeDecodeError as e:
        raise TaskFileError(f"{path}: not UTF-8 text ({shown_bytes(e.object[e.start:e.end])}); save the file as "
                            "UTF-8") from None


def _array_items(path: Path) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    with path.open("r", encoding="utf-8") as f:
        buf, pos, index, started = f.read(_CHUNK), 0, 0, False
        while True:
            while True:  # skip whitespace, the opening bracket and the commas between items
                while pos < len(buf) and buf[pos] in " \t\r\n,[":
                    started |= buf[pos] == "["
                    pos += 1
                if pos < len(buf):
                    break
                buf, pos = f.read(_CHUNK), 0
                if not buf:
                    raise TaskFileError(f"{path}: the JSON array ends without its closing ']' (after item {index})")
            if not started:
                raise TaskFileError(f"{path}: not a JSON array (the release's files are one array of records)")
            if buf[pos] == "]":
                return
            while True:
                try:
                    item, end = decoder.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as e:
                    more = f.read(_CHUNK)
                    if not more:
                        raise TaskFileError(f"{path}: item {index}: not valid JSON ({e.msg})") from None
                    buf, pos = buf[pos:] + more, 0
            yield item
            index += 1
            pos = end


def file_digest(path: Path) -> dict[str, Any]:
    """An input as ``prepared.json`` records it: its path, bytes and SHA-256."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": h.hexdigest()}


_TEMP_PREFIX = ".prepare."
"""How the temporary folder a prepare writes in (inside ``out``) is named."""


@contextmanager
def prepared_folder(out: Path, names: tuple[str, ...]) -> Iterator[Path]:
    """A temporary folder inside ``out`` to write ``names`` in; when the block ends without an error they are
    moved into ``out`` in that order (``prepared.json`` last: a folder holding it holds the rest), and the temporary
    folder is removed either way, so a failed or killed run leaves the outputs as they were. A file of ``names``
    already in ``out`` is replaced only where ``out`` holds ``prepared.json`` (an earlier prepare wrote it), else
    :class:`TaskFileError` before anything is read: the user's own file of that name stays. (Or where a temporary
    folder of an earlier prepare is still in ``out``: killed while it moved its files in, before ``prepared.json``.)"""
    if not (out / PREPARED_FILE).is_file() and not any(out.glob(f"{_TEMP_PREFIX}*")):
        for name in names:
            if os.path.lexists(out / name):
                raise TaskFileError(f"{out / name}: exists and is not an earlier output of actune data prepare (no "
                                    f"{PREPARED_FILE} in {out}); choose another --out, or move the file away")
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=out))
    try:
        yield tmp
        for name in names:
            os.replace(tmp / name, out / name)
        fsync_dir(out)
        for stale in out.glob(f"{_TEMP_PREFIX}*"):  # a killed prepare's, whose files this complete one replaced
            if stale != tmp:
                shutil.rmtree(stale, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _record(raw: Any, where: str) -> dict[str, Any]:
    """A release record, checked, with ``supporting_titles``; a :class:`TaskFileError` naming ``where`` and the
    key otherwise."""
    if not isinstance(raw, dict):
        raise TaskFileError(f"{where}: a record must be an object, got {type(raw).__name__}")
    for key, kind in (("_id", str), ("question", str), ("answer", str), ("supporting_facts", list),
                      ("context", list)):
        if not isinstance(raw.get(key), kind):
            raise TaskFileError(f"{where}: {key}: must be a {kind.__name__}, got {type(raw.get(key)).__name__}")
    for i, fact in enumerate(raw["supporting_facts"]):
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str) and isinstance(fact[1], int)):
            raise TaskFileError(f"{where}: supporting_facts[{i}]: must be [title, sentence index]")
    for i, para in enumerate(raw["context"]):
        if not (isinstance(para, list) and len(para) == 2 and isinstance(para[0], str) and isinstance(para[1], list)
                and all(isinstance(s, str) for s in para[1])):
            raise TaskFileError(f"{where}: context[{i}]: must be [title, [sentences]]")
    titles = list(dict.fromkeys(t for t, _ in raw["supporting_facts"]))
    return {**raw, "supporting_titles": titles}


def _write_split(src: Path, out: Path, pages: dict[str, list[str]], summary: PrepareSummary) -> int:
    n = 0
    with atomic_writer(out) as f:
        for i, raw in enumerate(iter_json_array(src)):
            rec = _record(raw, f"{src}: record {i}")
            for title, sentences in rec["context"]:
                known = pages.setdefault(title, sentences)
                summary.conflicting_titles += known is not sentences and known != sentences
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


def _write_corpus(out: Path, context: dict[str, list[str]], abstracts: Path | None) -> tuple[int, int]:
    """The corpus: the abstracts dump's pages when given (the first text met for a title), then every context
    paragraph whose title it lacks; pages written, and how many came from the dump."""
    seen: set[str] = set()
    with atomic_writer(out) as f:
        for title, sentences in iter_abstracts(abstracts) if abstracts is not None else ():
            if sentences and title not in seen:
                seen.add(title)
                f.write(json.dumps({"title": title, "sentences": sentences}, ensure_ascii=False) + "\n")
        from_dump = len(seen)
        for title, sentences in context.items():
            if title not in seen:
                seen.add(title)
                f.write(json.dumps({"title": title, "sentences": sentences}, ensure_ascii=False) + "\n")
    return len(seen), from_dump


def prepare_hotpotqa(train: str | Path, dev: str | Path, out: str | Path,
                     abstracts: str | Path | None = None) -> PrepareSummary:
    """Write the hotpotqa preset's files in ``out`` from the official ``train`` and ``dev`` files, the corpus from
    the Wikipedia-abstracts dump ``abstracts`` when given (the module docstring)."""
    out = Path(out)
    sources = {"train": Path(train), "dev": Path(dev)}
    for split, src in sources.items():
        if not src.is_file():
            raise TaskFileError(f"{src}: file not found (HotpotQA's {split} file: https://hotpotqa.github.io)")
    if abstracts is not None and not Path(abstracts).exists():
        raise TaskFileError(f"{abstracts}: not found (the Wikipedia-abstracts dump: https://hotpotqa.github.io/"
                            "wiki-readme.html)")
    with prepared_folder(out, OUTPUT_FILES) as tmp:
        summary = PrepareSummary()
        if abstracts is not None:
            abstracts = Path(abstracts)
            summary.inputs["abstracts"] = file_digest(abstracts) if abstracts.is_file() else {"path": str(abstracts)}
        pages: dict[str, list[str]] = {}
        for split, src in sources.items():
            summary.inputs[split] = file_digest(src)
            summary.records[split] = _write_split(src, tmp / f"{split}_with_context.jsonl", pages, summary)
            if not summary.records[split]:  # nothing is published: an empty split is no preset's data
                raise NothingToPrepare(f"{src}: no records (HotpotQA's {split} file is one JSON array of them)")
        summary.pages, summary.abstract_pages = _write_corpus(tmp / "wiki_paragraphs.jsonl", pages, abstracts)
        atomic_write_text(tmp / PREPARED_FILE, json.dumps({**asdict(summary), "provenance": provenance()}, indent=2)
                          + "\n")
    return summary
