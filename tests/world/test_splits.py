"""The world's splits without shortcuts (issue #48): no training question asks a dev or test question's fact, and
every held-out wording is measured against the nearest trained one. Run on the quickstart presets' own worlds."""

from __future__ import annotations

from collections import Counter

import pytest

from actune.quickstart.config import load_quickstart
from actune.world import WorldConfig, generate_world
from actune.world.phrasings import FAMILIES, NEW_PHRASING_FACT_FREE, NEW_PHRASING_FAR, report_groups, word_edits


def _facts(records: list[dict]) -> set[tuple[str, str]]:
    """(supporting page, answer) pairs, as the issue counted them."""
    return {(title, r["answer"]) for r in records for title in r["meta"]["supporting_titles"]}


def _sharing(gen, split: str) -> int:
    trained = _facts(gen.splits["train"])
    return sum(bool(_facts([r]) & trained) for r in gen.splits[split])


def _full(seed: int, **update):
    return generate_world(load_quickstart("full").world.model_copy(update={"seed": seed, **update}))


@pytest.fixture(scope="module")
def full22():
    return _full(22)


@pytest.mark.parametrize("seed, dev_before, test_before", [(22, 12, 52), (23, 11, 52)])
def test_full_preset_training_never_asks_a_dev_or_test_fact(seed: int, dev_before: int, test_before: int) -> None:
    gen = _full(seed)
    assert {split: len(rs) for split, rs in gen.splits.items()} == {"train": 400, "dev": 100, "test": 300}
    assert gen.manifest["kinds"]["test"] == {"bridge": 120, "comparison": 60, "single": 120}
    assert gen.manifest["phrasing_groups"]["test"] == {"new_phrasing": 120, "new_relation": 30, "seen": 150}
    assert _sharing(gen, "dev") == _sharing(gen, "test") == 0
    assert not any(r["meta"]["fact_in_train"] for split in ("dev", "test") for r in gen.splits[split])
    # version 2's draw (fact_disjoint=false): the same dev and test questions, training asking some of their facts
    before = _full(seed, fact_disjoint=False)
    assert (_sharing(before, "dev"), _sharing(before, "test")) == (dev_before, test_before)
    assert sum(r["meta"]["fact_in_train"] for r in before.splits["test"]) == test_before
    for split in ("dev", "test"):
        assert [(r["id"], r["question"], r["answer"]) for r in before.splits[split]] == [
            (r["id"], r["question"], r["answer"]) for r in gen.splits[split]]
    # training keeps its shape: the same relation in every slot, another subject where one shared a fact
    count = lambda g: Counter(r["meta"]["template"] for r in g.splits["train"])  # noqa: E731
    assert count(gen) == count(before)


@pytest.mark.parametrize("preset", ["smoke", "full", "gpu"])
def test_every_preset_world_is_fact_disjoint_on_ten_seeds(preset: str) -> None:
    world = load_quickstart(preset).world
    for seed in range(10):
        gen = generate_world(world.model_copy(update={"seed": seed}))
        assert [len(gen.splits[s]) for s in ("train", "dev", "test")] == [world.n_train, world.n_dev, world.n_test]
        assert _sharing(gen, "dev") == _sharing(gen, "test") == 0, (preset, seed)


@pytest.mark.parametrize("phrasings", ["templates", "families"])
def test_the_default_world_is_fact_disjoint(phrasings: str) -> None:
    for seed in range(5):
        gen = generate_world(WorldConfig(seed=seed, phrasings=phrasings))
        assert gen.manifest["counts"] == {"pages": 310, "people": 150, "companies": 100, "cities": 60,
                                          "train": 400, "dev": 100, "test": 100}
        assert _sharing(gen, "dev") == _sharing(gen, "test") == 0


def test_a_world_too_small_for_disjoint_facts_says_how_to_fix_it() -> None:
    small = dict(n_people=120, n_companies=80, n_cities=40)  # version 2's default sizes
    with pytest.raises(ValueError, match="too small.*fact_disjoint=false"):
        generate_world(WorldConfig(seed=0, **small))
    assert len(generate_world(WorldConfig(seed=0, fact_disjoint=False, **small)).splits["train"]) == 400


