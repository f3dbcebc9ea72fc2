"""LLARS' adaptive early exit, driven by a ScriptedLLM: over the real wiki env's goal confidence (the fake
four-page encyclopedia), on the budget's last step, and before a PreFlect re-plan could spend calls."""

from __future__ import annotations

import asyncio

from actune.agent import AgentConfig, iter_episode
from actune.agent.validate import step_order_problems
from actune.envs.wiki_env import WikiEnv
from actune.records.task_record import Task

from .fakes import FakeEnvironment, FakeWikiBackend, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")
PLAN = " 1. search[Walkman]. 2. search the maker. 3. finish."
PASS = 'Fine.", "verdict": "PASS", "errors": []}'


def events(cfg: AgentConfig, replies, env) -> tuple[list, ScriptedLLM]:
    llm = ScriptedLLM(replies)

    async def go():
        return [ev async for ev in iter_episode(TASK, env, llm, cfg, scorer=exact_match_scorer)]

    got = asyncio.run(go())
    assert not llm.replies, f"{len(llm.replies)} scripted replies left unused"
    return got, llm


def order(got) -> list[tuple[str, int]]:
    return [(ev.type, ev.iteration) for ev in got]


WALKMAN = " I need the maker.\nAction 1: search[Walkman]"
SONY = " Sony makes it.\nAction 2: search[Sony]"


def test_the_first_page_found_no_longer_ends_a_bridge_question():
    """Every opened page used to score 1.0, so the exit answered after search[Walkman]. Now the Walkman page
    scores 0.0 (it holds no year, the answer's type) and the search goes on; Sony's page has a year and the
    pages read cover 3 of the question's 4 content words (walkman, company, founded; not makes): 0.75, which
    at a 0.75 threshold answers at once: 'Action 3: finish[' right after Observation 2, no Thought 3."""
    cfg = AgentConfig(method="react", early_exit=True, early_exit_threshold=0.75, regime="zero_shot")
    got, llm = events(cfg, [WALKMAN, SONY, "1946]"], WikiEnv(FakeWikiBackend()))
    assert order(got) == [("starting", 0), ("iteration", 1), ("thought", 1), ("action", 1), ("observation", 1),
                          ("iteration", 2), ("thought", 2), ("action", 2), ("observation", 2),
                          ("adaptive_iteration", 2), ("answer", 3), ("adaptive_response", 3), ("final_answer", 0),
                          ("done", 0)]
    assert llm.calls[2].prompt.endswith("Observation 2: Sony is a Japanese company. It was founded in 1946.\n"
                                        "Action 3: finish[")
    traj = got[-1].data["trajectory"]
    assert traj.info["early_exit"] == {"iteration": 2, "retrieval_score": 0.75}
    assert traj.steps[-1].text == "finish[1946]" and traj.steps[-1].meta == {"early_exit": True}
    assert traj.correct and step_order_problems(traj) == []
    # at the default threshold (0.9) the same pages do not end it: the model answers in its own step
    got, llm = events(AgentConfig(method="react", early_exit=True, regime="zero_shot"),
                      [WALKMAN, SONY, " Founded in 1946.\nAction 3: finish[1946]"], WikiEnv(FakeWikiBackend()))
    traj = got[-1].data["trajectory"]
    assert "early_exit" not in traj.info and "adaptive_iteration" not in [t for t, _ in order(got)]
    assert [s.type for s in traj.steps] == ["thought", "action", "observation"] * 2 + ["thought", "answer"]


def test_confidence_on_the_last_step_still_answers():
    """The exit used to wait for the next step, which a 2-step budget does not have: the episode ended
    unanswered (max_steps). The check now runs right after the observation."""
    env = FakeEnvironment(retrieval_scores={"Sony": 0.95})
    got, llm = events(AgentConfig(method="react", early_exit=True, episode_steps=2, regime="zero_shot"),
                      [WALKMAN, SONY, "1946]"], env)
    assert order(got)[-6:] == [("observation", 2), ("adaptive_iteration", 2), ("answer", 3), ("adaptive_response", 3),
                               ("final_answer", 0), ("done", 0)]
    assert "max_iterations_reached" not in [t for t, _ in order(got)]
    traj = got[-1].data["trajectory"]
    assert traj.finish_reason == "answered" and traj.prediction == "1946" and traj.correct
    assert [str(a) for a in env.actions] == ["search[Walkman]", "search[Sony]", "finish[1946]"]


def test_reflact_early_exit_asks_for_the_final_answer_label():
    env = FakeEnvironment(retrieval_scores={"Sony": 0.95})
    got, llm = events(AgentConfig(method="reflact", early_exit=True, regime="zero_shot"),
                      [" Current state: nothing. Latest discovery: none. Goal relation: need Sony.\nAction 1: "
                       "search[Sony]", " 1946"], env)
    assert llm.calls[1].prompt.endswith("It was founded in 1946.\nFINAL ANSWER:")
    assert llm.calls[1].stop == ["\n", "\nQuestion:"]
    traj = got[-1].data["trajectory"]
    assert traj.steps[-1].text == "FINAL ANSWER: 1946" and traj.correct and step_order_problems(traj) == []


def test_preflect_answers_before_a_forced_re_plan_would_spend_calls():
    """A confident observation at step 1 with a re-plan forced at step 2: the answer comes at once, no plan
    or critique is written for a step that will not be taken (PreFlect with ReflAct steps alike)."""
    env = FakeEnvironment(retrieval_scores={"Sony": 0.95})
    cfg = AgentConfig(method="preflect", early_exit=True, preflect_force_replan_every=2, regime="zero_shot")
    got, llm = events(cfg, [PLAN, PASS, " Sony.\nAction 1: search[Sony]", "1946]"], env)
    traj = got[-1].data["trajectory"]
    assert [s.type for s in traj.steps] == ["plan", "critique", "thought", "action", "observation", "answer"]
    assert llm.calls[-1].prompt.endswith("Action 2: finish[") and "re_plan" not in [t for t, _ in order(got)]
    assert traj.correct and step_order_problems(traj) == []

    env = FakeEnvironment(retrieval_scores={"Sony": 0.95})
    got, llm = events(cfg.model_copy(update={"method": "preflect_reflact"}),
                      [PLAN, PASS, " Current state: none. Latest discovery: none. Goal relation: need the maker.\n"
                       "Action 1: search[Sony]", " 1946"], env)
    traj = got[-1].data["trajectory"]
    assert [s.type for s in traj.steps] == ["plan", "critique", "reflection", "action", "observation", "answer"]
    assert llm.calls[-1].prompt.endswith("FINAL ANSWER:") and traj.steps[-1].text == "FINAL ANSWER: 1946"
    assert traj.correct and step_order_problems(traj) == []


def test_early_exit_is_off_by_default():
    assert AgentConfig().early_exit is False
    env = FakeEnvironment(retrieval_scores={"Sony": 1.0})
    got, _ = events(AgentConfig(method="react", regime="zero_shot"),
                    [" Sony.\nAction 1: search[Sony]", " 1946.\nAction 2: finish[1946]"], env)
    assert "adaptive_iteration" not in [t for t, _ in order(got)] and got[-1].data["trajectory"].correct
