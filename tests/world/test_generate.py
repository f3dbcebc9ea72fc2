from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from actune.config import ConfigError
from actune.world import WorldConfig, generate_world, write_world
from actune.world.common_words import COMMON_WORDS
from actune.world.entities import SEARCH_SENTENCES
from actune.world.names import RESERVED_TOKENS, NameGenerator, is_acceptable_token

SMALL = dict(n_people=30, n_companies=20, n_cities=12, n_provinces=4, n_train=60, n_dev=20, n_test=20)


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world")
    write_world(WorldConfig(seed=7, **SMALL), out)
    return out


def test_writes_exactly_the_requested_sizes(world_dir: Path) -> None:
    assert sorted(p.name for p in world_dir.iterdir()) == [
        "corpus.jsonl", "dev.jsonl", "test.jsonl", "train.jsonl", "world.json"]
    corpus = _read_jsonl(world_dir / "corpus.jsonl")
    assert len(corpus) == 30 + 20 + 12
    assert all(set(page) == {"title", "sentences"} for page in corpus)
    assert len({page["title"] for page in corpus}) == len(corpus)
    for split, n in (("train", 60), ("dev", 20), ("test", 20)):
        records = _read_jsonl(world_dir / f"{split}.jsonl")
        assert len(records) == n
        assert all(set(r) == {"id", "question", "answer", "aliases", "meta"} for r in records)
    manifest = json.loads((world_dir / "world.json").read_text())
    assert manifest["seed"] == 7 and manifest["version"] == "3"
    assert manifest["counts"] == {"pages": 62, "people": 30, "companies": 20, "cities": 12,
                                  "train": 60, "dev": 20, "test": 20}
    # 40/40/20 mix: 60 -> 24/24/12, 20 -> 8/8/4
    assert manifest["kinds"]["train"] == {"bridge": 24, "comparison": 12, "single": 24}
    assert manifest["kinds"]["dev"] == {"bridge": 8, "comparison": 4, "single": 8}


def test_same_seed_same_bytes_and_different_seeds_differ(tmp_path: Path, world_dir: Path) -> None:
    write_world(WorldConfig(seed=7, **SMALL), tmp_path / "again")
    assert _digest(tmp_path / "again") == _digest(world_dir)
    write_world(WorldConfig(seed=8, **SMALL), tmp_path / "other")
    other = _digest(tmp_path / "other")
    assert all(other[name] != digest for name, digest in _digest(world_dir).items())


def test_every_answer_is_in_its_supporting_pages(world_dir: Path) -> None:
    pages = {p["title"]: p["sentences"] for p in _read_jsonl(world_dir / "corpus.jsonl")}
    for split in ("train", "dev", "test"):
        for r in _read_jsonl(world_dir / f"{split}.jsonl"):
            support = r["meta"]["supporting_titles"]
            assert all(t in pages for t in support), r
            # the answer never appears in the question, except as one side of a comparison
            if r["meta"]["kind"] != "comparison":
                assert r["answer"] not in r["question"]
                text = " ".join(pages[support[-1]])
                assert re.search(rf"\b{re.escape(r['answer'])}\b", text), r
            else:
                assert r["answer"] in support and r["answer"] in r["question"]
            if r["meta"]["kind"] == "bridge":
                # the first page names the second (the bridge entity)
                assert support[1] in " ".join(pages[support[0]]), r
                assert r["answer"] not in " ".join(pages[support[0]]), r


def test_comparison_answers_follow_the_years_and_are_balanced(world_dir: Path) -> None:
    pages = {p["title"]: " ".join(p["sentences"]) for p in _read_jsonl(world_dir / "corpus.jsonl")}
    positions = Counter()
    for split in ("train", "dev", "test"):
        for r in _read_jsonl(world_dir / f"{split}.jsonl"):
            if r["meta"]["kind"] != "comparison":
                continue
            a, b = r["meta"]["supporting_titles"]
            year = {t: int(re.search(r"(?:founded|born)[^.]*?\b(\d{3,4})\b", pages[t]).group(1)) for t in (a, b)}
            assert r["answer"] == min((a, b), key=year.get)
            assert r["meta"]["answer_position"] == ("first" if r["answer"] == a else "second")
            positions[split, r["meta"]["answer_position"]] += 1
    assert positions["train", "first"] == positions["train", "second"] == 6
    assert positions["dev", "first"] == positions["dev", "second"] == 2


