"""The Wikipedia-abstracts dump HotpotQA was built on, read page by page (``actune data prepare hotpotqa
--abstracts``).

The dump (https://hotpotqa.github.io/wiki-readme.html: ``enwiki-20171001-pages-meta-current-withlinks-abstracts
.tar.bz2``) is a tar of folders of bz2 files, each holding JSON lines ``{"id", "url", "title", "text": [sentences],
...}`` whose sentences may carry ``<a href>`` links. :func:`iter_abstracts` takes the tar itself, a folder it was
extracted to (``*.bz2`` or plain ``wiki_NN`` files, in name order) or one such file, and yields each page's title and
its sentences as plain text, streaming: the dump is 5.2 million pages.
"""

from __future__ import annotations

import bz2
import json
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from actune.records.jsonl import shown_bytes
from actune.tasks.sources import TaskFileError

__all__ = ["iter_abstracts"]

_TAG = re.compile(r"<[^>]+>")


def _sentences(text: Any, where: str) -> list[str]:
    """A page's ``text`` (sentences, or paragraphs of sentences in other dumps of the same form) as plain sentences."""
    if not isinstance(text, list):
        raise TaskFileError(f"{where}: text: must be a list of sentences, got {type(text).__name__}")
    flat = [s for part in text for s in (part if isinstance(part, list) else [part])]
    if not all(isinstance(s, str) for s in flat):
        raise TaskFileError(f"{where}: text: must hold strings")
    return [clean for s in flat if (clean := " ".join(_TAG.sub("", s).split()))]


def _numbered_lines(data: IO[bytes], name: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of ``data``, each line decoded alone, so a line that is not UTF-8 is a
    :class:`TaskFileError` naming it (a text wrapper decodes a chunk ahead and would name the wrong line)."""
    for line_no, raw in enumerate(data, 1):
        try:
            yield line_no, raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise TaskFileError(f"{name}:{line_no}: not UTF-8 text ({shown_bytes(raw[e.start:e.end])}); save the "
                                "file as UTF-8") from None


def _pages(stream: IO[bytes], name: str) -> Iterator[tuple[str, list[str]]]:
    data = bz2.open(stream) if name.endswith(".bz2") else stream
    for line_no, raw in _numbered_lines(data, name):
        if not raw.strip():
            continue
        where = f"{name}:{line_no}"
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as e:
            raise TaskFileError(f"{where}: not valid JSON ({e.msg})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("title"), str):
            raise TaskFileError(f"{where}: title: a page is an object with a string title")
        yield rec["title"], _sentences(rec.get("text"), where)


def iter_abstracts(path: Path) -> Iterator[tuple[str, list[str]]]:
    """``(title, sentences)`` for each page of the dump at ``path`` (the module docstring), in the dump's order."""
    if path.is_file() and tarfile.is_tarfile(path):
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                f = tar.extractfile(member) if member.isfile() else None
                if f is not None:
                    yield from _pages(f, f"{path}:{member.name}")
        return
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
    if not files:
        raise TaskFileError(f"{path}: no abstracts dump there (the tar.bz2 of https://hotpotqa.github.io/"
                            "wiki-readme.html, or the folder it was extracted to)")
    for p in files:
        with p.open("rb") as f:
            yield from _pages(f, str(p))
