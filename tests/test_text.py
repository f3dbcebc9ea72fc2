from __future__ import annotations

from actune.text import normalize_label, split_sentences, word_tokens


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


def test_normalise_question_ignores_case_punctuation_and_spacing_only() -> None:
    from actune.text import normalise_question

    assert normalise_question("Who founded  Dravon Systems?") == normalise_question("who founded dravon systems")
    assert normalise_question("Ｗho founded X?") == "who founded x"  # NFKC: full-width letters
    assert normalise_question("Who founded X?") != normalise_question("Who started X?")


def test_word_tokens_are_lowercase_ascii_letter_and_digit_runs() -> None:
    assert word_tokens("Mickey Rourke's 2011 film (Immortals), é-x") == [
        "mickey", "rourke", "s", "2011", "film", "immortals", "x"]