def test_heldout_templates_only_in_dev_and_test_and_questions_unique(world_dir: Path) -> None:
    splits = {s: _read_jsonl(world_dir / f"{s}.jsonl") for s in ("train", "dev", "test")}
    assert not any(r["meta"]["heldout_template"] for r in splits["train"])
    held_dev = [r for r in splits["dev"] if r["meta"]["heldout_template"]]
    # a third of each kind, rounded: 8 -> 3, 8 -> 3, 4 -> 1
    assert len(held_dev) == 7
    train_templates = {r["meta"]["template"] for r in splits["train"]}
    assert not train_templates & {r["meta"]["template"] for r in held_dev}
    questions = [r["question"] for rs in splits.values() for r in rs]
    assert len(questions) == len(set(questions))
    ids = [r["id"] for rs in splits.values() for r in rs]
    assert ids[0] == "world7-train-0000" and len(set(ids)) == len(ids)


def test_key_facts_are_early_unless_marked_for_lookup() -> None:
    gen = generate_world(WorldConfig(seed=1, **SMALL))
    late = sum(r["meta"]["lookup_needed"] for records in gen.splits.values() for r in records)
    assert 0 < late < sum(len(rs) for rs in gen.splits.values()) / 2
    # with late facts turned off, every fact is within the first five sentences
    gen0 = generate_world(WorldConfig(seed=1, late_fact_prob=0.0, **SMALL))
    assert all(i < SEARCH_SENTENCES for p in gen0.world.pages.values() for i in p.fact_index.values())
    assert not any(r["meta"]["lookup_needed"] for rs in gen0.splits.values() for r in rs)
    gen1 = generate_world(WorldConfig(seed=1, late_fact_prob=1.0, **SMALL))
    # every page then has exactly one key fact after the fifth sentence (never the intro)
    for page in gen1.world.pages.values():
        assert sorted(i >= SEARCH_SENTENCES for i in page.fact_index.values()).count(True) == 1, page
        assert page.fact_index["intro"] == 0
    # a company page has one key fact besides its intro: its founding year is always late
    years = [r for r in gen1.splits["train"] if r["meta"]["template"] == "company_founded_year"]
    assert years and all(r["meta"]["lookup_needed"] for r in years)


def test_names_are_invented_unique_and_never_reserved(world_dir: Path) -> None:
    corpus = _read_jsonl(world_dir / "corpus.jsonl")
    tokens = [tok for p in corpus for tok in p["title"].split()]
    industry_words = {"Lines", "Systems", "Textiles", "Foods", "Works", "Chemicals", "Furnishings", "Breweries",
                      "Laboratories", "Mining", "Press", "Glassworks"}
    invented = [t for t in tokens if t not in industry_words]
    assert len(invented) == len(set(invented))  # no two entities share a name word
    for t in invented:
        assert t.lower() not in COMMON_WORDS and t.lower() not in RESERVED_TOKENS and len(t) >= 4, t
    assert not is_acceptable_token("Tomato") and not is_acceptable_token("Brimvale")
    assert is_acceptable_token("Kelmora")


def test_exemplar_entities_never_appear_in_a_generated_world() -> None:
    prompts = Path(__file__).resolve().parents[2] / "actune" / "prompts" / "world.json"
    data = json.loads(prompts.read_text())
    exemplar_text = json.dumps(data)
    for seed in range(3):
        gen = generate_world(WorldConfig(seed=seed))
        for page in gen.corpus:
            for tok in page["title"].split():
                if tok[0].isupper() and len(tok) >= 4 and tok.lower() in RESERVED_TOKENS:
                    pytest.fail(f"reserved token {tok} generated")
        titles = {p["title"] for p in gen.corpus}
        assert not any(t in exemplar_text for t in titles if " " in t)


def test_name_generator_draws_new_tokens() -> None:
    gen = NameGenerator(random.Random(0))
    drawn = [gen.token() for _ in range(500)]
    assert len({d.lower() for d in drawn}) == 500
    assert all(is_acceptable_token(d) for d in drawn)


