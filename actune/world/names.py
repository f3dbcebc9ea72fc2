"""Pronounceable invented names built from syllables.

Every name in a world is new to any model: it is spelled from syllables, checked against real
words and well-known names (:mod:`actune.world.common_words`), never repeats a token used elsewhere
in the same world, and never uses a token of :data:`RESERVED_TOKENS` (the entities of the few-shot
exemplars in ``actune/prompts/world.json``, which must not appear in any generated world).
"""

from __future__ import annotations

import random

from actune.config import ConfigError
from actune.world.common_words import COMMON_WORDS

__all__ = ["RESERVED_TOKENS", "NameGenerator", "is_acceptable_token"]

# Consonant onsets and vowels chosen so that any onset+vowel string reads aloud one way.
# Single consonants and plain vowels: short names a 135M model can copy letter for letter (with
# clusters and diphthongs it misspelled names in searches: "Linlera" -> "Linera").
_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o")
# Codas only on a word's first or last syllable: a coda followed by a cluster onset is unpronounceable.
_FIRST_CODAS = ("", "", "", "l", "n", "r", "s")
_LAST_CODAS = ("", "", "n", "r", "l", "s", "k", "t", "m")

#: Name tokens of the exemplar entities in ``actune/prompts/world.json``; generation never uses them.
RESERVED_TOKENS: frozenset[str] = frozenset(
    """
    quillory brimvale tabeth onsgard ilvo prassen demira kostel yarrowick pellagor ostrume
    caldessa vintara feswick orrel haldune mirsk
    """.split()
)

_BAD_SUBSTRINGS = ("sex", "fuck", "shit", "nazi", "kill", "dead", "cum", "tit", "ass", "anal", "rape", "god")


def is_acceptable_token(token: str) -> bool:
    """True when ``token`` (one word) is long enough, not a real word, and not reserved."""
    low = token.lower()
    return (
        len(low) >= 4
        and low not in COMMON_WORDS
        and low not in RESERVED_TOKENS
        and not any(bad in low for bad in _BAD_SUBSTRINGS)
        # three identical letters in a row ("Brrra") read badly
        and not any(low[i] == low[i + 1] == low[i + 2] for i in range(len(low) - 2))
    )


class NameGenerator:
    """Draws unique invented name tokens from one ``random.Random``.

    Every token returned by :meth:`token` differs from every earlier one (case-insensitively), so
    full names built from them never share a word: a search for any word of a title is unambiguous.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def _spell(self, n_syllables: int, last_coda: bool = True) -> str:
        rng = self.rng
        parts = []
        for i in range(n_syllables):
            syl = rng.choice(_ONSETS) + rng.choice(_VOWELS)
            if i == 0 and n_syllables > 1:
                syl += rng.choice(_FIRST_CODAS)
            elif i == n_syllables - 1 and last_coda:
                syl += rng.choice(_LAST_CODAS)
            parts.append(syl)
        return "".join(parts).capitalize()

    def token(self, syllables: tuple[int, ...] = (2, 2, 3), suffix: str = "") -> str:
        """A new token of one of the given syllable counts (``suffix`` appended, e.g. ``"wick"``)."""
        for _ in range(10_000):
            word = self._spell(self.rng.choice(syllables), last_coda=not suffix) + suffix
            if word.lower() not in self.used and is_acceptable_token(word):
                self.used.add(word.lower())
                return word
        raise ConfigError("the world is too large for its invented names (no new one after 10,000 tries): lower "
                          "n_people, n_companies or n_cities")