def test_word_edits_count_whole_words() -> None:
    assert word_edits("In which year was {company} founded?", "In which year was {company} established?") == 1
    assert word_edits("What is the home province of {person}?", "What is the birth province of {person}?") == 1
    assert word_edits("When was the {industry} company {company} founded?", "When was {company} founded?") == 3
    assert word_edits("Who founded {company}?", "who founded {company}") == 0


def test_held_out_wordings_carry_their_distance_to_the_nearest_trained_one(full22) -> None:
    trained = {rel: [t for f in FAMILIES[rel] if f.id in groups["seen"] for t in f.texts]
               for rel, groups in full22.manifest["families"].items() if "seen" in groups}
    by_text = {(rel, f.id): f.texts for rel, fams in FAMILIES.items() for f in fams}
    for r in full22.splits["test"]:
        m = r["meta"]
        if m["phrasing"] == "seen":
            assert (m["wording_distance"], m["wording_near"]) == (0, True)
        elif m["phrasing"] == "new_relation":
            assert (m["wording_distance"], m["wording_near"]) == (None, False)
        else:
            # the question's own variant, recovered from its text, against every trained variant of its relation
            variants = [v for v in by_text[m["template"], m["family"]] if _fits(v, r["question"])]
            assert len(variants) == 1, r
            expected = min(word_edits(variants[0], t) for t in trained[m["template"]])
            assert m["wording_distance"] == expected and m["wording_near"] == (expected <= 1), r
    # seed 22's test holds out 18 families; 3 have a wording one word from a trained one
    held = full22.manifest["heldout_distances"]["test"]
    assert sum(len(f) for f in held.values()) == 18
    assert sorted((rel, f) for rel, fams in held.items() for f, d in fams.items() if d <= 1) == [
        ("company_founder", "set_up"), ("people_born_earlier", "later"), ("person_birth_province", "home_province")]
    near = [r for r in full22.splits["test"] if r["meta"]["phrasing"] == "new_phrasing" and r["meta"]["wording_near"]]
    assert len(near) == 9 and not any(r["meta"]["wording_far_half"] for r in near)


def _fits(variant: str, question: str) -> bool:
    """Whether ``question`` is ``variant`` with its fields filled in."""
    import re

    pattern = re.escape(variant)
    for field in ("company", "person", "city", "a", "b"):  # names: capitalised words
        pattern = pattern.replace(re.escape("{" + field + "}"), r"[A-Z][\w']*(?: [A-Z][\w']*)*")
    for field in ("industry", "occupation"):
        pattern = pattern.replace(re.escape("{" + field + "}"), r"[a-z]+")
    return re.fullmatch(pattern, question) is not None


def test_report_groups_split_held_out_questions_by_distance_and_shared_fact(full22) -> None:
    groups = report_groups([r["meta"] for r in full22.splits["test"]])
    assert {g: len(ix) for g, ix in groups.items()} == {"seen": 150, "new_phrasing": 120, NEW_PHRASING_FAR: 65,
                                                       "new_relation": 30}
    far = [full22.splits["test"][i]["meta"]["wording_distance"] for i in groups[NEW_PHRASING_FAR]]
    rest = [full22.splits["test"][i]["meta"]["wording_distance"] for i in set(groups["new_phrasing"]) - set(far)]
    assert min(far) >= 4 and min(rest) == 1
    # where training does share facts (version 2's draw), the held-out questions free of them are a group too
    before = _full(22, fact_disjoint=False)
    groups = report_groups([r["meta"] for r in before.splits["test"]])
    assert len(groups[NEW_PHRASING_FACT_FREE]) == 100
    assert report_groups([{"kind": "single"}, {"phrasing": "new_phrasing", "wording_far_half": True,
                                               "fact_in_train": True}, {"phrasing": "seen"}]) == {
        "seen": [2], "new_phrasing": [1], NEW_PHRASING_FAR: [1], NEW_PHRASING_FACT_FREE: []}
