"""Families of phrasings for the world's questions (``WorldConfig.phrasings: families``).

A *relation* is what a question asks (a company's founding year, a founder's birth city); a *family* is one
way of wording it, with a few variants (word order, a true but needless descriptor clause such as "the
food company X", a "which"/"what" form). The first family of every relation is the template's own
wording (the one the world exemplars use) and is always trained; of the others, one per relation is held
out for dev and two for test, drawn per world seed (:func:`assign_families`), so a held-out question
tests whether the model learnt the relation or a string. Relations no training question asks (a city's
river) are a third group, reported apart (:data:`PHRASING_GROUPS`).

Comparisons have forms: ``earlier`` and ``later`` ask for an entity ("Which was founded later, X or Y?"),
``yes_earlier`` and ``yes_later`` ask yes or no ("Was X founded before Y?"), as HotpotQA's comparison
questions do.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = ["Family", "FAMILIES", "PHRASING_GROUPS", "SEEN", "NEW_PHRASING", "NEW_RELATION", "NEW_PHRASING_FAR",
           "NEW_PHRASING_FACT_FREE", "NEAR_EDITS", "Wording", "assign_families", "word_edits", "heldout_wordings",
           "phrasing_group", "report_groups"]

SEEN, NEW_PHRASING, NEW_RELATION = "seen", "new_phrasing", "new_relation"
PHRASING_GROUPS = (SEEN, NEW_PHRASING, NEW_RELATION)
"""``meta.phrasing`` of a world question: a trained wording of a trained relation; a wording no training
question uses, of a trained relation; a relation no training question asks."""

NEW_PHRASING_FAR, NEW_PHRASING_FACT_FREE = "new_phrasing_far", "new_phrasing_fact_free"
"""Report groups inside ``new_phrasing`` (:func:`report_groups`): the half of the held-out wordings farthest from
any trained one (``meta.wording_far_half``), and the held-out questions whose fact no training question asks
(``meta.fact_in_train`` false)."""

NEAR_EDITS = 1
"""A held-out wording at most this many word edits from a trained wording of its relation is *near*
(``meta.wording_near``): "In which year was X established?" against the trained "...founded?"."""

# Held-out templates of a templates-mode world (WorldConfig.phrasings: templates): founder_birthplace
# rewords a trained relation, the others ask relations training never asks.
_TEMPLATE_GROUPS = {"founder_birthplace": NEW_PHRASING, "city_river": NEW_RELATION,
                    "cities_founded_earlier": NEW_RELATION}


@dataclass(frozen=True)
class Family:
    id: str
    texts: tuple[str, ...]
    """Variants; a question takes one at random. Fields: the subject ({company}, {person}, {city}; {a} and
    {b} for comparisons) and its descriptors ({industry}, {occupation})."""
    form: str = "earlier"
    """Comparisons only: ``earlier``, ``later``, ``yes_earlier`` or ``yes_later`` (see the module docstring)."""


def _f(fid: str, *texts: str, form: str = "earlier") -> Family:
    return Family(fid, tuple(texts), form)


FAMILIES: dict[str, tuple[Family, ...]] = {
    "company_founded_year": (
        _f("canonical", "In which year was {company} founded?"),
        _f("when", "When was {company} founded?", "When was the {industry} company {company} founded?"),
        _f("subject_first", "{company} was founded in which year?", "{company} was founded in what year?"),
        _f("what_year", "What was the year {company} was founded?",
           "What was the year the {industry} company {company} was founded?"),
        _f("established", "In which year was {company} established?", "When was {company} established?"),
        _f("founding_year", "What is the founding year of {company}?",
           "What was the founding year of the {industry} company {company}?"),
        _f("came_into_being", "In what year did {company} come into being?", "Since which year has {company} existed?"),
    ),
    "company_founder": (
        _f("canonical", "Who founded {company}?"),
        _f("founder_of", "Who is the founder of {company}?",
           "Who was the founder of the {industry} company {company}?"),
        _f("by_whom", "{company} was founded by whom?", "By whom was {company} founded?"),
        _f("which_person", "Which person founded {company}?", "Which person founded the {industry} company {company}?"),
        _f("started", "Who started {company}?", "Who started the {industry} company {company}?"),
        _f("name_founder", "What is the name of the founder of {company}?", "Name the person who founded {company}."),
        _f("set_up", "Who set up the company {company}?", "Who established {company}?"),
    ),
    "person_birth_city": (
        _f("canonical", "In which city was {person} born?"),
        _f("where", "Where was {person} born?", "Where was the {occupation} {person} born?"),
        _f("birthplace", "What is the birthplace of {person}?", "What is the birthplace of the {occupation} {person}?"),
        _f("subject_first", "{person} was born in which city?", "{person} was born in what city?"),
        _f("hometown", "Which city is {person} from?", "Which city does the {occupation} {person} come from?"),
        _f("city_of_birth", "What is {person}'s city of birth?", "Name the city of birth of {person}."),
        _f("native", "Name the city {person} was born in.", "{person} is a native of which city?"),
    ),
    "person_birth_year": (
        _f("canonical", "In which year was {person} born?"),
        _f("when", "When was {person} born?", "When was the {occupation} {person} born?"),
        _f("subject_first", "{person} was born in which year?", "{person} was born in what year?"),
        _f("what_year", "What was the year {person} was born?",
           "What was the year the {occupation} {person} was born?"),
        _f("birth_year", "What is the birth year of {person}?",
           "What is the year of birth of the {occupation} {person}?"),
        _f("year_of_birth", "Give the year of birth of {person}.", "What was the year of {person}'s birth?"),
        _f("came_into_world", "In which year did {person} come into the world?",
           "{person} came into the world in which year?"),
    ),
    "founder_birth_city": (
        _f("canonical", "In which city was the founder of {company} born?"),
        _f("birthplace", "What is the birthplace of the founder of {company}?",
           "What is the birthplace of the person who founded {company}?"),
        _f("where", "Where was the founder of {company} born?",
           "Where was the founder of the {industry} company {company} born?"),
        _f("who_founded", "The person who founded {company} was born in which city?",
           "The person who founded the {industry} company {company} was born in what city?"),
        _f("hometown", "Which city is the founder of {company} from?",
           "From which city does the founder of {company} come?"),
        _f("native", "In what city was the person who started {company} born?",
           "The founder of {company} is a native of which city?"),
        _f("city_of_birth", "What is the city of birth of the founder of {company}?",
           "Name the city where the founder of {company} was born."),
    ),
    "founder_birth_year": (
        _f("canonical", "In which year was the founder of {company} born?"),
        _f("when", "When was the founder of {company} born?",
           "When was the founder of the {industry} company {company} born?"),
        _f("who_founded", "The person who founded {company} was born in which year?",
           "The person who founded {company} was born in what year?"),
        _f("what_year", "What was the year the founder of {company} was born?",
           "What year was the person who started {company} born?"),
        _f("birth_year", "What is the birth year of the founder of {company}?",
           "What is the year of birth of the founder of the {industry} company {company}?"),
        _f("founder_age", "In what year was the person who founded {company} born?",
           "{company}'s founder was born in which year?"),
        _f("came_into_world", "In which year did the founder of {company} come into the world?",
           "The founder of {company} came into the world in which year?"),
    ),
    "person_birth_province": (
        _f("canonical", "In which province was {person} born?"),
        _f("birthplace_province", "Which province does the birthplace of {person} belong to?",
           "The birthplace of the {occupation} {person} belongs to which province?"),
        _f("subject_first", "{person} was born in which province?", "{person} was born in what province?"),
        _f("province_of_city", "In which province lies the city where {person} was born?",
           "The city where {person} was born lies in which province?"),
        _f("from_province", "Which province is {person} from?",
           "Which province does the {occupation} {person} come from?"),
        _f("birth_province", "What is the birth province of {person}?", "Name the province where {person} was born."),
        _f("home_province", "What is the home province of {person}?",
           "What is the home province of the {occupation} {person}?"),
    ),
    "companies_founded_earlier": (
        _f("canonical", "Which was founded earlier, {a} or {b}?"),
        _f("first_founded", "Which company was founded first, {a} or {b}?", "Of {a} and {b}, which was founded first?"),
        _f("later", "Which was founded later, {a} or {b}?", "Which company is younger, {a} or {b}?", form="later"),
        _f("older", "Which company is older, {a} or {b}?", "Is {a} or {b} the older company?"),
        _f("yes_before", "Was {a} founded before {b}?", "Was {a} founded earlier than {b}?", form="yes_earlier"),
        _f("yes_after", "Was {a} founded after {b}?", "Was {a} founded later than {b}?", form="yes_later"),
        _f("more_recent", "Which of {a} and {b} was founded more recently?",
           "{a} or {b}: which was founded more recently?",
           form="later"),
    ),
    "people_born_earlier": (
        _f("canonical", "Who was born earlier, {a} or {b}?"),
        _f("first_born", "Who was born first, {a} or {b}?", "Of {a} and {b}, who was born first?"),
        _f("later", "Who was born later, {a} or {b}?", "Who is younger, {a} or {b}?", form="later"),
        _f("older", "Who is older, {a} or {b}?", "Which person is older, {a} or {b}?"),
        _f("yes_before", "Was {a} born before {b}?", "Was {a} born earlier than {b}?", form="yes_earlier"),
        _f("yes_after", "Was {a} born after {b}?", "Was {a} born later than {b}?", form="yes_later"),
        _f("more_recent", "Which of {a} and {b} was born more recently?", "{a} or {b}: who was born more recently?",
           form="later"),
    ),
    # relations no training question asks: every family is unseen
    "city_river": (
        _f("canonical", "On which river does {city} lie?"),
        _f("what_river", "What river flows through {city}?", "Which river is the city of {city} on?"),
    ),
    "cities_founded_earlier": (
        _f("canonical", "Which city was founded earlier, {a} or {b}?"),
        _f("older", "Which city is older, {a} or {b}?", "Of the cities {a} and {b}, which was founded first?"),
    ),
    "person_birth_river": (
        _f("canonical", "On which river lies the city where {person} was born?"),
        _f("what_river", "Which river flows through the birthplace of {person}?",
           "What river is the city where {person} was born on?"),
    ),
}

def assign_families(relations: list[str], rng: random.Random, *, dev: int = 1,
                    test: int = 2) -> dict[str, dict[str, list[str]]]:
    """Relation -> split -> family ids. The canonical family (first) is always trained; of the rest, ``dev``
    go to dev only and ``test`` to test only, drawn with ``rng``; the remainder are trained (and also asked in
    dev and test as seen phrasings)."""
    out = {}
    for rel in relations:
        canonical, *rest = [f.id for f in FAMILIES[rel]]
        if len(rest) < dev + test + 1:
            raise ValueError(f"relation {rel!r} has {len(rest) + 1} families: too few to hold out {dev} + {test}")
        rng.shuffle(rest)
        out[rel] = {"train": [canonical, *sorted(rest[dev + test:])], "dev": sorted(rest[:dev]),
                    "test": sorted(rest[dev:dev + test])}
    return out


def phrasing_group(meta: dict) -> str | None:
    """A world task's phrasing group (:data:`PHRASING_GROUPS`): its ``meta.phrasing``, or for a world written
    before families existed, its held-out template's group (None: not a world task)."""
    if "phrasing" in meta:
        return str(meta["phrasing"])
    if "heldout_template" not in meta:
        return None
    return _TEMPLATE_GROUPS.get(str(meta.get("template")), NEW_PHRASING) if meta["heldout_template"] else SEEN


