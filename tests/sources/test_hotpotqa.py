"""The HotpotQA task source: answerable questions only, no question or supporting page shared between splits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.sources.hotpotqa import MANIFEST, HotpotQASource, write_hotpotqa_tasks
from actune.tasks.sources import TaskFileError

SMALL = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"
CALLAS_TRAIN = "5a81b9545542995ce29dcc53"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "hotpotqa"
ANSWERABLE_DEV = {"5adde3a45542997545bbbdc2", "5ac097b05542996f0d89cc18", "5ade2bce5542997c77aded96",
                  "5ac11201554299294b21908c", "5a84c4135542994c784dda31", "5a8651185542994775f60752",
                  "5a84f4c75542997175ce1f31"}
TRAIN_NOT_CALLAS = {"5ac2bda6554299657fa29025", "5a898b1455429946c8d6e944", "5a762f495542992db9473736",
                    "5a887479554299206df2b278"}


def _split(out: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]


def _pages(records: list[dict]) -> set[str]:
    return {t for r in records for t in r["meta"]["supporting_titles"]}


def test_every_answerable_dev_question_tested_and_train_loses_the_one_sharing_a_page(tmp_path: Path) -> None:
    m = write_hotpotqa_tasks(HotpotQASource(data_dir=str(SMALL), n_test=7, n_dev=0), tmp_path)
    test, dev, train = (_split(tmp_path, s) for s in ("test", "dev", "train"))
    # the unanswerable dev question (its page is not in the corpus) is never asked
    assert {r["id"] for r in test} == ANSWERABLE_DEV and dev == []
    # the train question on "Maria Callas" reads a test page: dropped
    assert {r["id"] for r in train} == TRAIN_NOT_CALLAS
    assert m["counts"] == {"train": 4, "dev": 0, "test": 7}
    assert m["kinds"]["test"] == {"bridge": 2, "comparison": 5}
    assert json.loads((tmp_path / MANIFEST).read_text())["pages"] == 24  # 13 questions' pages, 2 shared, 1 left out
    # a link, not a copy: a Wikipedia-abstracts corpus is gigabytes, and one search index serves every run
    assert (tmp_path / "corpus.jsonl").is_symlink()
    assert (tmp_path / "corpus.jsonl").resolve() == (SMALL / "wiki_paragraphs.jsonl").resolve()
    callas = next(r for r in test if r["id"] == "5a84f4c75542997175ce1f31")
    # the evidence: the supporting sentences as the corpus writes them (Maria Callas's third, Bellini's first)
    assert callas["meta"] == {"kind": "bridge", "supporting_titles": ["Maria Callas", "Vincenzo Bellini"],
                              "level": callas["meta"]["level"], "source": "hotpotqa-dev", "evidence": [[
                                  'Her repertoire ranged from classical "opera seria" to the "bel canto" operas of '
                                  "Donizetti, Bellini and Rossini and further, to the works of Verdi and Puccini; and, "
                                  "in her early career, to the music dramas of Wagner.",
                                  "Vincenzo Salvatore Carmelo Francesco Bellini (] ; 3 November 1801 – 23 September "
                                  "1835) was an Italian opera composer, who was known for his long-flowing melodic "
                                  'lines for which he was named "the Swan of Catania".']]}
    assert m["evidence_known"] == {"train": 4, "dev": 0, "test": 7}


def test_a_record_without_supporting_sentences_is_marked_evidence_unknown(tmp_path: Path) -> None:
    from actune.records.task_record import Task
    from actune.sources.hotpotqa import task_evidence

    pages = {"a": ["A one.", " A two."], "b": ["B one."]}
    assert task_evidence(Task("1", "q", meta={"supporting_facts": [["A", 1], ["B", 0]]}), pages) == ["A two.", "B one."]
    # titles only (349 of the 1,388 dev records of ../shared's copy), or an index the page lacks: unknown
    assert task_evidence(Task("2", "q", meta={"supporting_titles": ["A"]}), pages) is None
    assert task_evidence(Task("3", "q", meta={"supporting_facts": [["A", 5]]}), pages) is None


def test_splits_share_no_question_and_no_page_whatever_the_seed(tmp_path: Path) -> None:
    for seed in range(4):
        out = tmp_path / str(seed)
        write_hotpotqa_tasks(HotpotQASource(data_dir=str(SMALL), n_test=5, n_dev=1, split_seed=seed), out)
        test, dev, train = (_split(out, s) for s in ("test", "dev", "train"))
        assert len(test) == 5 and len(dev) == 1
        assert not _pages(test) & _pages(train) and not _pages(test) & _pages(dev) and not _pages(dev) & _pages(train)
        ids = [r["id"] for r in test + dev + train]
        assert len(ids) == len(set(ids))
        # the answerable dev question the test and dev splits left goes to train, after the train file's (questions
        # of one split may share a page); the train question on "Maria Callas" stays unless a test or dev
        # question reads that page
        assert {r["id"] for r in test + dev} <= ANSWERABLE_DEV
        left = ANSWERABLE_DEV - {r["id"] for r in test + dev}
        callas_held = "5a84f4c75542997175ce1f31" in {r["id"] for r in test + dev}
        assert {r["id"] for r in train} == TRAIN_NOT_CALLAS | left | (set() if callas_held else {CALLAS_TRAIN})


def test_too_few_answerable_questions_and_missing_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="7 answerable dev questions .* fewer than hotpotqa.n_test=8"):
        write_hotpotqa_tasks(HotpotQASource(data_dir=str(SMALL), n_test=8), tmp_path / "a")
    with pytest.raises(TaskFileError, match=r"hotpotqa.data_dir: .*train_with_context.jsonl not found \(the module "
                                            "actune.sources.hotpotqa"):
        write_hotpotqa_tasks(HotpotQASource(data_dir=str(tmp_path)), tmp_path / "b")
    assert not (tmp_path / "a" / MANIFEST).exists()


def test_a_dev_question_without_a_type_takes_the_official_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train_with_context.jsonl", "wiki_paragraphs.jsonl"):
        (data / name).write_bytes((SMALL / name).read_bytes())
    lines = (SMALL / "dev_with_context.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first.pop("type")
    (data / "dev_with_context.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    official = [{"question": "q", "answer": "a", "type": "bridge"}] * (first["dev_index"] + 1)
    official[first["dev_index"]] = {"question": first["question"], "answer": first["answer"], "type": "comparison"}
    m = write_hotpotqa_tasks(HotpotQASource(data_dir=str(data), n_test=7, n_dev=0), tmp_path / "a")
    assert m["kinds"]["test"] == {"bridge": 2, "comparison": 4, "unknown": 1}
    (data / "dev_v1_simplified.json").write_text(json.dumps(official))
    m = write_hotpotqa_tasks(HotpotQASource(data_dir=str(data), n_test=7, n_dev=0), tmp_path / "b")
    assert m["kinds"]["test"] == {"bridge": 2, "comparison": 5}


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/hotpotqa is not here (a fresh clone)")
def test_the_real_files_give_500_test_questions_disjoint_from_training(tmp_path: Path) -> None:
    m = write_hotpotqa_tasks(HotpotQASource(data_dir=str(SHARED)), tmp_path)
    assert m["counts"] == {"train": 661, "dev": 100, "test": 500}
    test, dev, train = (_split(tmp_path, s) for s in ("test", "dev", "train"))
    assert not _pages(test) & (_pages(train) | _pages(dev))
    assert not {r["question"] for r in test} & {r["question"] for r in train + dev}
    assert {r["meta"]["source"] for r in test} == {"hotpotqa-dev"}


def test_react500_needs_the_papers_questions_answerable(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="n_test must be 500, not 7"):
        write_hotpotqa_tasks(HotpotQASource(data_dir=str(SMALL), n_test=7, test_set="react500"), tmp_path / "a")
    # the fixture holds 8 dev questions, far from the paper's 500
    with pytest.raises(TaskFileError, match="of the ReAct paper's 500 dev questions are missing or not answerable"):
        write_hotpotqa_tasks(HotpotQASource(data_dir=str(SMALL), n_test=500, test_set="react500"), tmp_path / "b")


def test_react500_tests_the_papers_questions_in_its_order() -> None:
    from actune.records.task_record import Task
    from actune.sources.hotpotqa import hotpotqa_splits
    from actune.tasks.hotpotqa import react_subset_indices

    def task(i: int, page: str) -> Task:
        return Task(id=f"d{i}", question=f"question {i}?", answer="a", meta={"dev_index": i, "index": i,
                                                                              "supporting_titles": [page]})

    order = react_subset_indices()
    dev = [task(i, f"P{i}") for i in range(7405)]
    splits = hotpotqa_splits([], dev, {f"p{i}" for i in range(7405)},
                             HotpotQASource(n_test=500, n_dev=10, test_set="react500"))
    assert [t.meta["dev_index"] for t in splits["test"]] == order
    assert len(splits["dev"]) == 10 and not {t.id for t in splits["dev"]} & {t.id for t in splits["test"]}


def test_a_bad_corpus_line_names_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train_with_context.jsonl", "dev_with_context.jsonl"):
        (data / name).write_bytes((SMALL / name).read_bytes())
    (data / "wiki_paragraphs.jsonl").write_text('{"title": "A", "sentences": ["a."]}\n{"sentences": ["b."]}\n')
    with pytest.raises(TaskFileError, match=r"wiki_paragraphs.jsonl:2: missing or empty 'title'"):
        write_hotpotqa_tasks(HotpotQASource(data_dir=str(data), n_test=1), tmp_path / "out")
