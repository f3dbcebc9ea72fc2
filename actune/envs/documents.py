"""Read a folder of documents (txt, md, html) and cut them into passages for retrieval.

HTML is reduced to text with the standard library's ``html.parser`` (scripts and styles dropped,
block elements become line breaks). A document's title is the HTML ``<title>`` (or first ``<h1>``),
a Markdown file's first ``# heading``, else the file name. Passages are whole sentences, at most
``passage_words`` words, never across a paragraph break (a blank line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from actune.records.jsonl import read_text
from actune.text import split_sentences

__all__ = ["Passage", "DocumentError", "DOC_SUFFIXES", "html_to_text", "read_documents", "split_passages"]

DOC_SUFFIXES = (".txt", ".md", ".markdown", ".html", ".htm")


class DocumentError(ValueError):
    """A documents folder cannot be used; the message names the path."""


@dataclass(frozen=True)
class Passage:
    title: str
    text: str
    path: str  # relative to the documents folder
    index: int  # position of the passage within its document


_BLOCK_TAGS = frozenset(
    "p div br li ul ol h1 h2 h3 h4 h5 h6 tr table section article header footer blockquote pre dt dd title".split()
)
_SKIP_TAGS = frozenset(("script", "style", "noscript", "template"))


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_depth = 0
        self.in_title = self.in_h1 = False
        self.title = ""
        self.h1 = ""

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _SKIP_TAGS:
            self.skip_depth += 1
        if tag == "title":
            self.in_title = True
        if tag == "h1":
            self.in_h1 = True
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_TAGS and self.skip_depth:
            self.skip_depth -= 1
        if tag == "title":
            self.in_title = False
        if tag == "h1":
            self.in_h1 = False
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        if self.in_title:
            self.title += data
            return  # the title is metadata, not body text
        if self.in_h1 and not self.title:
            self.h1 += data
        self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document; paragraphs separated by blank lines."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    # Collapse whitespace inside paragraphs, keep blank lines between them.
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    title = " ".join((parser.title or parser.h1).split())
    return title, "\n\n".join(p for p in paragraphs if p)


def _markdown_title(text: str) -> str:
    for line in text.splitlines():
        m = re.match(r"#\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)
    return ""


def split_passages(title: str, text: str, path: str, passage_words: int) -> list[Passage]:
    """Cut ``text`` into passages of whole sentences, at most ``passage_words`` words each
    (a single longer sentence is cut at the limit)."""
    passages: list[Passage] = []
    for paragraph in re.split(r"\n\s*\n", text):
        # Markdown headings and list markers are layout, not words
        lines = [re.sub(r"^\s*(#+|[-*+]|\d+\.)\s+", "", ln) for ln in paragraph.splitlines()]
        current: list[str] = []
        n_words = 0
        for sentence in split_sentences(" ".join(ln.strip() for ln in lines if ln.strip())):
            words = sentence.split()
            while len(words) > passage_words:  # an overlong sentence becomes pieces of its own
                if current:
                    passages.append(Passage(title, " ".join(current), path, len(passages)))
                    current, n_words = [], 0
                passages.append(Passage(title, " ".join(words[:passage_words]), path, len(passages)))
                words = words[passage_words:]
            if not words:
                continue
            if n_words + len(words) > passage_words and current:
                passages.append(Passage(title, " ".join(current), path, len(passages)))
                current, n_words = [], 0
            current.append(" ".join(words))
            n_words += len(words)
        if current:
            passages.append(Passage(title, " ".join(current), path, len(passages)))
    return passages


def read_documents(folder: str | Path, passage_words: int = 120) -> list[Passage]:
    """Every passage of every document under ``folder`` (recursively, in path order)."""
    root = Path(folder)
    if not root.is_dir():
        raise DocumentError(f"{root}: documents folder not found")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in DOC_SUFFIXES)
    if not files:
        raise DocumentError(f"{root}: no documents ({', '.join(DOC_SUFFIXES)}) found")
    passages: list[Passage] = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        raw = read_text(f, DocumentError)
        if f.suffix.lower() in (".html", ".htm"):
            title, text = html_to_text(raw)
        else:
            text = raw
            title = _markdown_title(raw) if f.suffix.lower() in (".md", ".markdown") else ""
            if title:  # the heading is the title; keep it out of the body
                text = re.sub(r"^\s*#\s+.+$", "", raw, count=1, flags=re.M)
        title = title or f.stem.replace("_", " ").replace("-", " ")
        passages += split_passages(title, text, rel, passage_words)
    return passages
