"""Question templates of graded difficulty and the sampling of train/dev/test splits.

Kinds: ``single`` (one page answers), ``bridge`` (the first page names the second, which answers),
``comparison`` (two pages, compare a year). Each kind has templates seen in training and one
held-out template that appears only in dev and test (``meta.heldout_template``), a test of whether
tuning taught a skill or a phrasing. No question is asked twice in a world, and comparison answers
are balanced between the first and the second entity so that position gives nothing away.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any, Callable

from actune.world.config import WorldConfig
from actune.world.entities import SEARCH_SENTENCES, World

__all__ = ["Template", "TEMPLATES", "KINDS", "Question", "sample_splits"]

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


def _family_alias(world: World, person: str) -> list[str]:
    return [world.people[person].family]


def _single_company_year(w: World, c: str) -> Question:
    co = w.companies[c]
    return Question(f"In which year was {c} founded?", str(co.founded), [], [c], [(c, "founded")])


def _single_company_founder(w: World, c: str) -> Question:
    co = w.companies[c]
    return Question(f"Who founded {c}?", co.founder, _family_alias(w, co.founder), [c], [(c, "founded")])


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


def _pairs(titles: list[str], value: Callable[[str], int]) -> list[tuple[str, str]]:
    return [(a, b) for a, b in itertools.combinations(titles, 2) if value(a) != value(b)]


def _compare(text: str, fact: str, value: Callable[[World, str], int], alias: Callable[[World, str], list[str]]):
    def realise(w: World, pair: tuple[str, str]) -> Question:
        a, b = pair
        winner = a if value(w, a) < value(w, b) else b
        return Question(text.format(a=a, b=b), winner, alias(w, winner), [a, b], [(a, fact), (b, fact)])
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
                      lambda w, t: w.companies[t].founded, lambda w, t: [w.companies[t].short])),
    Template("people_born_earlier", "comparison", "Who was born earlier, {a} or {b}?", False,
             lambda w: _pairs(list(w.people), lambda t: w.people[t].born),
             _compare("Who was born earlier, {a} or {b}?", "intro",
                      lambda w, t: w.people[t].born, lambda w, t: [w.people[t].family])),
    Template("cities_founded_earlier", "comparison", "Which city was founded earlier, {a} or {b}?", True,
             lambda w: _pairs(list(w.cities), lambda t: w.cities[t].founded),
             _compare("Which city was founded earlier, {a} or {b}?", "founded",
                      lambda w, t: w.cities[t].founded, lambda w, t: [])),
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
                             "raise n_people/n_companies/n_cities or ask fewer questions")
        return pool.pop()


def _split_questions(split: str, n: int, cfg: WorldConfig, world: World, pools: _Pools,
                     rng: random.Random) -> list[dict]:
    records = []
    for kind, count in _kind_counts(n, cfg).items():
        trained = [t for t in TEMPLATES if t.kind == kind and not t.heldout]
        heldout = [t for t in TEMPLATES if t.kind == kind and t.heldout]
        n_held = round(count / 3) if split != "train" and heldout else 0
        # None: a trained template, picked when drawn among those with subjects left
        plan: list[Template | None] = [heldout[i % len(heldout)] for i in range(n_held)] + [None] * (count - n_held)
        # Half the comparisons (rounded up) have the first-named entity as the answer.
        first_flags = [i % 2 == 0 for i in range(count)] if kind == "comparison" else []
        rng.shuffle(first_flags)
        for i, t in enumerate(plan):
            if t is None:
                t = rng.choice([t for t in trained if pools.remaining(t)] or trained)
            subject = pools.draw(t)
            if kind == "comparison":
                a, b = subject
                earlier = t.realise(world, (a, b)).answer
                if (earlier == a) != first_flags[i]:
                    subject = (b, a)
            q = t.realise(world, subject)
            late = any(world.pages[title].fact_index[fact] >= SEARCH_SENTENCES for title, fact in q.facts)
            meta: dict[str, Any] = {"kind": kind, "supporting_titles": q.supporting_titles, "template": t.id,
                                    "heldout_template": t.heldout, "lookup_needed": late}
            if kind == "comparison":
                meta["answer_position"] = "first" if q.answer == q.supporting_titles[0] else "second"
            records.append({"question": q.question, "answer": q.answer, "aliases": q.aliases, "meta": meta})
    rng.shuffle(records)
    return [{"id": f"world{cfg.seed}-{split}-{i:04d}", **r} for i, r in enumerate(records)]


def sample_splits(cfg: WorldConfig, world: World, rng: random.Random) -> dict[str, list[dict]]:
    """Task records per split (``train``, ``dev``, ``test``), each question unique in the world."""
    pools = _Pools(world, rng)
    # Test and dev first: their held-out questions must be drawn, while train can move to another
    # template when one runs out of subjects.
    out = {split: _split_questions(split, n, cfg, world, pools, rng)
           for split, n in (("test", cfg.n_test), ("dev", cfg.n_dev), ("train", cfg.n_train))}
    return {split: out[split] for split in ("train", "dev", "test")}
