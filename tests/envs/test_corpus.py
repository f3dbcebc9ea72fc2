from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from actune.envs.corpus import CorpusError, LocalCorpus, index_dir_for, read_corpus

DATA = Path(__file__).parents[1] / "data" / "wiki" / "hotpotqa_pages.jsonl"


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_sentences_are_served_unchanged_apart_from_whitespace(tmp_path: Path) -> None:
    c = LocalCorpus.open(DATA, tmp_path)
    page = c.find_page("Scott Derrickson")
    assert page is not None and page.title == "Scott Derrickson"
    assert page.sentences == [
        "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer.",
        "He lives in Los Angeles, California.",
        'He is best known for directing horror films such as "Sinister", "The Exorcism of Emily Rose", and '
        '"Deliver Us From Evil", as well as the 2016 Marvel Cinematic Universe installment, "Doctor Strange."',
    ]
    assert c.num_pages == 19
    assert c.meta["pages"] == 19 and c.meta["duplicate_titles"] == 0


def test_unsplit_paragraphs_and_text_pages_are_split_into_sentences(tmp_path: Path) -> None:
    c = LocalCorpus.open(DATA, tmp_path)
    page = c.find_page("(Old Dogs, Children and) Watermelon Wine")
    assert page is not None and len(page.sentences) == 5
    assert page.sentences[1] == 'It was released in November 1972 as the second and final single from the album, "The Storyteller".'
    corpus = write_jsonl(tmp_path / "t.jsonl", [{"title": "Alpha", "text": "One here. Two there.\nThree."}])
    assert LocalCorpus.open(corpus, tmp_path).find_page("alpha").sentences == ["One here.", "Two there.", "Three."]


def test_title_matching_order(tmp_path: Path) -> None:
    c = LocalCorpus.open(DATA, tmp_path)
    assert c.find_page("scott_derrickson").title == "Scott Derrickson"
    assert c.find_page('"Q" Is for Quarry').title == "&quot;Q&quot; Is for Quarry"
    # "Ed Wood" exists: an exact title wins over "Ed Wood (film)"
    assert c.find_page("ed wood").title == "Ed Wood"
    # no "Paris" page: the only page whose base title is "paris" opens
    assert c.find_page("Paris").title == "Paris (1994 TV series)"
    assert c.find_page("Paris (film)") is None
    assert c.find_page("Nonexistent Page") is None
    assert c.find_page("") is None


def test_base_title_match_needs_a_single_candidate(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"title": "Mercury (planet)", "sentences": ["A planet."]},
        {"title": "Mercury (element)", "sentences": ["An element."]},
    ])
    c = LocalCorpus.open(corpus, tmp_path)
    assert c.find_page("Mercury") is None
    assert c.find_page("mercury (element)").sentences == ["An element."]


def test_duplicate_titles_are_merged_and_reported(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "d.jsonl", [
        {"title": "Rome", "sentences": ["Rome is a city."]},
        {"title": "Other", "sentences": ["Something else."]},
        {"title": "Rome", "sentences": ["It is in Italy."]},
        {"title": "ROME", "sentences": ["Shouting."]},
    ])
    c = LocalCorpus.open(corpus, tmp_path)
    assert c.meta["duplicate_titles"] == 1 and c.meta["duplicate_title_examples"] == ["Rome"]
    assert c.find_page("Rome").sentences == ["Rome is a city.", "It is in Italy."]
    assert c.find_page("ROME").sentences == ["Shouting."]  # identical title first
    assert c.find_page("rome").title == "Rome"  # else the first in the corpus
    assert [t for t, _ in c.search("rome", k=5)] == ["Rome", "ROME"]  # titles listed once


def test_search_lists_similar_titles_with_normalised_scores(tmp_path: Path) -> None:
    c = LocalCorpus.open(DATA, tmp_path)
    hits = c.search("Ed Wood filmmaker", k=5)
    assert [t for t, _ in hits][:2] == ["Ed Wood", "Ed Wood (film)"]
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert c.search("zzzz qqqq", k=5) == []


def test_index_is_built_once_and_rebuilt_when_the_corpus_changes(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "sentences": ["First."]}])
    first = index_dir_for(corpus, tmp_path / "idx")
    LocalCorpus.open(corpus, tmp_path / "idx")
    stamp = (first / "meta.json").stat().st_mtime_ns
    assert LocalCorpus.open(corpus, tmp_path / "idx").index_dir == first
    assert (first / "meta.json").stat().st_mtime_ns == stamp  # reused, not rebuilt
    write_jsonl(corpus, [{"title": "A", "sentences": ["Changed text."]}, {"title": "B", "text": "New."}])
    os.utime(corpus, ns=(stamp + 10**9, stamp + 10**9))
    c = LocalCorpus.open(corpus, tmp_path / "idx")
    assert c.index_dir != first and c.find_page("A").sentences == ["Changed text."]
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "idx").iterdir()) == ["c", "c"]  # no temp folders left


def test_default_index_root_is_under_actune_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path / "home"))
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": "A", "sentences": ["x."]}])
    assert index_dir_for(corpus).parent == tmp_path / "home" / "indexes"


@pytest.mark.parametrize("line, message", [
    ("{not json", "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"sentences": ["x"]}', "missing or empty 'title'"),
    ('{"title": "T"}', "needs 'sentences'"),
    ('{"title": "T", "sentences": "not a list"}', "'sentences' must be a list of strings"),
    ('{"title": "T", "text": 3}', "'text' must be a string"),
])
def test_bad_corpus_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    corpus = write_jsonl(tmp_path / "bad.jsonl", [{"title": "Fine", "sentences": ["ok"]}, "", line])
    with pytest.raises(CorpusError, match=rf"bad\.jsonl:3: .*{message}"):
        LocalCorpus.open(corpus, tmp_path / "idx")
    assert not any((tmp_path / "idx").iterdir())  # the failed build left nothing behind


def test_empty_corpus_and_missing_file_are_errors(tmp_path: Path) -> None:
    empty = write_jsonl(tmp_path / "empty.jsonl", [])
    with pytest.raises(CorpusError, match="no pages"):
        LocalCorpus.open(empty, tmp_path / "idx")
    with pytest.raises(CorpusError, match="not found"):
        LocalCorpus.open(tmp_path / "missing.jsonl", tmp_path / "idx")


def test_read_corpus_yields_titles_and_sentences(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"title": " T ", "sentences": [" a ", "", "b  c"], "extra": 1}])
    assert list(read_corpus(corpus)) == [("T", ["a", "b c"])]
