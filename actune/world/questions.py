"""Question templates of graded difficulty and the sampling of train/dev/test splits.

Kinds: ``single`` (one page answers), ``bridge`` (the first page names the second, which answers),
``comparison`` (two pages, compare a year). Each kind has templates seen in training and one
held-out template that appears only in dev and test (``meta.heldout_template``), a test of whether
tuning taught a skill or a phrasing. A ``families`` world (``WorldConfig.phrasings``) words each
relation in several families instead and holds whole families out (:mod:`actune.world.phrasings`).
No question is asked twice in a world, and comparison answers are balanced between the first and the
second entity so that position gives nothing away. No training question shares a fact (a supporting page and
the answer: :func:`fact_pairs`) with a dev or test question (``WorldConfig.fact_disjoint``).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable

from actune.world.config import WorldConfig
from actune.world.entities import SEARCH_SENTENCES, World
from actune.world.phrasings import (
    FAMILIES,
    NEW_PHRASING,
    NEW_RELATION,
    SEEN,
    Family,
    Wording,
    assign_families,
    heldout_wordings,
)

__all__ = ["Template", "TEMPLATES", "RELATIONS", "KINDS", "Question", "family_assignment", "fact_pairs",
           "sample_splits"]

KINDS = ("single", "bridge", "comparison")


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    aliases: list[str]
    supporting_titles: list[str]
    #: (page title, fact name) pairs the answer rests on; used to tell whether lookup is needed
    facts: list[tuple[str, str]]


@dataclass(frozen=True)
class Template:
    id: str
    kind: str
    text: str
    heldout: bool
    #: every possible subject (a title, or a pair of titles for comparisons), in a fixed order
    candidates: Callable[[World], list[Any]]
    #: the question about one candidate; comparisons get the pair already in asking order
    realise: Callable[[World, Any], Question]
    #: templates asking the same fact share a pool, so no subject is asked about twice in other words
    pool: str = ""

    @property
    def pool_key(self) -> str:
        return self.pool or self.id


def _aliases(world: World, title: str) -> list[str]:
    """The other names an answer may be given by: a company's name without its trade word, a person's family
    name; a city has none."""
    if title in world.companies:
        return [world.companies[title].short]
    return [world.people[title].family] if title in world.people else []


def _single_company_year(w: World, c: str) -> Question:
    co = w.companies[c]
    return Question(f"In which year was {c} founded?", str(co.founded), [], [c], [(c, "founded")])


def _single_company_founder(w: World, c: str) -> Question:
    co = w.companies[c]
    return Question(f"Who founded {c}?", co.founder, _aliases(w, co.founder), [c], [(c, "founded")])


def _single_person_city(w: World, p: str) -> Question:
    return Question(f"In which city was {p} born?", w.people[p].birth_city, [], [p], [(p, "birth_city")])


def _single_person_year(w: World, p: str) -> Question:
    return Question(f"In which year was {p} born?", str(w.people[p].born), [], [p], [(p, "intro")])


def _single_city_river(w: World, c: str) -> Question:
    return Question(f"On which river does {c} lie?", w.cities[c].river, [], [c], [(c, "river")])


def _bridge_founder_city(w: World, c: str) -> Question:
    f = w.companies[c].founder
    return Question(f"In which city was the founder of {c} born?", w.people[f].birth_city, [], [c, f],
                    [(c, "founded"), (f, "birth_city")])


def _bridge_founder_year(w: World, c: str) -> Question:
    f = w.companies[c].founder
    return Question(f"In which year was the founder of {c} born?", str(w.people[f].born), [], [c, f],
                    [(c, "founded"), (f, "intro")])


def _bridge_person_province(w: World, p: str) -> Question:
    city = w.people[p].birth_city
    return Question(f"In which province was {p} born?", w.cities[city].province, [], [p, city],
                    [(p, "birth_city"), (city, "intro")])


def _bridge_founder_birthplace(w: World, c: str) -> Question:
    # founder_birth_city in other words: does tuning teach the skill or the phrasing?
    f = w.companies[c].founder
    return Question(f"What is the birthplace of the founder of {c}?", w.people[f].birth_city, [], [c, f],
                    [(c, "founded"), (f, "birth_city")])


def _bridge_person_river(w: World, p: str) -> Question:
    city = w.people[p].birth_city
    return Question(f"On which river lies the city where {p} was born?", w.cities[city].river, [], [p, city],
                    [(p, "birth_city"), (city, "river")])


def _pairs(titles: list[str], value: Callable[[str], int]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in itertools.combinations(titles, 2) if value(a) != value(b)]


def _compare(text: str, fact: str, value: Callable[[World, str], int]):
    def realise(w: World, pair: tuple[str, str]) -> Question:
        a, b = pair
        winner = a if value(w, a) < value(w, b) else b
        return Question(text.format(a=a, b=b), winner, _aliases(w, winner), [a, b], [(a, fact), (b, fact)])
    return realise


TEMPLATES: tuple[Template, ...] = (
    Template("company_founded_year", "single", "In which year was {company} founded?", False,
             lambda w: list(w.companies), _single_company_year),
    Template("company_founder", "single", "Who founded {company}?", False,
             lambda w: list(w.companies), _single_company_founder),
    Template("person_birth_city", "single", "In which city was {person} born?", False,
             lambda w: list(w.people), _single_person_city),
    Template("person_birth_year", "single", "In which year was {person} born?", False,
             lambda w: list(w.people), _single_person_year),
    Template("city_river", "single", "On which river does {city} lie?", True,
             lambda w: list(w.cities), _single_city_river),
    Template("founder_birth_city", "bridge", "In which city was the founder of {company} born?", False,
             lambda w: list(w.companies), _bridge_founder_city),
    Template("founder_birth_year", "bridge", "In which year was the founder of {company} born?", False,
             lambda w: list(w.companies), _bridge_founder_year),
    Template("person_birth_province", "bridge", "In which province was {person} born?", False,
             lambda w: list(w.people), _bridge_person_province),
    Template("founder_birthplace", "bridge", "What is the birthplace of the founder of {company}?", True,
             lambda w: list(w.companies), _bridge_founder_birthplace, pool="founder_birth_city"),
    Template("companies_founded_earlier", "comparison", "Which was founded earlier, {a} or {b}?", False,
             lambda w: _pairs(list(w.companies), lambda t: w.companies[t].founded),
             _compare("Which was founded earlier, {a} or {b}?", "founded",
                      lambda w, t: w.companies[t].founded)),
    Template("people_born_earlier", "comparison", "Who was born earlier, {a} or {b}?", False,
             lambda w: _pairs(list(w.people), lambda t: w.people[t].born),
             _compare("Who was born earlier, {a} or {b}?", "intro",
                      lambda w, t: w.people[t].born)),
    Template("cities_founded_earlier", "comparison", "Which city was founded earlier, {a} or {b}?", True,
             lambda w: _pairs(list(w.cities), lambda t: w.cities[t].founded),
             _compare("Which city was founded earlier, {a} or {b}?", "founded",
                      lambda w, t: w.cities[t].founded)),
)


#: Relations of a ``families`` world: the trained templates' relations (founder_birthplace is a family of
#: founder_birth_city there) and, never trained, a city's river, cities' founding and a birth city's river.
RELATIONS: tuple[Template, ...] = (
    *(t for t in TEMPLATES if t.id != "founder_birthplace"),
    Template("person_birth_river", "bridge", "On which river lies the city where {person} was born?", True,
             lambda w: list(w.people), _bridge_person_river),
)


def _kind_counts(n: int, cfg: WorldConfig) -> dict[str, int]:
    single = round(n * cfg.mix.single)
    comparison = min(n - single, round(n * cfg.mix.comparison))
    return {"single": single, "bridge": n - single - comparison, "comparison": comparison}


class _Pools:
    """Shuffled candidates per template, drawn without replacement across all splits."""

    def __init__(self, world: World, rng: random.Random) -> None:
        self.world, self.rng = world, rng
        self._pools: dict[str, list[Any]] = {}

    def remaining(self, t: Template) -> int:
        return len(self._pool(t))

    def _pool(self, t: Template) -> list[Any]:
        if t.pool_key not in self._pools:
            items = t.candidates(self.world)
            self.rng.shuffle(items)
            self._pools[t.pool_key] = items
        return self._pools[t.pool_key]

    def draw(self, t: Template) -> Any:
        pool = self._pool(t)
        if not pool:
            raise ValueError(f"the world is too small: template {t.id!r} has no unused subject left; "
                             "raise n_people/n_companies/n_cities, ask fewer questions or, to let training ask dev "
                             "and test questions' facts, set fact_disjoint=false")
        return pool.pop()


def _fields(world: World, subject: Any) -> dict[str, str]:
    """The names a family's wording may use for ``subject`` (a title, or a pair for comparisons)."""
    if isinstance(subject, tuple):
        return {"a": subject[0], "b": subject[1]}
    if subject in world.companies:
        return {"company": subject, "industry": world.companies[subject].industry}
    if subject in world.people:
        return {"person": subject, "occupation": world.people[subject].occupation}
    return {"city": subject}


