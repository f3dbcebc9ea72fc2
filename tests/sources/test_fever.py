"""The FEVER task source: claims whose evidence the local wiki holds, no claim or evidence page in two splits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from actune.envs.titles import normalize_title
from actune.sources.fever import MANIFEST, FeverSource, write_fever_tasks
from actune.tasks.sources import TaskFileError

SMALL = Path(__file__).resolve().parents[1] / "data" / "fever_small"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "fever"


def _split(out: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]


def _pages(records: list[dict]) -> set[str]:
    return {t for r in records for t in r["meta"]["supporting_titles"]}


def test_every_claim_with_local_evidence_and_every_nei_claim_tested(tmp_path: Path) -> None:
    m = write_fever_tasks(FeverSource(data_dir=str(SMALL), n_test=19, n_dev=0, nei_share=6 / 19), tmp_path)
    assert m["pages"] == 4 and m["counts"] == {"train": 0, "dev": 0, "test": 19}
    assert m["labels"]["test"] == {"SUPPORTS": 6, "REFUTES": 7, "NOT ENOUGH INFO": 6}
    test = _split(tmp_path, "test")
    assert {r["env"] for r in test} == {"fever"} and {r["meta"]["kind"] for r in test} == {"claim"}
    assert _pages(test) == {"Eighth Doctor", "Henry VIII (TV serial)", "Human brain", "Sophia Bush"}
    for r in test:  # evidence sets the wiki holds, only; NOT ENOUGH INFO has none
        assert (r["answer"] == "NOT ENOUGH INFO") == (r["meta"]["evidence_sets"] == [])
        assert all(set(s) <= _pages(test) for s in r["meta"]["evidence_sets"])
    assert json.loads((tmp_path / MANIFEST).read_text())["source"] == "fever"


def test_groups_sharing_a_page_go_whole_to_one_split(tmp_path: Path) -> None:
    for seed in range(5):
        out = tmp_path / str(seed)
        write_fever_tasks(FeverSource(data_dir=str(SMALL), n_test=3, n_dev=3, nei_share=1 / 3, split_seed=seed), out)
        test, dev, train = (_split(out, s) for s in ("test", "dev", "train"))
        assert not _pages(test) & _pages(train) and not _pages(test) & _pages(dev) and not _pages(dev) & _pages(train)
        claims = [r["question"] for r in test + dev + train]
        assert len(claims) == len(set(claims))
        # each split: whole groups of verifiable claims (one group here reaches the 2 asked), then NEI claims up to
        # the 3 asked (none when a group of 3 or 4 overshoots); train keeps a third NEI (halves up)
        for split in (test, dev):
            verifiable = sum(r["answer"] != "NOT ENOUGH INFO" for r in split)
            assert verifiable in (2, 3, 4) and len(split) == max(3, verifiable)
        train_verifiable = sum(r["answer"] != "NOT ENOUGH INFO" for r in train)
        assert len(train) - train_verifiable == min(6 - sum(r["answer"] == "NOT ENOUGH INFO" for r in test + dev),
                                                    int(train_verifiable / 2 + 0.5))
        assert sum(r["answer"] != "NOT ENOUGH INFO" for r in train) == 13 - sum(
            r["answer"] != "NOT ENOUGH INFO" for r in test + dev)


def test_too_few_claims_and_missing_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="too few SUPPORTS/REFUTES claims .* fever.n_test=30"):
        write_fever_tasks(FeverSource(data_dir=str(SMALL), n_test=30), tmp_path / "a")
    with pytest.raises(TaskFileError, match="fever.data_dir: .*paper_dev.jsonl not found"):
        write_fever_tasks(FeverSource(data_dir=str(tmp_path)), tmp_path / "b")


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/fever is not here (a fresh clone)")
def test_the_real_files_give_300_test_claims_disjoint_from_training(tmp_path: Path) -> None:
    m = write_fever_tasks(FeverSource(data_dir=str(SHARED)), tmp_path)
    assert m["pages"] == 346 and m["counts"]["test"] == 300 and m["counts"]["dev"] == 100
    test, dev, train = (_split(tmp_path, s) for s in ("test", "dev", "train"))
    assert not _pages(test) & (_pages(train) | _pages(dev))
    assert not {r["question"] for r in test} & {r["question"] for r in train + dev}


# NOT ENOUGH INFO claims of paper_dev.jsonl about the fixture's pages (two) and about none of its pages (one: "The
# Eighth Doctor" is no title, so no run of its first words opens a page)
_NEI_ABOUT_PAGES = [
    {"id": 20903, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO", "claim": "Sophia Bush is a twin.",
     "evidence": [[[36687, None, None, None]]]},
    {"id": 87405, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO",
     "claim": "Henry VIII (TV serial) stars a Venezuelan actor.",
     "evidence": [[[104583, None, None, None], [104613, None, None, None]]]},
    {"id": 193400, "verifiable": "NOT VERIFIABLE", "label": "NOT ENOUGH INFO",
     "claim": "The Eighth Doctor is on Doctor What.", "evidence": [[[226451, None, None, None]]]},
]


@pytest.fixture
def with_nei_about_pages(tmp_path: Path) -> Path:
    folder = tmp_path / "fever"
    folder.mkdir()
    (folder / "observation_cache.json").write_bytes((SMALL / "observation_cache.json").read_bytes())
    lines = (SMALL / "paper_dev.jsonl").read_text() + "".join(json.dumps(r) + "\n" for r in _NEI_ABOUT_PAGES)
    (folder / "paper_dev.jsonl").write_text(lines)
    return folder


def test_claim_subject_is_the_longest_run_of_first_words_that_is_a_page() -> None:
    from actune.tasks.fever import claim_subject

    pages = {"Bea", "Bea Arthur", "Eighth Doctor"}.__contains__
    assert claim_subject("Bea Arthur was married to Bernice Frankel.", pages) == "Bea Arthur"
    assert claim_subject("The Eighth Doctor is on Doctor What.", pages) is None
    assert claim_subject("Bea.", pages) == "Bea"
    # six words at most
    assert claim_subject("A b c d e f g h.", {"A b c d e f g"}.__contains__) is None
    assert claim_subject("A b c d e f g h.", {"A b c d e f"}.__contains__) == "A b c d e f"


def test_page_finder_opens_what_the_corpus_opens() -> None:
    from actune.sources.fever import _page_finder

    find = _page_finder({"paris (band)", "sophia bush", "mercury (planet)", "mercury (element)"})
    assert find("Sophia  Bush") == "sophia bush" and find("sophia_bush.") == "sophia bush"
    assert find("Paris") == "paris (band)"  # the one title of that base
    assert find("Mercury") is None  # two of that base
    assert find("Paris (city)") is None and find("Bush") is None and find("") is None


def test_a_nei_claim_goes_with_its_subject_pages_claims(with_nei_about_pages: Path, tmp_path: Path) -> None:
    from actune.records.task_record import Task
    from actune.sources.fever import _page_finder, claim_pages
    from actune.sources.hotpotqa import corpus_titles

    for seed in range(6):
        out = tmp_path / str(seed)
        write_fever_tasks(FeverSource(data_dir=str(with_nei_about_pages), n_test=3, n_dev=3, nei_share=1 / 3,
                                      split_seed=seed), out)
        find = _page_finder(corpus_titles(out / "corpus.jsonl"))
        splits = {s: _split(out, s) for s in ("train", "dev", "test")}
        where = {r["question"]: s for s, rs in splits.items() for r in rs}
        assert where["Sophia Bush is a twin."] == where["Sophia Bush acted in movies."]
        assert where["Henry VIII (TV serial) stars a Venezuelan actor."] == where[
            "Henry VIII (TV serial) stars Richard Griffiths."]
        pages = {s: {p for r in rs for p in claim_pages(Task(id=str(r["id"]), question=r["question"],
                                                             answer=r["answer"], meta=r["meta"]), find)}
                 for s, rs in splits.items()}
        assert not pages["train"] & pages["dev"] and not pages["train"] & pages["test"]
        assert not pages["dev"] & pages["test"]
    # split seed 0: the Henry VIII group (3 + 1 claims) is passed over for test (n_test=3); Sophia Bush's (2 + 1) fits
    assert sorted(r["question"] for r in _split(tmp_path / "0", "test")) == [
        "Sophia Bush acted in movies.", "Sophia Bush appeared in a teen romantic comedy.", "Sophia Bush is a twin."]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/fever is not here (a fresh clone)")
@pytest.mark.parametrize("n_train, train", [(600, 623), (None, 4038)])
def test_the_real_files_share_no_page_between_splits_not_even_a_nei_claims(tmp_path: Path, n_train, train) -> None:
    # a claim's pages: its evidence pages, or for NOT ENOUGH INFO the page its gold path searches (the wiki env's
    # own search here, not the source's title matching); the fever preset (n_train=600) and every claim
    from actune.envs.base import Action
    from actune.envs.config import EnvConfig
    from actune.envs.factory import make_env
    from actune.envs.titles import normalize_title
    from actune.records.task_record import Task
    from actune.tasks.fever import claim_subject

    m = write_fever_tasks(FeverSource(data_dir=str(SHARED), n_train=n_train), tmp_path)
    assert m["counts"] == {"train": train, "dev": 100, "test": 300}
    env = make_env(EnvConfig(name="fever", corpus=str(tmp_path / "corpus.jsonl"), index_dir=str(tmp_path / "idx")))

    def opened(claim: str) -> set[str]:
        def titles(term: str) -> list[str]:
            return env.step(Action("search", term)).info.get("titles") or []
        env.reset(Task(id="c", question=claim, answer="NOT ENOUGH INFO", env="fever"))
        subject = claim_subject(claim, lambda term: bool(titles(term)))
        return {normalize_title(t) for t in titles(subject)} if subject else set()

    pages = {}
    for split in ("train", "dev", "test"):
        pages[split] = set()
        for r in _split(tmp_path, split):
            pages[split] |= ({normalize_title(t) for t in r["meta"]["supporting_titles"]}
                             if r["answer"] != "NOT ENOUGH INFO" else opened(r["question"]))
    assert not pages["train"] & pages["test"] and not pages["train"] & pages["dev"] and not pages["dev"] & pages["test"]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/fever is not here (a fresh clone)")
def test_the_local_pages_hold_only_an_opening_paragraph(tmp_path: Path) -> None:
    """Why FEVER here is read from a page's opening alone (docs/results/36): the local wiki is the ReAct runs'
    recorded searches, at most five sentences a page, so FEVER's evidence sentence is often not there. Over every
    claim split seed 0 uses, a SUPPORTS claim has every word (of four letters or more, not in its pages' titles) on its
    evidence pages in only 440 of 1,454 (30 %); a REFUTES claim, whose words the page should contradict, in 130 of
    1,508 (9 %)."""
    write_fever_tasks(FeverSource(data_dir=str(SHARED)), tmp_path)
    pages = {normalize_title(r["title"]): " ".join(r["sentences"]) for r in _split(tmp_path, "corpus")}
    assert len(pages) == 346 and max(len(r["sentences"]) for r in _split(tmp_path, "corpus")) == 5

    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}

    every_word: dict[str, list[bool]] = {"SUPPORTS": [], "REFUTES": []}
    for r in (r for s in ("train", "dev", "test") for r in _split(tmp_path, s) if r["answer"] in every_word):
        titles = r["meta"]["supporting_titles"]
        claim = words(r["question"]) - words(" ".join(titles))
        every_word[r["answer"]].append(claim <= words(" ".join(pages.get(normalize_title(t), "") for t in titles)))
    assert {k: (sum(v), len(v)) for k, v in every_word.items()} == {"SUPPORTS": (440, 1454), "REFUTES": (130, 1508)}
