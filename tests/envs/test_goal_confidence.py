"""The wiki envs' retrieval_score (LLARS' adaptive early exit): how far the pages read bear on the question,
over a fake two-page encyclopedia held in memory."""

from __future__ import annotations

from actune.envs.base import Action
from actune.envs.corpus import WikiPage
from actune.envs.fever_env import FeverEnv
from actune.envs.goal_confidence import GoalEvidence, answer_type, question_terms
from actune.envs.wiki_env import WikiEnv
from actune.records.task_record import Task

BRIDGE = "In which year was the company that makes the Walkman founded?"


class FakeWikiBackend:
    """A fake backend: exact titles open their page, anything else lists every title with score 0.5."""

    PAGES = {
        "Walkman": ["Walkman is a brand of portable audio players made by Sony.", "The first Walkman was sold in 1979."],
        "Sony": ["Sony is a Japanese company.", "It was founded in 1946."],
        "Danube": ["The Danube is about 2,850 km long."],
        "Discman": ["Discman is a portable CD player made by Sony."],
    }

    def find_page(self, entity: str) -> WikiPage | None:
        return WikiPage(entity, self.PAGES[entity]) if entity in self.PAGES else None

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        return [(t, 0.5) for t in list(self.PAGES)[:k]]


def env_for(question: str, cls: type[WikiEnv] = WikiEnv) -> WikiEnv:
    env = cls(FakeWikiBackend())
    env.reset(Task(id="t", question=question))
    return env


def scores(env: WikiEnv, actions: list[str]) -> list[float | None]:
    out = []
    for a in actions:
        name, arg = a.rstrip("]").split("[", 1)
        out.append(env.step(Action(name, arg)).info.get("retrieval_score"))
    return out


def test_question_terms_and_answer_type():
    # "year" names the answer's type (a year candidate stands for it); "in", "which", "was", "the", "that" are stopwords
    assert question_terms(BRIDGE) == {"compa", "makes", "walkm", "found"}
    assert answer_type(BRIDGE) == "year" and answer_type("When was Sony founded?") == "year"
    assert answer_type("How many km long is the Danube?") == "number"
    assert answer_type("Were Scott Derrickson and Ed Wood of the same nationality?") is None
    assert question_terms("Were Scott Derrickson and Ed Wood of the same nationality?") == {
        "scott", "derri", "ed", "wood", "natio"}


def test_a_bridge_question_is_not_answered_by_its_first_page():
    """The first page found (the Walkman) names the maker, not the year it was founded: 1 of the 4 content
    words. The maker's page adds "company" and "founded" (3 of 4); a lookup sentence without a year cannot
    hold the answer (0.0); neither can a failed search (0.0), though it lists similar titles."""
    env = env_for(BRIDGE)
    assert scores(env, ["search[Walkman]", "search[Sony]", "lookup[Japanese]", "lookup[founded]", "search[Sonny]",
                        "lookup[nothing]"]) == [0.25, 0.75, 0.0, 0.75, 0.0, None]


def test_a_page_without_a_candidate_of_the_answer_type_scores_zero():
    env = env_for(BRIDGE)
    assert scores(env, ["search[Discman]", "search[Sony]"]) == [0.0, 0.5]  # no year on the Discman page
    assert scores(env_for("How many km long is the Danube?"), ["search[Danube]"]) == [1.0]
    assert scores(env_for("How many km long is the Danube?"), ["search[Walkman]"]) == [0.0]  # no number
    # a question without a type: coverage alone (sony, japanese, company; then korean and one are missing)
    assert scores(env_for("Is Sony a Japanese company?"), ["search[Sony]"]) == [1.0]
    assert scores(env_for("Is Sony a Japanese company or a Korean one?"), ["search[Sony]"]) == [0.6]


def test_evidence_is_the_episodes_own_and_a_question_without_content_words_scores_zero():
    env = env_for(BRIDGE)
    scores(env, ["search[Walkman]"])
    env.reset(Task(id="t", question=BRIDGE))
    assert scores(env, ["search[Sony]"]) == [0.5]  # the Walkman page read before the reset does not count
    assert scores(env_for("q"), ["search[Sony]"]) == [0.0]
    assert GoalEvidence("").score("It was founded in 1946.") == 0.0


def test_fever_scores_the_claim_the_same_way():
    env = env_for("Sony is a Japanese company founded in 1946.", FeverEnv)
    # sony, japanese, company, founded, 1946: the Walkman page names Sony, Sony's page all five
    assert scores(env, ["search[Walkman]", "search[Sony]"]) == [0.2, 1.0]