def _reword(world: World, q: Question, family: Family, variant: str, subject: Any) -> Question:
    """``q`` (asked in its template's words) in ``family``'s ``variant``; a comparison's answer follows the form."""
    text = variant.format(**_fields(world, subject))
    if not isinstance(subject, tuple) or family.form == "earlier":
        return Question(text, q.answer, q.aliases, q.supporting_titles, q.facts)
    a, b = subject
    if family.form == "later":
        later = b if q.answer == a else a
        return Question(text, later, _aliases(world, later), q.supporting_titles, q.facts)
    yes = (q.answer == a) == (family.form == "yes_earlier")
    return Question(text, "yes" if yes else "no", [], q.supporting_titles, q.facts)


#: (template, family, phrasing group): a template of None is a trained one picked when drawn, among those with
#: subjects left; a group of None marks a templates-mode world.
_Slot = tuple["Template | None", "Family | None", "str | None"]


def _plan(kind: str, count: int, split: str, cfg: WorldConfig, rng: random.Random, families: bool) -> list[_Slot]:
    """What each of ``count`` questions of ``kind`` asks: held-out relations (or templates) first."""
    pool = RELATIONS if families else TEMPLATES
    heldout = [t for t in pool if t.kind == kind and t.heldout]
    if not families:
        n_held = round(count / 3) if split != "train" and heldout else 0
        held: list[_Slot] = [(heldout[i % len(heldout)], None, None) for i in range(n_held)]
        return held + [(None, None, None)] * (count - n_held)
    n_rel = round(count * cfg.new_relation_share) if split != "train" and heldout else 0
    n_phr = round(count * cfg.new_phrasing_share) if split != "train" else 0
    n_phr = min(n_phr, count - n_rel)
    plan: list[_Slot] = []
    for i in range(n_rel):
        t = heldout[i % len(heldout)]
        plan.append((t, rng.choice(FAMILIES[t.id]), NEW_RELATION))
    return plan + [(None, None, NEW_PHRASING)] * n_phr + [(None, None, SEEN)] * (count - n_rel - n_phr)


