"""HotpotQA's official release -> the files the hotpotqa preset reads (``actune data prepare hotpotqa``).

    summary = prepare_hotpotqa(train="hotpot_train_v1.1.json", dev="hotpot_dev_distractor_v1.json", out="data/hotpotqa")

The official files (https://hotpotqa.github.io: ``hotpot_train_v1.1.json``, ``hotpot_dev_distractor_v1.json``) are
JSON arrays of records ``{_id, question, answer, type, level, supporting_facts, context}``, the context a list of
``[title, [sentences]]`` paragraphs. Written (:mod:`actune.hotpotqa_source` reads them):

- ``train_with_context.jsonl`` and ``dev_with_context.jsonl``: the records as JSONL, with ``supporting_titles``
  (the titles of ``supporting_facts``, in order);
- ``wiki_paragraphs.jsonl``: one ``{"title", "sentences"}`` line a page, the union of every record's context
  paragraphs (the first text met for a title wins; how many titles had another text is counted);
- ``prepared.json``: the inputs' sizes and SHA-256, the counts, and the provenance (actune's version, commit).

The arrays are read record by record (the train file is half a gigabyte); the outputs are written in a folder
beside them and moved into place when all are complete, ``prepared.json`` last. A record that is not what the
release holds is an error naming the file, the record's index and the key; nothing is moved into place then.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actune.atomic_write import atomic_write_text, atomic_writer, fsync_dir
from actune.tasks.sources import TaskFileError

__all__ = ["PREPARED_FILE", "PrepareSummary", "iter_json_array", "prepare_hotpotqa"]

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
    conflicting_titles: int = 0
    """Titles whose paragraph differed between records (the first one met is kept)."""


def iter_json_array(path: Path) -> Iterator[Any]:
    """The items of a JSON array file, one at a time, without holding the file in memory.

    Hand-written on the standard library's ``raw_decode``: the one JSON reader we need is an array's items, which
    adds no dependency (ijson) for it. Bad JSON raises :class:`TaskFileError` naming the file and the item."""
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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


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


def prepare_hotpotqa(train: str | Path, dev: str | Path, out: str | Path) -> PrepareSummary:
    """Write the hotpotqa preset's files in ``out`` from the official ``train`` and ``dev`` files (the module
    docstring)."""
    from actune.provenance import provenance

    out = Path(out)
    sources = {"train": Path(train), "dev": Path(dev)}
    for split, src in sources.items():
        if not src.is_file():
            raise TaskFileError(f"{src}: file not found (HotpotQA's {split} file: https://hotpotqa.github.io)")
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".prepare.", dir=out))  # every file complete before any is in place
    try:
        summary = PrepareSummary()
        pages: dict[str, list[str]] = {}
        for split, src in sources.items():
            summary.inputs[split] = {"path": str(src), "bytes": src.stat().st_size, "sha256": _sha256(src)}
            summary.records[split] = _write_split(src, tmp / f"{split}_with_context.jsonl", pages, summary)
        with atomic_writer(tmp / "wiki_paragraphs.jsonl") as f:
            for title, sentences in pages.items():
                f.write(json.dumps({"title": title, "sentences": sentences}, ensure_ascii=False) + "\n")
        summary.pages = len(pages)
        atomic_write_text(tmp / PREPARED_FILE, json.dumps({**asdict(summary), "provenance": provenance()}, indent=2)
                          + "\n")
        for name in OUTPUT_FILES:  # the manifest last: a folder with prepared.json holds the rest
            os.replace(tmp / name, out / name)
        fsync_dir(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary
