"""CoT-SC's vote groups answers as the official HotpotQA/SQuAD normaliser does, the scorer's own (issue #50)."""

from __future__ import annotations

import re
import string
from collections import Counter
from itertools import combinations

from actune.agent.methods import cot_sc
from actune.agent.methods.cot_sc import majority_vote
from actune.tasks import metrics


def official_normalize_answer(s: str) -> str:
    """hotpot_evaluate_v1.py's normalize_answer (the same as SQuAD v1.1's), verbatim but for the layout."""
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


ANSWERS = ["The Beatles", "beatles!", "Beatles, the", "the  BEATLES.", "Anne's theatre", "annes theatre",
           "An apple", "apple", "A.B.C.", "abc", "café — bar", "café bar", "U.S.", "us", "1946", "1,946"]


def test_cot_sc_votes_with_the_scorers_normaliser():
    assert cot_sc.normalize_answer is metrics.normalize_answer  # one normaliser, not a copy
    assert "normalize_answer" not in cot_sc.__all__


def test_votes_group_answers_exactly_as_the_official_normaliser():
    _, votes = majority_vote(ANSWERS)
    assert votes == dict(Counter(official_normalize_answer(a) for a in ANSWERS))
    # two samples share a vote exactly when the official script would call them the same answer
    for a, b in combinations(ANSWERS, 2):
        same_vote = len(majority_vote([a, b])[1]) == 1
        assert same_vote == (official_normalize_answer(a) == official_normalize_answer(b)), (a, b)


def test_the_group_the_official_normaliser_forms_wins():
    # "The Beatles" and its spellings are four votes of one answer: the first of them wins over three of "apple"
    winner, votes = majority_vote(["An apple", "The Beatles", "apple", "beatles!", "Beatles, the", "the apple",
                                   "the  BEATLES.", None])
    assert winner == 1 and votes == {"apple": 3, "beatles": 4}