def _pick(kind: str, slot: _Slot, split: str, pools: _Pools, rng: random.Random,
          families: dict[str, dict[str, list[str]]] | None) -> tuple[Template, Family | None]:
    t, family, group = slot
    if t is not None:
        return t, family
    trained = [t for t in (TEMPLATES if families is None else RELATIONS) if t.kind == kind and not t.heldout]
    t = rng.choice([t for t in trained if pools.remaining(t)] or trained)
    if families is None:
        return t, None
    ids = families[t.id][split if group == NEW_PHRASING else "train"]
    fid = rng.choice(ids)
    return t, next(f for f in FAMILIES[t.id] if f.id == fid)


def fact_pairs(question: str | list[str], answer: str) -> set[tuple[str, str]]:
    """The facts a question asks, as (supporting page, answer) pairs: ``fact_pairs(meta["supporting_titles"],
    answer)``. A training question sharing one with a test question asked that test question's fact (a person's
    birth city, asked again as the founder's birth city of that person's company)."""
    return {(title, answer) for title in question}


def _ask(world: World, t: Template, family: Family | None, variant: str | None, subject: Any,
         first: bool | None) -> Question:
    """``t``'s question about ``subject`` in ``family``'s ``variant``; a comparison's pair is ordered so that the
    first-named entity is the earlier one exactly when ``first``."""
    if first is not None:
        a, b = subject
        if (t.realise(world, (a, b)).answer == a) != first:
            subject = (b, a)
    q = t.realise(world, subject)
    return q if family is None else _reword(world, q, family, variant or "", subject)


def _wording_meta(split: str, group: str | None, t: Template, variant: str | None,
                  wordings: dict[str, dict[tuple[str, str], Wording]]) -> dict[str, Any]:
    """A families world question's distance to the nearest trained wording of its relation (0 for a trained
    wording, None for a relation training never asks) and whether that is near; a held-out wording's half."""
    if group == SEEN:
        return {"wording_distance": 0, "wording_near": True}
    if group == NEW_RELATION:
        return {"wording_distance": None, "wording_near": False}
    w = wordings[split][t.id, variant or ""]
    return {"wording_distance": w.distance, "wording_near": w.near, "wording_far_half": w.far_half}


