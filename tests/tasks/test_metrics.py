from __future__ import annotations

import pytest

from actune.records.task_record import Task
from actune.tasks.metrics import exact_match, f1_score, normalize_answer, qa_scores, score_prediction


def test_normalize_answer_follows_the_official_order() -> None:
    # lower -> drop ASCII punctuation -> drop articles -> collapse spaces
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear and THE plum.") == "apple pear and plum"
    assert normalize_answer("Anne's theatre") == "annes theatre"  # "an"/"the" only as whole words
    assert normalize_answer("café — bar") == "café — bar"  # non-ASCII punctuation stays, as officially


@pytest.mark.parametrize("pred, gold, em", [
    ("The Eiffel Tower", "eiffel tower", 1.0),
    ("Eiffel", "Eiffel Tower", 0.0),
    ("the", "a", 1.0),  # both normalise to "": the official script counts this as a match
])
def test_exact_match(pred: str, gold: str, em: float) -> None:
    assert exact_match(pred, gold) == em


def test_f1_token_overlap_values() -> None:
    # "paris france" vs "paris": precision 1/2, recall 1/1
    p, r = 1 / 2, 1.0
    assert f1_score("Paris, France", "Paris") == pytest.approx((2 * p * r / (p + r), p, r))
    # repeated tokens count once per gold occurrence: "cat cat" vs "cat"
    assert f1_score("the cat cat", "cat") == pytest.approx((2 / 3, 0.5, 1.0))
    # 2 of 3 predicted tokens, 2 of 4 gold tokens
    p, r = 2 / 3, 2 / 4
    assert f1_score("Johnny Depp actor", "Johnny Depp the American star")[0] == pytest.approx(2 * p * r / (p + r))
    assert f1_score("completely different", "nothing shared") == (0.0, 0.0, 0.0)
    assert f1_score("the", "a") == (0.0, 0.0, 0.0)  # EM 1 but no tokens: F1 0, as officially


def test_yes_no_noanswer_must_match_exactly() -> None:
    assert f1_score("yes", "yes sir") == (0.0, 0.0, 0.0)
    assert f1_score("yes indeed", "yes") == (0.0, 0.0, 0.0)
    assert f1_score("noanswer", "no answer") == (0.0, 0.0, 0.0)
    assert f1_score("No.", "no") == (1.0, 1.0, 1.0)
    assert f1_score("no way", "way out")[0] == pytest.approx(0.5)  # "no way" is not "no": plain overlap


def test_aliases_take_the_best_score() -> None:
    s = qa_scores("NYC", ["New York City", "NYC"])
    assert s["em"] == 1.0 and s["f1"] == 1.0
    s = qa_scores("New York", ["New York City", "Big Apple"])
    assert s["em"] == 0.0 and s["f1"] == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))


def test_score_prediction_dispatches_on_the_task() -> None:
    qa = Task(id="1", question="q", answer="Chief of Protocol", aliases=["Chief of Protocol of the United States"])
    ok, m = score_prediction(qa, "chief of protocol", {})
    assert ok and m == {"em": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0}
    ok, m = score_prediction(qa, "Protocol", {})
    assert not ok and m["em"] == 0.0 and m["f1"] == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))  # 1 of 3 gold tokens
    assert score_prediction(qa, None, {}) == (False, {"em": 0.0, "f1": 0.0, "precision": 0.0, "recall": 0.0})

    fever = Task(id="2", question="claim", answer="NOT ENOUGH INFO", env="fever")
    assert score_prediction(fever, "not_enough info", {}) == (True, {"acc": 1.0, "em": 1.0})
    assert score_prediction(fever, "SUPPORTS", {}) == (False, {"acc": 0.0, "em": 0.0})
    assert score_prediction(fever, "banana", {}) == (False, {"acc": 0.0, "em": 0.0})
    assert score_prediction(fever, None, {}) == (False, {"acc": 0.0, "em": 0.0})

    game = Task(id="3", question="put a mug in the sink", env="alfworld")
    assert score_prediction(game, None, {"won": True}) == (True, {"won": 1.0})
    assert score_prediction(game, "done", {}) == (False, {"won": 0.0})
    label_task = Task(id="4", question="q", answer="REFUTES", env="wiki", meta={"metric": "label"})
    assert score_prediction(label_task, "refutes", {})[0]


def test_docqa_citations_do_not_count_against_the_answer():
    from actune.records.task_record import Task
    from actune.tasks.metrics import score_prediction, strip_citations

    assert strip_citations("Paris [1][2]") == "Paris"
    assert strip_citations("Paris [1, 3].") == "Paris."
    task = Task(id="d1", question="q", answer="Paris", env="docqa")
    assert score_prediction(task, "Paris [2]", {})[0] is True
    # other environments keep brackets as written
    assert score_prediction(Task(id="w1", question="q", answer="Paris"), "Paris [2]", {})[0] is False