def _words(text: str) -> list[str]:
    return re.findall(r"\{\w+\}|[\w']+", text.lower())


def word_edits(a: str, b: str) -> int:
    """Word-level edit distance (insertions, deletions, substitutions of whole words; case and punctuation
    ignored, a field such as ``{company}`` one word): "When was {company} founded?" -> "When was {company}
    established?" is 1."""
    wa, wb = _words(a), _words(b)
    prev = list(range(len(wb) + 1))
    for i, x in enumerate(wa, 1):
        cur = [i]
        for j, y in enumerate(wb, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


@dataclass(frozen=True)
class Wording:
    """A held-out variant of a world's trained relation, measured against the relation's trained variants."""

    relation: str
    family: str
    text: str
    distance: int
    """Word edits to the nearest variant of a trained family of the same relation (:func:`word_edits`); the
    form is not considered, so "Was X born after Y?" is 1 from a trained "Was X born before Y?"."""
    near: bool
    """``distance <= NEAR_EDITS``."""
    far_half: bool
    """Among the farthest half of its split's held-out wordings: ranked by ``distance``, then by edits per word
    of the longer text, then by relation and text; the first ``ceil(n / 2)`` of ``n``."""


def heldout_wordings(assignment: dict[str, dict[str, list[str]]]) -> dict[str, dict[tuple[str, str], Wording]]:
    """Split (``dev``, ``test``) -> (relation, variant text) -> :class:`Wording`, for every variant of the split's
    held-out families in ``assignment`` (:func:`assign_families`)."""
    out: dict[str, dict[tuple[str, str], Wording]] = {}
    for split in ("dev", "test"):
        measured = []
        for rel, families in sorted(assignment.items()):
            by_id = {f.id: f for f in FAMILIES[rel]}
            trained = [t for fid in families["train"] for t in by_id[fid].texts]
            for fid in families[split]:
                for text in by_id[fid].texts:
                    edits = [(word_edits(text, t), t) for t in trained]
                    d, per_word = min((e, e / max(len(_words(text)), len(_words(t)))) for e, t in edits)
                    measured.append((d, per_word, rel, fid, text))
        ranked = sorted(measured, key=lambda m: (-m[0], -m[1], m[2], m[4]))
        far = {(m[2], m[4]) for m in ranked[:(len(ranked) + 1) // 2]}
        out[split] = {(rel, text): Wording(rel, fid, text, d, d <= NEAR_EDITS, (rel, text) in far)
                      for d, _, rel, fid, text in measured}
    return out


def report_groups(metas: list[dict]) -> dict[str, list[int]]:
    """Group -> indices into ``metas`` (world tasks' meta): each :func:`phrasing_group`, and inside
    ``new_phrasing`` the far half of the held-out wordings (:data:`NEW_PHRASING_FAR`, where the meta has
    ``wording_far_half``) and the questions no training question shares a fact with
    (:data:`NEW_PHRASING_FACT_FREE`, only where some held-out question does share one: a world drawn with
    ``fact_disjoint`` has no other). A task may be in two groups; other tasks are in none."""
    groups: dict[str, list[int]] = {}
    for i, meta in enumerate(metas):
        g = phrasing_group(meta)
        if g is not None:
            groups.setdefault(g, []).append(i)
        if g == NEW_PHRASING and meta.get("wording_far_half"):
            groups.setdefault(NEW_PHRASING_FAR, []).append(i)
    held = groups.get(NEW_PHRASING, [])
    fact_free = [i for i in held if metas[i].get("fact_in_train") is False]
    if any(metas[i].get("fact_in_train") for i in held):
        groups[NEW_PHRASING_FACT_FREE] = fact_free
    order = (SEEN, NEW_PHRASING, NEW_PHRASING_FAR, NEW_PHRASING_FACT_FREE, NEW_RELATION)
    return {g: groups[g] for g in sorted(groups, key=lambda g: order.index(g) if g in order else len(order))}