def test_a_world_too_large_for_its_names_is_a_config_error_not_a_traceback(monkeypatch) -> None:
    import actune.world.names as names

    monkeypatch.setattr(names, "is_acceptable_token", lambda word: False)  # no draw left: what n_people=10**8 meets
    with pytest.raises(ConfigError, match="the world is too large for its invented names"):
        NameGenerator(random.Random(0)).token()


def test_too_small_world_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="too small"):
        generate_world(WorldConfig(n_people=3, n_companies=2, n_cities=2, n_train=50, n_dev=0, n_test=0))
    with pytest.raises(ValueError, match="at least n_companies"):
        WorldConfig(n_people=3, n_companies=5)


def test_config_file_mirrors_the_defaults() -> None:
    from actune.config import load_config

    path = Path(__file__).resolve().parents[2] / "configs" / "world.yaml"
    assert load_config(WorldConfig, path) == WorldConfig()
    assert set(yaml.safe_load(path.read_text())) == set(WorldConfig.model_fields)  # every field, as it says
    with pytest.raises(ConfigError, match="n_peple: unknown key"):
        load_config(WorldConfig, path, ["n_peple=3"])


def test_bytes_do_not_depend_on_hash_randomisation(tmp_path: Path, world_dir: Path) -> None:
    import os
    import subprocess
    import sys

    code = ("import sys; from actune.world import WorldConfig, write_world; "
            f"write_world(WorldConfig(seed=7, **{SMALL!r}), sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "h")], check=True,
                   env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert _digest(tmp_path / "h") == _digest(world_dir)


def test_default_world_dir_generates_once_and_reuses(tmp_path: Path) -> None:
    from actune.world import default_world_dir

    cfg = WorldConfig(seed=2, **SMALL)
    folder = default_world_dir(cfg, root=tmp_path)
    assert folder.parent == tmp_path and folder.name.startswith("v3-seed2-")
    stamp = (folder / "world.json").stat().st_mtime_ns
    assert default_world_dir(cfg, root=tmp_path) == folder
    assert (folder / "world.json").stat().st_mtime_ns == stamp
    assert default_world_dir(WorldConfig(seed=3, **SMALL), root=tmp_path) != folder


def test_every_question_names_the_sentences_that_state_its_facts(world_dir: Path) -> None:
    pages = {p["title"]: p["sentences"] for p in _read_jsonl(world_dir / "corpus.jsonl")}
    for split in ("train", "dev", "test"):
        for r in _read_jsonl(world_dir / f"{split}.jsonl"):
            (evidence,) = r["meta"]["evidence"]
            assert 1 <= len(evidence) <= len(r["meta"]["supporting_titles"])
            # each on a supporting page; a late fact sits past the five sentences a search shows
            at = [next(i for t in r["meta"]["supporting_titles"] for i, s in enumerate(pages[t]) if s == e)
                  for e in evidence]
            assert r["meta"]["lookup_needed"] == any(i >= 5 for i in at)


def test_pages_read_as_plain_english(world_dir: Path) -> None:
    text = " ".join(s for p in _read_jsonl(world_dir / "corpus.jsonl") for s in p["sentences"])
    assert not re.search(r"\ba [aeiou]", text)  # "an engineer", never "a engineer"
    for page in _read_jsonl(world_dir / "corpus.jsonl"):
        assert page["sentences"][0].startswith(page["title"] + " ")
        assert all(s.endswith(".") for s in page["sentences"])
        assert 5 <= len(page["sentences"]) <= 8


FAMILIES_SMALL = dict(SMALL, n_people=60, n_companies=40, n_cities=20, n_dev=40, n_test=40, phrasings="families")


@pytest.fixture(scope="module")
def families_world():
    return generate_world(WorldConfig(seed=7, **FAMILIES_SMALL))


def test_a_templates_world_is_unchanged_by_families() -> None:
    # the families mode draws nothing in a templates world: seed 7's questions as they were before it existed
    # (version 2's default sizes, its training questions free to share dev and test questions' facts)
    gen = generate_world(WorldConfig(seed=7, n_people=120, n_companies=80, n_cities=40, fact_disjoint=False))
    # (each question's evidence sentences came later, beside the questions: left out of the comparison)
    splits = {k: [{**r, "meta": {m: v for m, v in r["meta"].items() if m != "evidence"}} for r in rs]
              for k, rs in gen.splits.items()}
    digest = hashlib.sha256(json.dumps(splits).encode()).hexdigest()
    assert digest == "c3969d03a890c5939b521342efb244c60ad7f0801d8f2c7aec10a03ee117cb9e"
    assert not any("phrasing" in r["meta"] for rs in gen.splits.values() for r in rs)


def test_families_world_groups_have_the_configured_sizes(families_world) -> None:
    counts = {split: Counter((r["meta"]["kind"], r["meta"]["phrasing"]) for r in rs)
              for split, rs in families_world.splits.items()}
    assert counts["train"] == {("single", "seen"): 24, ("bridge", "seen"): 24, ("comparison", "seen"): 12}
    # 40 -> 16/16/8 per kind; new relations 10% (2, 2, 1), new phrasings 40% (6, 6, 3), the rest seen
    assert counts["test"] == {("single", "new_relation"): 2, ("single", "new_phrasing"): 6, ("single", "seen"): 8,
                              ("bridge", "new_relation"): 2, ("bridge", "new_phrasing"): 6, ("bridge", "seen"): 8,
                              ("comparison", "new_relation"): 1, ("comparison", "new_phrasing"): 3,
                              ("comparison", "seen"): 4}
    assert counts["dev"] == counts["test"]


def test_held_out_families_never_reach_training_and_dev_and_test_hold_out_different_ones(families_world) -> None:
    used = {split: {(r["meta"]["template"], r["meta"]["family"]) for r in rs if r["meta"]["phrasing"] == group}
            for split, rs in families_world.splits.items()
            for group in (("seen",) if split == "train" else ("new_phrasing",))}
    trained_relations = {rel for rel, _ in used["train"]}
    assert not used["train"] & used["dev"] and not used["train"] & used["test"] and not used["dev"] & used["test"]
    # a new phrasing rewords a trained relation; a new relation is one training never asks
    assert {rel for rel, _ in used["test"]} <= trained_relations
    new_rel = {r["meta"]["template"] for rs in families_world.splits.values() for r in rs
               if r["meta"]["phrasing"] == "new_relation"}
    assert new_rel == {"city_river", "cities_founded_earlier", "person_birth_river"}
    assert not new_rel & trained_relations
    # and no wording of a held-out family is a training question's wording
    train_questions = {r["question"] for r in families_world.splits["train"]}
    assert not train_questions & {r["question"] for r in families_world.splits["test"]}


def test_assign_families_holds_out_one_for_dev_and_two_for_test_and_trains_the_canonical() -> None:
    from actune.world.phrasings import FAMILIES, assign_families

    got = assign_families(["company_founder"], random.Random(3))["company_founder"]
    assert got["train"][0] == "canonical" and len(got["train"]) == 4
    assert len(got["dev"]) == 1 and len(got["test"]) == 2
    assert sorted(got["train"] + got["dev"] + got["test"]) == sorted(f.id for f in FAMILIES["company_founder"])
    assert got == assign_families(["company_founder"], random.Random(3))["company_founder"]


def test_family_answers_follow_the_form(families_world) -> None:
    pages = {p["title"]: " ".join(p["sentences"]) for p in families_world.corpus}
    forms = Counter()
    for rs in families_world.splits.values():
        for r in rs:
            if r["meta"]["kind"] != "comparison":
                assert r["answer"] not in r["question"]
                assert re.search(rf"\b{re.escape(r['answer'])}\b", pages[r["meta"]["supporting_titles"][-1]]), r
                continue
            a, b = r["meta"]["supporting_titles"]
            year = {t: int(re.search(r"(?:founded|born)[^.]*?\b(\d{3,4})\b", pages[t]).group(1)) for t in (a, b)}
            earlier, later = sorted((a, b), key=year.get)
            q = r["question"]
            if r["answer"] in ("yes", "no"):
                asks_earlier = " before " in q or " earlier than " in q
                assert r["answer"] == ("yes" if (a == earlier) == asks_earlier else "no"), r
                assert "answer_position" not in r["meta"]
                forms["yes/no"] += 1
            elif any(w in q for w in ("later", "younger", "more recently")):
                assert r["answer"] == later, r
                forms["later"] += 1
            else:
                assert r["answer"] == earlier, r
                forms["earlier"] += 1
    assert forms["yes/no"] and forms["later"] and forms["earlier"]


def test_phrasing_group_of_old_and_new_worlds() -> None:
    from actune.world.phrasings import phrasing_group

    assert phrasing_group({"phrasing": "new_relation", "heldout_template": True}) == "new_relation"
    assert phrasing_group({"template": "founder_birthplace", "heldout_template": True}) == "new_phrasing"
    assert phrasing_group({"template": "city_river", "heldout_template": True}) == "new_relation"
    assert phrasing_group({"template": "company_founder", "heldout_template": False}) == "seen"
    assert phrasing_group({"kind": "single"}) is None


def test_families_manifest_names_the_groups_and_families(families_world) -> None:
    m = families_world.manifest
    assert m["phrasing_groups"]["train"] == {"seen": 60}
    assert m["phrasing_groups"]["test"] == {"new_phrasing": 15, "new_relation": 5, "seen": 20}
    held = m["families"]["company_founder"]
    assert "canonical" in held["seen"] and not set(held["seen"]) & set(held["new_phrasing"])
    assert set(m["families"]["city_river"]) == {"new_relation"}


def _plain(text: str) -> str:
    """A wording with what/which, a leading "In", descriptors and punctuation evened out."""
    text = text.replace("the {industry} company {company}", "{company}").replace("the {occupation} {person}",
                                                                                 "{person}")
    words = [w for w in re.sub(r"[?.]", "", text.lower()).split() if w != "in"]
    return " ".join("which" if w == "what" else w for w in words)


def test_no_wording_of_one_family_is_a_near_copy_of_another() -> None:
    # a held-out family that only swaps which/what or drops "In" would test the trained string, not the relation
    from actune.world.phrasings import FAMILIES

    for relation, families in FAMILIES.items():
        owner: dict[str, str] = {}
        for family in families:
            for text in family.texts:
                key = _plain(text)
                assert owner.setdefault(key, family.id) == family.id, (relation, text, owner[key])


def test_a_bad_share_of_held_out_questions_is_a_config_error() -> None:
    with pytest.raises(ValueError, match=r"new_phrasing_share \(0.8\) \+ new_relation_share \(0.3\) must be at most 1"):
        WorldConfig(phrasings="families", new_phrasing_share=0.8, new_relation_share=0.3)


def test_a_families_manifest_lists_the_relations(families_world) -> None:
    ids = [t["id"] for t in families_world.manifest["templates"]]
    assert "person_birth_river" in ids and "founder_birthplace" not in ids


def test_a_world_is_written_whole_and_never_over_what_is_not_a_world(tmp_path: Path, monkeypatch) -> None:
    import actune.world.generate as gen_module
    from actune.world.generate import WorldFolderError

    small = WorldConfig(seed=3, **SMALL)
    out = tmp_path / "w"
    write_world(small, out)
    before = _digest(out)
    # the swap fails (a kill, a full disk) after every new file was written: the old world stays whole
    def boom(new, dest):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(gen_module, "replace_folder", boom)
    with pytest.raises(OSError):
        write_world(WorldConfig(seed=4, **SMALL), out)
    monkeypatch.undo()
    assert _digest(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["w"]  # no temporary folder, no lock left behind
    # a dead run's temporary folder is removed by the next write; a user's hidden folder named like it is not
    from actune.records.atomic_write import temp_folder_beside

    (temp_folder_beside(out) / "corpus.jsonl").write_text("half")
    (tmp_path / ".w.backup-2024").mkdir()
    (tmp_path / ".w.backup-2024" / "corpus.jsonl").write_text("mine")
    write_world(WorldConfig(seed=4, **SMALL), out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".w.backup-2024", "w"] and _digest(out) != before
    assert (tmp_path / ".w.backup-2024" / "corpus.jsonl").read_text() == "mine"
    # a folder holding a user's file is refused, the file untouched
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(WorldFolderError, match="not a world folder"):
        write_world(small, mine)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep me"