def _split_questions(split: str, n: int, cfg: WorldConfig, world: World, pools: _Pools, rng: random.Random,
                     families: dict[str, dict[str, list[str]]] | None, held_facts: set[tuple[str, str]]) -> list[dict]:
    """``split``'s questions. A dev or test question adds its facts to ``held_facts``; a training subject whose
    question would ask one of them is skipped (``cfg.fact_disjoint``)."""
    wordings = heldout_wordings(families) if families is not None else {}
    avoid = held_facts if split == "train" and cfg.fact_disjoint else set()
    records = []
    for kind, count in _kind_counts(n, cfg).items():
        plan = _plan(kind, count, split, cfg, rng, families is not None)
        # Half the comparisons (rounded up) have the first-named entity as the earlier one.
        first_flags = [i % 2 == 0 for i in range(count)] if kind == "comparison" else []
        rng.shuffle(first_flags)
        for i, slot in enumerate(plan):
            first = first_flags[i] if kind == "comparison" else None
            while True:  # a template whose subjects left all ask a held-out fact gives way to another
                t, family = _pick(kind, slot, split, pools, rng, families)
                subject = pools.draw(t)
                variant = rng.choice(family.texts) if family is not None else None
                q = _ask(world, t, family, variant, subject, first)
                while fact_pairs(q.supporting_titles, q.answer) & avoid and pools.remaining(t):
                    q = _ask(world, t, family, variant, pools.draw(t), first)
                if not fact_pairs(q.supporting_titles, q.answer) & avoid:
                    break
            if split != "train":
                held_facts |= fact_pairs(q.supporting_titles, q.answer)
            late = any(world.pages[title].fact_index[fact] >= SEARCH_SENTENCES for title, fact in q.facts)
            group = slot[2]
            meta: dict[str, Any] = {"kind": kind, "supporting_titles": q.supporting_titles, "template": t.id,
                                    "heldout_template": t.heldout if group is None else group != SEEN,
                                    "lookup_needed": late,
                                    # the sentences that state the facts: what evidence-level grounding checks
                                    "evidence": [[world.pages[title].sentences[world.pages[title].fact_index[fact]]
                                                  for title, fact in q.facts]]}
            if family is not None:
                meta.update(phrasing=group, family=family.id, **_wording_meta(split, group, t, variant, wordings))
            # a yes/no comparison has no answer position
            if kind == "comparison" and q.answer in q.supporting_titles:
                meta["answer_position"] = "first" if q.answer == q.supporting_titles[0] else "second"
            records.append({"question": q.question, "answer": q.answer, "aliases": q.aliases, "meta": meta})
    rng.shuffle(records)
    return [{"id": f"world{cfg.seed}-{split}-{i:04d}", **r} for i, r in enumerate(records)]


def family_assignment(cfg: WorldConfig, rng: random.Random) -> dict[str, dict[str, list[str]]] | None:
    """A ``families`` world's held-out families (:func:`assign_families`) of its trained relations; None for
    a ``templates`` world, which draws nothing here (its bytes stay as they were)."""
    if cfg.phrasings != "families":
        return None
    return assign_families([t.id for t in RELATIONS if not t.heldout], rng)


def sample_splits(cfg: WorldConfig, world: World, rng: random.Random) -> dict[str, list[dict]]:
    """Task records per split (``train``, ``dev``, ``test``), each question unique in the world."""
    pools = _Pools(world, rng)
    families = family_assignment(cfg, rng)
    held_facts: set[tuple[str, str]] = set()
    # Test and dev first: their held-out questions must be drawn, while train can move to another
    # template when one runs out of subjects, and skips a subject whose fact dev or test asks.
    out = {split: _split_questions(split, n, cfg, world, pools, rng, families, held_facts)
           for split, n in (("test", cfg.n_test), ("dev", cfg.n_dev), ("train", cfg.n_train))}
    if families is not None:  # a families world's dev and test questions say whether training asks their fact
        trained = {f for r in out["train"] for f in fact_pairs(r["meta"]["supporting_titles"], r["answer"])}
        for r in out["dev"] + out["test"]:
            r["meta"]["fact_in_train"] = bool(fact_pairs(r["meta"]["supporting_titles"], r["answer"]) & trained)
    return {split: out[split] for split in ("train", "dev", "test")}
