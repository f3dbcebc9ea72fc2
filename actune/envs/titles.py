"""How a search argument is matched to a page title.

Wikipedia's "Go" box matches titles loosely: case of the first letter, underscores for spaces,
HTML entities. A model writes ``search[Scott derrickson]`` or ``search[Scott_Derrickson]`` and
expects the page. :func:`normalize_title` is the key both sides are compared on; :func:`base_title`
drops one trailing parenthetical so ``search[Paris]`` can open "Paris (band)" when that is the only
page with that base name.
"""

from __future__ import annotations

import html
import re
import unicodedata

_SPACES = re.compile(r"\s+")
_TRAILING_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "`": "`"}


def normalize_title(title: str) -> str:
    """The comparison key: HTML entities decoded, NFKC, casefolded, ``_`` as space, spaces collapsed.

    Surrounding quotes and a trailing period the model adds (``search["Paris".]``) are dropped too.
    """
    text = html.unescape(title)
    text = unicodedata.normalize("NFKC", text).replace("_", " ")
    text = _SPACES.sub(" ", text).strip()
    if len(text) > 1 and text[0] in _QUOTES and _QUOTES[text[0]] == text[-1]:
        text = text[1:-1].strip()
    if text.endswith(".") and not text.endswith(".."):
        # "Washington, D.C." keeps its final period only when the title itself has it; the caller
        # tries the unstripped form first, so dropping it here only widens the match.
        text = text[:-1].rstrip()
    return text.casefold()


def base_title(title: str) -> str:
    """The normalised title without one trailing parenthetical: "Paris (band)" -> "paris"."""
    norm = normalize_title(title)
    stripped = _TRAILING_PAREN.sub("", norm).strip()
    return stripped or norm
