"""The content-free policies on the small HotpotQA fixture, in the real wiki environment, judged like episodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.envs.config import EnvConfig
from actune.eval.report import ModelResult, build_report
from actune.eval.stats import HEADLINE
from actune.eval.yardsticks import claim_only, named_entities, options, policies, run_yardsticks, yes_no_question
from actune.records.task_record import Task
from actune.sources.hotpotqa import HotpotQASource, write_hotpotqa_tasks
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks

SMALL = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"


def test_question_parsing() -> None:
    assert options("Which magazine was started first, Arthur's Magazine or First for Women?") == (
        "Arthur's Magazine", "First for Women")
    assert options("Who was born first Doug Liman or Saul Metzstein?") == ("Doug Liman", "Saul Metzstein")
    # an auxiliary verb opens a yes/no question, whatever "or" it holds
    assert yes_no_question("Are both Lygodium or Maxillaria a genus of orchids?")
    assert options("Are both Lygodium or Maxillaria a genus of orchids?") is None
    assert named_entities("What profession does H. L. Mencken and Albert Camus have in common?") == [
        "H. L. Mencken", "Albert Camus"]
    assert named_entities("Are Fabián Bielinsky and Nelson Pereira dos Santos both directors?") == [
        "Fabián Bielinsky", "Nelson Pereira dos Santos"]


def test_policies_fit_on_training_answers_only() -> None:
    train = [Task(str(i), q, a) for i, (q, a) in enumerate([
        ("Is A older than B?", "no"), ("Was C born first?", "no"), ("Are D and E both towns?", "yes"),
        ("Which came first, F or G?", "G"), ("Which is older, H or I?", "I"), ("Who wrote J?", "K")])]
    by_name = {p.name: p for p in policies(train, has_search=True)}
    assert list(by_name) == ["constant", "kind-majority", "question-only", "question-only+search"]
    probe = [Task("a", "Are X and Y both rivers?"), Task("b", "Which is longer, Nile or Amazon?"),
             Task("c", "Who directed The Big Sleep?")]
    assert [by_name["question-only"].answer(t) for t in probe] == ["no", "Amazon", "The Big Sleep"]
    assert by_name["constant"].answer(probe[0]) == "no"
    # FEVER's labels, each given more than once: one constant policy per label, and a guess from the claim's words
    labels = [Task(str(i), "claim", a) for i, a in enumerate(["SUPPORTS"] * 3 + ["REFUTES"] * 2 + ["NOT ENOUGH INFO"] * 2)]
    assert [p.name for p in policies(labels, has_search=False)] == [
        "constant-not-enough-info", "constant-refutes", "constant-supports", "question-only"]
    # and each again after searching what the claim names, where the environment searches
    with_search = policies(labels, has_search=True)
    assert [p.name for p in with_search][4:] == [
        "constant-not-enough-info+search", "constant-refutes+search", "constant-supports+search", "question-only+search"]
    assert with_search[5].searches(Task("x", "Mickey Rourke appeared in a 2011 film.")) == ["Mickey Rourke", "2011"]


def test_claim_only_guesses_the_label_from_the_claims_words() -> None:
    """Naive Bayes by hand on a fixture (14 words in the vocabulary; 12 training words under SUPPORTS, 8 under
    REFUTES, 3 under NOT ENOUGH INFO): "only", met twice under REFUTES, gives log(2/6) + log(3/22) = -3.09 against
    SUPPORTS' log(3/6) + log(1/26) = -3.95; a claim of three unseen words goes to the label with fewest training
    words (1/17 a word against 1/22 and 1/26 outweighs the prior), an empty one to the prior's SUPPORTS."""
    train = [Task(str(i), q, a) for i, (q, a) in enumerate([
        ("X is a film", "SUPPORTS"), ("Y is a band", "SUPPORTS"), ("Z is a city", "SUPPORTS"),
        ("X is only six", "REFUTES"), ("Y is only ten", "REFUTES"), ("W has cats", "NOT ENOUGH INFO")])]
    guess = claim_only(train)
    assert [guess(Task(str(i), q)) for i, q in enumerate(["only", "a film", "cats", "V V V", ""])] == [
        "REFUTES", "SUPPORTS", "NOT ENOUGH INFO", "NOT ENOUGH INFO", "SUPPORTS"]


