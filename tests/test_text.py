from __future__ import annotations

from actune.text import normalize_label, split_sentences


def test_split_sentences_keeps_initials_and_abbreviations_together() -> None:
    text = ('"Music" was recorded by Tom T. Hall.  It reached No. 1 in the U.S. charts! Did it? '
            'Yes. J. R. R. Tolkien met Dr. Smith in St. Louis.\n\nA new paragraph')
    assert split_sentences(text) == [
        '"Music" was recorded by Tom T. Hall.',
        "It reached No. 1 in the U.S. charts!",
        "Did it?",
        "Yes.",
        "J. R. R. Tolkien met Dr. Smith in St. Louis.",
        "A new paragraph",
    ]


def test_split_sentences_splits_before_quotes_and_brackets() -> None:
    assert split_sentences('He left. "Why?" she asked. (It was late.) Then 1990 came.') == [
        "He left.", '"Why?" she asked.', "(It was late.)", "Then 1990 came.",
    ]


def test_split_sentences_of_empty_text_is_empty() -> None:
    assert split_sentences("") == []
    assert split_sentences("  \n \n") == []


def test_normalize_label() -> None:
    assert normalize_label(" supports. ") == "SUPPORTS"
    assert normalize_label("NOT_ENOUGH_INFO") == "NOT ENOUGH INFO"
    assert normalize_label("support") is None
