"""Text helpers that environments, task loading and eval read: sentences, FEVER labels, question keys.

They live outside ``actune.envs`` and ``actune.tasks`` so that neither package imports the other.

Sentence splitting: corpora in the HotpotQA format are already split into sentences and are served
unchanged; this is for ``{"title", "text"}`` lines, ``"sentence_split": false`` paragraphs, MediaWiki
extracts and
the FEVER wiki built from ReAct's observation cache. A regex splitter with an abbreviation guard: good enough for
``lookup`` (the paper split on ". ").
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["split_sentences", "word_tokens", "FEVER_LABELS", "normalize_label", "normalise_question"]

# A boundary: end punctuation (optionally closed by a quote or bracket), whitespace, then something
# that can start a sentence.
_BOUNDARY = re.compile(r"(?<=[.!?])([\"'”’)\]]?)\s+(?=[\"'“‘(\[]?\s?[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof mt no nos inc ltd co corp vs etc gen col lt sgt capt rev fr ft "
    "jan feb mar apr jun jul aug sep sept oct nov dec approx est fig vol op ca".split()
)
_LAST_WORD = re.compile(r"(\S+)$")


def _is_abbreviation(before: str) -> bool:
    m = _LAST_WORD.search(before)
    if not m:
        return False
    word = m.group(1).rstrip(".\"'”’)]").lstrip("(\"'“‘[")
    if len(word) == 1 and word.isalpha():
        return True  # an initial: "J. R. R. Tolkien"
    if "." in word and len(word) <= 6 and word.replace(".", "").isalpha():
        return True  # "U.S." "e.g." at a boundary: usually mid-sentence in encyclopedia text
    return word.lower() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Split running text into stripped, non-empty sentences (paragraph breaks always split)."""
    out: list[str] = []
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        start = 0
        for m in _BOUNDARY.finditer(paragraph):
            end = m.start() + len(m.group(1))
            if _is_abbreviation(paragraph[start:m.start()]):
                continue
            piece = paragraph[start:end].strip()
            if piece:
                out.append(piece)
            start = m.end()
        piece = paragraph[start:].strip()
        if piece:
            out.append(piece)
    return out


_WORD = re.compile(r"[a-z0-9]+")


def word_tokens(text: str) -> list[str]:
    """The lowercase runs of ASCII letters and digits of ``text``, in order: the words that word-overlap rules
    (gold paths' closest sentence, the claim-only yardstick) compare."""
    return _WORD.findall(text.lower())


FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")


def normalize_label(text: str) -> str | None:
    """A FEVER label from free text (case, ``_``, spaces, trailing period forgiven), or None."""
    key = " ".join(text.replace("_", " ").strip().strip(".").upper().split())
    return key if key in FEVER_LABELS else None


def normalise_question(q: str) -> str:
    """Case, punctuation and spacing ignored: a reworded-by-whitespace copy is still the same question (the key
    eval's leakage check and the task sources' splits compare questions by)."""
    return " ".join(re.sub(r"[^\w\s]", " ", unicodedata.normalize("NFKC", q).casefold()).split())
