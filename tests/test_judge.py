"""The judge: correct, grounded (pages actually read, normalised; FEVER: any one evidence set) and
well-ordered -> kept; methods that read no pages are kept on correctness alone."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import asdict

import pytest
from agent.fakes import FakeEnvironment, ScriptedLLM
from collect_fakes import FINISH, SEARCH

from actune.agent import AgentConfig, run_episode
from actune.agent.method_registry import interactive_methods, method_names, reads_no_pages
from actune.judge import Verdict, judge, record_verdict, titles_read, verdict_of
from actune.records.task_record import Task
from actune.records.trajectory import Step, TaskRecord, Trajectory


def _traj(supporting, titles, *, correct=True, steps=None, extra_info=None, method="react",
          evidence_sets=None) -> Trajectory:
    meta = {"kind": "bridge"} if supporting is None else {"kind": "bridge", "supporting_titles": supporting}
    if evidence_sets is not None:
        meta["evidence_sets"] = evidence_sets
    steps = steps if steps is not None else [
        Step("thought", "search first", 1), Step("action", "search[A]", 1, "search", "A"),
        Step("observation", "A is ...", 1),
        Step("thought", "done", 2), Step("answer", "finish[X]", 2, "finish", "X"),
    ]
    info = {"env_info": {"titles": list(titles), **(extra_info or {})}}
    return Trajectory(task=TaskRecord("t1", "q?", "X", meta=meta), method=method, steps=steps, prediction="X",
                      correct=correct, info=info)


def test_grounded_compares_normalised_titles() -> None:
    v = judge(_traj(["Scott Derrickson", "Ed Wood"], ["Scott_Derrickson", "ed  wood"]))
    assert (v.correct, v.grounded, v.kept, v.missing_titles, v.order_problems) == (True, True, True, [], [])
    assert v.grounding_checked


def test_a_supporting_page_not_read_makes_it_ungrounded() -> None:
    # "similar" titles listed by a failed search were not read
    t = _traj(["Scott Derrickson", "Ed Wood"], ["Scott Derrickson"], extra_info={"similar": ["Ed Wood"]})
    v = judge(t, require_grounded=True)
    assert (v.correct, v.grounded, v.kept, v.missing_titles) == (True, False, False, ["Ed Wood"])
    loose = judge(t, require_grounded=False)
    assert (loose.grounded, loose.kept, loose.require_grounded) == (False, True, False)


def test_wrong_answers_and_bad_step_order_are_not_kept() -> None:
    assert judge(_traj(["A"], ["A"], correct=False)).kept is False
    bad = _traj(["A"], ["A"], steps=[Step("action", "search[A]", 1, "search", "A"),
                                     Step("answer", "finish[X]", 1, "finish", "X")])
    v = judge(bad)
    assert v.correct and v.grounded and not v.kept
    assert v.order_problems == ["steps[0]: expected thought, got action", "steps[1]: expected observation, got answer"]


def test_tasks_without_supporting_titles_are_vacuously_grounded() -> None:
    v = judge(_traj(None, []))
    assert (v.grounded, v.grounding_checked, v.kept) == (True, False, True)


def test_the_verdict_is_stored_in_the_record_and_round_trips() -> None:
    t = record_verdict(_traj(["A", "B"], ["A"]), judge(_traj(["A", "B"], ["A"])))
    assert t.scores["grounded"] == 0.0 and t.scores["kept"] == 0.0
    back = Trajectory.from_json(t.to_json())
    assert back == t
    assert verdict_of(back) == judge(_traj(["A", "B"], ["A"]))
    assert t.info["verdict"]["missing_titles"] == ["B"]


def test_titles_come_from_the_loops_observations() -> None:
    """Through the real agent loop: the pages the env reported as read are what grounding sees."""
    env = FakeEnvironment()
    task = Task(id="w", question="Who makes the Walkman?", answer="Sony",
                meta={"kind": "single", "supporting_titles": ["walkman"]})
    traj = asyncio.run(run_episode(task, env, ScriptedLLM([SEARCH, FINISH]), AgentConfig()))
    assert titles_read(traj) == ["Walkman"]
    for odd in (5, {"titles": 5}, {"titles": "Walkman"}, None):  # a store another tool wrote: no page read
        assert titles_read(dataclasses.replace(traj, info={**traj.info, "env_info": odd})) == []
    v = judge(traj)
    assert (v.correct, v.grounded, v.kept) == (True, True, True)
    task2 = Task(id="w2", question="Who makes the Walkman?", answer="Sony",
                 meta={"supporting_titles": ["Walkman", "Sony"]})
    traj2 = asyncio.run(run_episode(task2, FakeEnvironment(), ScriptedLLM([SEARCH, FINISH]), AgentConfig()))
    v2 = judge(traj2)
    assert (v2.correct, v2.grounded, v2.kept, v2.missing_titles) == (True, False, False, ["Sony"])


# --- methods that read no pages -------------------------------------------------------------------------

_NO_PAGE_STEPS = {  # a well-ordered episode of each (cot_sc records its winning chain like cot)
    "standard": [Step("answer", "X", 1, "answer", "X")],
    "cot": [Step("thought", "Let's think step by step. X.", 1), Step("answer", "X", 1, "answer", "X")],
    "cot_sc": [Step("thought", "Let's think step by step. X.", 1), Step("answer", "X", 1, "answer", "X")],
}


def test_no_page_methods_are_methods_that_read_no_pages() -> None:
    no_pages = [m for m in method_names() if reads_no_pages(m)]
    assert no_pages == list(_NO_PAGE_STEPS)
    assert not set(no_pages) & set(interactive_methods())


@pytest.mark.parametrize("method", sorted(_NO_PAGE_STEPS))
def test_a_right_answer_without_pages_is_kept_but_not_grounded(method: str) -> None:
    t = _traj(["Scott Derrickson", "Ed Wood"], [], method=method, steps=_NO_PAGE_STEPS[method])
    assert judge(t) == Verdict(correct=True, grounded=False, kept=True, grounding_checked=False,
                               require_grounded=True, missing_titles=[], order_problems=[], grounding_applies=False)
    assert judge(t, require_grounded=False) == Verdict(
        correct=True, grounded=False, kept=True, grounding_checked=False, require_grounded=False,
        missing_titles=[], order_problems=[], grounding_applies=False)
    record_verdict(t, judge(t))
    assert (t.scores["grounded"], t.scores["kept"]) == (0.0, 1.0)
    assert verdict_of(Trajectory.from_json(t.to_json())) == judge(t)


@pytest.mark.parametrize("method", sorted(_NO_PAGE_STEPS))
def test_a_wrong_answer_without_pages_is_not_kept(method: str) -> None:
    t = _traj(["Scott Derrickson"], [], method=method, steps=_NO_PAGE_STEPS[method], correct=False)
    assert judge(t) == Verdict(correct=False, grounded=False, kept=False, grounding_checked=False,
                               require_grounded=True, missing_titles=[], order_problems=[], grounding_applies=False)


def test_a_no_page_method_with_bad_step_order_is_not_kept() -> None:
    t = _traj(None, [], method="cot", steps=[Step("answer", "X", 1, "answer", "X"),
                                             Step("thought", "hm", 1)])
    assert judge(t) == Verdict(correct=True, grounded=False, kept=False, grounding_checked=False,
                               require_grounded=True, missing_titles=[], grounding_applies=False,
                               order_problems=["cot: expected [thought, answer], got ['answer', 'thought']"])


def test_a_verdict_stored_before_grounding_applies_loads_with_the_default() -> None:
    t = record_verdict(_traj(["A"], ["A"]), judge(_traj(["A"], ["A"])))
    old = dict(t.info["verdict"])
    del old["grounding_applies"]
    t.info["verdict"] = old
    v = verdict_of(t)
    assert v is not None and v.grounding_applies is True and asdict(v) == {**old, "grounding_applies": True}


# --- FEVER evidence sets --------------------------------------------------------------------------------

def test_fever_one_evidence_set_read_in_full_is_enough() -> None:
    t = _traj(["Soul Food (film)", "Fox 2000 Pictures", "Soul Food"], ["soul_food_(film)"],
              evidence_sets=[["Fox 2000 Pictures", "Soul Food"], ["Soul Food (film)"]])
    assert judge(t) == Verdict(correct=True, grounded=True, kept=True, grounding_checked=True,
                               require_grounded=True, missing_titles=[], order_problems=[], grounding_applies=True,
                               pages_read=True)
    # the flat supporting_titles rule alone would have asked for all three pages
    flat = judge(_traj(["Soul Food (film)", "Fox 2000 Pictures", "Soul Food"], ["Soul Food (film)"]))
    assert (flat.grounded, flat.missing_titles) == (False, ["Fox 2000 Pictures", "Soul Food"])


def test_fever_no_set_read_lists_what_the_closest_set_lacks() -> None:
    sets = [["Paramore", "Tennessee", "Franklin, Tennessee"], ["Hayley Williams", "Paramore"]]
    # "Paramore" read: the second set lacks one page, the first two
    t = _traj(["Paramore", "Tennessee", "Franklin, Tennessee", "Hayley Williams"], ["Paramore"],
              evidence_sets=sets)
    assert judge(t) == Verdict(correct=True, grounded=False, kept=False, grounding_checked=True,
                               require_grounded=True, missing_titles=["Hayley Williams"], order_problems=[],
                               grounding_applies=True, pages_read=False)
    # nothing read: the closest (fewest missing) is the second; on a tie the first set would be named
    t0 = _traj(["Paramore"], [], evidence_sets=sets)
    assert judge(t0) == Verdict(correct=True, grounded=False, kept=False, grounding_checked=True,
                                require_grounded=True, missing_titles=["Hayley Williams", "Paramore"],
                                order_problems=[], grounding_applies=True, pages_read=False)
    tie = judge(_traj(["A", "B"], [], evidence_sets=[["A"], ["B"]]))
    assert (tie.grounded, tie.missing_titles) == (False, ["A"])


def test_fever_empty_evidence_sets_fall_back_to_supporting_titles() -> None:
    # NOT ENOUGH INFO claims have no sets; an empty set inside the list must not ground every episode
    assert judge(_traj([], ["A"], evidence_sets=[])) == Verdict(
        correct=True, grounded=True, kept=True, grounding_checked=False, require_grounded=True,
        missing_titles=[], order_problems=[], grounding_applies=True, pages_read=True)
    v = judge(_traj(["A"], [], evidence_sets=[[]]))
    assert (v.grounded, v.grounding_checked, v.missing_titles) == (False, True, ["A"])


# --- evidence-level grounding --------------------------------------------------------------------------------

def _evidence_traj(observations: list[str], evidence, **meta) -> Trajectory:
    steps = []
    for i, obs in enumerate(observations, start=1):
        steps += [Step("action", f"search[P{i}]", i, "search", f"P{i}"), Step("observation", obs, i)]
    steps.append(Step("answer", "finish[X]", len(observations) + 1, "finish", "X"))
    task_meta = {"kind": "bridge", "supporting_titles": ["A", "B"], "evidence": evidence, **meta}
    return Trajectory(task=TaskRecord("t1", "q?", "X", meta=task_meta), method="act", steps=steps,
                      prediction="X", correct=True, info={"env_info": {"titles": ["A", "B"]}})


def test_evidence_grounding_needs_every_sentence_shown_not_the_pages_opened() -> None:
    evidence = [["A was born in Rome.", "Rome  is in\nItaly."]]
    # both pages opened, only the first sentence shown (the second sat past the five a search shows)
    v = judge(_evidence_traj(["Intro. a was born in rome. More."], evidence))
    assert (v.grounded, v.pages_read, v.grounding_level, v.missing_evidence) == (
        False, True, "evidence", ["Rome  is in\nItaly."])
    assert not v.kept
    # shown across two observations, whitespace and case aside: grounded
    v = judge(_evidence_traj(["A was born in Rome.", "(Result 1 / 1) Rome is in Italy."], evidence))
    assert (v.grounded, v.kept, v.missing_evidence) == (True, True, [])
    # one of two sets shown in full is enough; the closest set is named when none is
    v = judge(_evidence_traj(["A was born in Rome."], [["Z."], ["A was born in Rome."]]))
    assert v.grounded
    assert judge(_evidence_traj(["nothing"], [["x1.", "x2."], ["y1."]])).missing_evidence == ["y1."]


def test_evidence_unknown_is_scored_apart_never_grounded_by_default() -> None:
    t = _evidence_traj(["A was born in Rome."], [], evidence_known=False)
    v = judge(t)
    assert (v.grounding_level, v.evidence_known, v.pages_read, v.grounded) == ("page", False, True, True)
    record_verdict(t, v)
    assert "grounded" not in t.scores and t.scores["pages_read"] == 1.0
    from actune.eval.stats import HEADLINE, PAGES, metric_value
    assert metric_value(t, HEADLINE) is None and metric_value(t, PAGES) == 1.0
