"""How far the pages an episode has read bear on its question: the wiki envs' ``retrieval_score``.

LLARS answers at once when retrieval confidence is high. Its confidence comes from source scores: how well
what was retrieved matches what is asked. In the wiki envs the agent searches an entity, not the question,
and an exact title always opens its page, so "a page was found" (the old 1.0) says nothing about the goal:
with it, the adaptive early exit answered after the first successful search of a bridge question. The score
here relates the evidence to the question instead:

- **coverage**: the share of the question's content words (stopwords and the words that only name the
  answer's type, such as "year" or "many", left out) found in the text of the pages read so far in the
  episode (titles, search results and lookup sentences), matched on their first five letters so
  "founded" meets "founding";
- **answer candidate**: when the question asks for a year (``when``, ``which year``) or a number
  (``how many``, ``how long``...), the score is 0.0 unless the current observation holds one: a page
  that cannot hold the answer does not end the search.

A question without content words scores 0.0. The score is computed from the question and the text the
agent was shown, nothing else: no label, no answer.
"""

from __future__ import annotations

import re

from actune.envs.docqa_env import tokenize

__all__ = ["GoalEvidence", "answer_type", "question_terms", "stems"]

#: Words that name the answer's type rather than a constraint on it; the answer-candidate check stands
#: for them.
_TYPE_WORDS = frozenset("year years decade many much long old far tall high big large same name named".split())
_YEAR_QUESTION = re.compile(r"\b(?:what|which)\s+year\b|\bwhen\b|\bwhat\s+decade\b", re.IGNORECASE)
_NUMBER_QUESTION = re.compile(r"\bhow\s+(?:many|much|long|old|far|tall|high|big|large)\b", re.IGNORECASE)
_CANDIDATE = {"year": re.compile(r"\b(?:1\d{3}|20\d{2})s?\b"), "number": re.compile(r"\d")}
_STEM = 5


def stems(text: str) -> set[str]:
    """The text's content words, each cut to its first five letters."""
    return {t[:_STEM] for t in tokenize(text)}


def question_terms(question: str) -> set[str]:
    """The stems of the question's content words, without the words that name the answer type."""
    return {t[:_STEM] for t in tokenize(question) if t not in _TYPE_WORDS}


def answer_type(question: str) -> str | None:
    """``year`` or ``number`` when the question asks for one (a candidate can be seen in text); else None."""
    if _YEAR_QUESTION.search(question):
        return "year"
    if _NUMBER_QUESTION.search(question):
        return "number"
    return None


class GoalEvidence:
    """The evidence one episode has read, scored against its question (see the module docstring)."""

    def __init__(self, question: str) -> None:
        self.terms = question_terms(question)
        self.kind = answer_type(question)
        self.read: set[str] = set()

    def score(self, observation: str, title: str = "") -> float:
        """Add one page observation (and its page's title) to the evidence; its confidence, 0..1."""
        self.read |= stems(f"{title} {observation}")
        if not self.terms:
            return 0.0
        if self.kind is not None and not _CANDIDATE[self.kind].search(observation):
            return 0.0
        return round(len(self.terms & self.read) / len(self.terms), 4)