def test_yardsticks_on_the_fixture_in_the_real_environment(tmp_path: Path) -> None:
    write_hotpotqa_tasks(HotpotQASource(data_dir=str(SMALL), n_test=7, n_dev=0), tmp_path / "tasks")
    load = lambda s: load_tasks(TaskConfig(format="custom", path=str(tmp_path / "tasks" / f"{s}.jsonl"), split=s))  # noqa: E731
    env = EnvConfig(name="wiki", backend="local", corpus=str(tmp_path / "tasks" / "corpus.jsonl"),
                    index_dir=str(tmp_path / "index"))
    results = {r.label: r for r in run_yardsticks(load("test"), load("train"), env)}
    assert list(results) == ["yardstick:constant", "yardstick:kind-majority", "yardstick:question-only",
                             "yardstick:question-only+search"]
    correct = {k: sum(t.correct for t in r.records) for k, r in results.items()}
    grounded = {k: sum(bool(t.scores.get("grounded")) and t.correct for t in r.records) for k, r in results.items()}
    # three yes/no questions answered "yes" right without reading; only opening both pages grounds two of them
    assert correct == {"yardstick:constant": 3, "yardstick:kind-majority": 3, "yardstick:question-only": 3,
                       "yardstick:question-only+search": 3}
    assert grounded == {"yardstick:constant": 0, "yardstick:kind-majority": 0, "yardstick:question-only": 0,
                        "yardstick:question-only+search": 2}
    searched = next(t for t in results["yardstick:question-only+search"].records if "Bielinsky" in t.task.question)
    assert [s.action_arg for s in searched.steps if s.type == "action"] == [
        "Fabián Bielinsky", "Nelson Pereira dos Santos"]
    # the report pairs every model against the best of them
    model = ModelResult("tuned", records=results["yardstick:question-only"].records)
    report = build_report([model], samples=100, confidence=0.95, seed=0, yardsticks=list(results.values()))
    assert report["best_yardstick"] == "yardstick:question-only+search"
    vs = report["models"][0]["vs_yardstick"]
    assert vs["label"] == "yardstick:question-only+search"
    assert (vs[HEADLINE]["b"], vs[HEADLINE]["c"]) == (2, 0)


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "hotpotqa"


@pytest.mark.shared
@pytest.mark.skipif(not (SHARED / "wiki_paragraphs.jsonl").is_file(), reason="needs ../shared/data/hotpotqa")
def test_on_the_real_split_0_the_script_that_reads_nothing_is_the_bar(tmp_path: Path) -> None:
    """Issue #48's finding, as the product now reports it: on split seed 0's 500 test questions (300 with their
    supporting sentences known), answers read off the question reach exact match 59/500, and opening the pages it
    names grounds 20 of them at the evidence level."""
    write_hotpotqa_tasks(HotpotQASource(data_dir=str(SHARED)), tmp_path / "tasks")
    load = lambda s: load_tasks(TaskConfig(format="custom", path=str(tmp_path / "tasks" / f"{s}.jsonl"), split=s))  # noqa: E731
    test = load("test")
    assert sum(t.meta.get("evidence_known") is not False for t in test) == 300
    env = EnvConfig(name="wiki", backend="local", corpus=str(tmp_path / "tasks" / "corpus.jsonl"))
    got = {r.label: (sum(t.correct for t in r.records), sum(bool(t.correct and t.scores.get("grounded"))
                                                         for t in r.records)) for r in run_yardsticks(test, load("train"), env)}
    assert got == {"yardstick:constant": (32, 0), "yardstick:kind-majority": (34, 0),
                   "yardstick:question-only": (59, 0), "yardstick:question-only+search": (59, 20)}


FEVER = Path(__file__).resolve().parents[3] / "shared" / "data" / "fever"


@pytest.mark.shared
@pytest.mark.skipif(not FEVER.is_dir(), reason="needs ../shared/data/fever")
def test_on_real_fever_the_claims_wording_beats_every_constant(tmp_path: Path) -> None:
    """Split seed 5519's 327 test claims (results 32's FEVER run), (right, right & pages read): the best constant,
    NOT ENOUGH INFO, is right on 119 (grounded with no page read, as the judge counts that label); the label
    guessed from the claim's words alone on 146, and after opening the pages the claim names, 130 of them
    grounded: the yardstick a FEVER model's correct & grounded now stands beside (results 32's tuned model: 84)."""
    from actune.sources.fever import FeverSource, write_fever_tasks

    write_fever_tasks(FeverSource(data_dir=str(FEVER), split_seed=5519, n_train=600), tmp_path)
    load = lambda s: load_tasks(TaskConfig(format="custom", path=str(tmp_path / f"{s}.jsonl"), split=s))  # noqa: E731
    env = EnvConfig(name="fever", backend="local", corpus=str(tmp_path / "corpus.jsonl"))
    got = {r.label.removeprefix("yardstick:"): (sum(t.correct for t in r.records),
                                                sum(bool(t.correct and t.scores.get("grounded")) for t in r.records))
           for r in run_yardsticks(load("test"), load("train"), env)}
    assert got == {"constant-not-enough-info": (119, 119), "constant-refutes": (94, 0), "constant-supports": (114, 0),
                   "question-only": (146, 63), "constant-not-enough-info+search": (119, 119),
                   "constant-refutes+search": (94, 79), "constant-supports+search": (114, 99),
                   "question-only+search": (146, 130)}
