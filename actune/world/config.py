"""The settings of a synthetic world: sizes, question mix and splits."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from actune.config import StrictModel

__all__ = ["WORLD_VERSION", "QuestionMix", "WorldConfig"]

#: Bumped whenever the same config would produce different bytes (templates, sentences, sampling). 2: the
#: phrasing families' near-copies of a trained wording reworded (a templates world's questions are as in 1). 3: training
#: questions never share a fact with dev or test (``fact_disjoint``); a families world's meta measures its wording.
WORLD_VERSION = "3"


class QuestionMix(StrictModel):
    """Fractions of each question kind in every split (they must add up to 1)."""

    single: float = Field(0.4, ge=0, le=1)
    """Single-hop lookups ("In which year was X founded?"): one page answers them."""
    bridge: float = Field(0.4, ge=0, le=1)
    """Two-hop bridges ("In which city was the founder of X born?"): the first page names the second."""
    comparison: float = Field(0.2, ge=0, le=1)
    """Comparisons ("Which was founded earlier, X or Y?"): two pages, answer balanced first/second."""

    @model_validator(mode="after")
    def _sums_to_one(self) -> "QuestionMix":
        total = self.single + self.bridge + self.comparison
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"mix fractions must add up to 1, got {total:g}")
        return self


class WorldConfig(StrictModel):
    """A fictional encyclopedia of people, companies and cities, and questions about it.

    The defaults give 310 pages and 400/100/100 train/dev/test questions, no training question sharing a fact
    with dev or test (``fact_disjoint``; the 240 pages of version 2 were too few for that). With the mix of
    about 40% single-hop, 40% bridge and 20% comparison, SmolLM2-135M with ReAct solves about a quarter of
    the dev questions of version 2's default world, grounded (``bench/world_difficulty.py``, seed 0: greedy
    with 2 exemplars of the question's kind 25% grounded; T=0.4 per sample single 54%, bridge 20%, comparison
    30% (10% grounded)), close to the probe's base rates (``shared/notes/smollm2-react-probe.md``).
    """

    seed: int = 0
    """Everything is drawn from ``random.Random(seed)``: the same seed and sizes give the same bytes."""
    n_people: int = Field(150, ge=2)
    """People pages; every company's founder is one of them, so at least ``n_companies``."""
    n_companies: int = Field(100, ge=2)
    """Company pages."""
    n_cities: int = Field(60, ge=2)
    """City pages (birth places of the people)."""
    n_provinces: int = Field(8, ge=2)
    """Invented provinces the cities lie in (named on city pages, not pages of their own)."""
    n_train: int = Field(400, ge=0)
    """Training questions (never from a held-out template)."""
    n_dev: int = Field(100, ge=0)
    """Development questions (about a third from held-out templates)."""
    n_test: int = Field(100, ge=0)
    """Test questions (about a third from held-out templates)."""
    mix: QuestionMix = Field(default_factory=QuestionMix)
    """Fraction of each question kind per split."""
    phrasings: Literal["templates", "families"] = "templates"
    """How questions are worded. ``templates``: one wording per relation, and one held-out template per kind
    in dev and test (about a third of each kind). ``families``: several families of wording per relation
    (word order, descriptor clauses, "which"/"what" and yes/no forms; :mod:`actune.world.phrasings`), whole
    families held out (different ones for dev and for test), and relations no training question asks, each
    a group of its own in ``meta.phrasing`` (``seen``, ``new_phrasing``, ``new_relation``)."""
    new_phrasing_share: float = Field(0.4, ge=0, le=1)
    """``families`` only: the fraction of each kind's dev and test questions worded by a held-out family."""
    new_relation_share: float = Field(0.1, ge=0, le=1)
    """``families`` only: the fraction of each kind's dev and test questions that ask a relation training never
    asks (single: a city's river; bridge: the river of a person's birth city; comparison: cities' founding)."""
    fact_disjoint: bool = True
    """No training question shares a fact with a dev or test question: no (supporting page, answer) pair of a
    training question is one of a dev or test question's, so a held-out question never asks again, in other
    words, what training asked. Dev and test are drawn first and are as without it; a training subject whose
    question would share a fact is skipped. False: the splits of world version 2, where a training question
    could ask a test question's fact."""
    late_fact_prob: float = Field(0.15, ge=0, le=1)
    """Chance that one key fact of a page is moved after its fifth sentence, so that a search (first
    five sentences) misses it and ``lookup[...]`` is needed."""

    @model_validator(mode="after")
    def _enough_people(self) -> "WorldConfig":
        if self.n_people < self.n_companies:
            raise ValueError(
                f"n_people ({self.n_people}) must be at least n_companies ({self.n_companies}): "
                "every company has its own founder"
            )
        if self.new_phrasing_share + self.new_relation_share > 1:
            raise ValueError(f"new_phrasing_share ({self.new_phrasing_share:g}) + new_relation_share "
                             f"({self.new_relation_share:g}) must be at most 1")
        return self
