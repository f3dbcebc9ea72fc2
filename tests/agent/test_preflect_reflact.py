"""PreFlect with ReflAct steps (``preflect_reflact``), driven by a ScriptedLLM over the FakeEnvironment: the
plan is critiqued, revised and re-planned as PreFlect does, each step is a goal-state reflection."""

from __future__ import annotations

import asyncio

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.method_registry import method_names, plans_first
from actune.agent.planning_errors import load_catalog
from actune.agent.reflection_parts import reflection_part_problems
from actune.agent.render import build_prompt_context
from actune.agent.validate import step_order_problems
from actune.records.task_record import Task
from actune.records.trajectory import Trajectory

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")
CATALOG = load_catalog()
PLAN = " 1. search[Walkman] for its maker. 2. search the maker for its founding year. 3. finish."
PASS = 'The plan finds the maker, then the year.", "verdict": "PASS", "errors": []}'
FAIL = 'It trusts the first page.", "verdict": "FAIL", "errors": ["insufficient constraint verification"]}'
R1 = "Current state: nothing is known. Latest discovery: none. Goal relation: I need the maker."
R2 = "Current state: Sony makes the Walkman. Latest discovery: the maker is Sony. Goal relation: I need its year."
R3 = "Current state: Sony was founded in 1946. Latest discovery: 1946. Goal relation: the goal is reached."
SOLVE = [f" {R1}\nAction 1: search[Walkman]", f" {R2}\nAction 2: search[Sony]", f" {R3}\nFINAL ANSWER: 1946"]


def run(cfg: AgentConfig, replies) -> tuple[Trajectory, ScriptedLLM, FakeEnvironment]:
    llm = ScriptedLLM(replies)
    env = FakeEnvironment()
    traj = asyncio.run(run_episode(TASK, env, llm, cfg, scorer=exact_match_scorer))
    assert not llm.replies, f"{len(llm.replies)} scripted replies left unused"
    return traj, llm, env


def cfg(**kw) -> AgentConfig:
    return AgentConfig(method="preflect_reflact", **kw)


def kinds(traj: Trajectory) -> list[str]:
    return [s.type for s in traj.steps]


def test_plan_critique_then_reflections_and_a_final_answer():
    traj, llm, env = run(cfg(), [PLAN, PASS] + SOLVE)
    assert kinds(traj) == (["plan", "critique"] + ["reflection", "action", "observation"] * 2
                           + ["reflection", "answer"])
    assert [s.iteration for s in traj.steps] == [1, 1, 1, 1, 1, 2, 2, 2, 3, 3]
    assert [s.text for s in traj.steps if s.type == "reflection"] == [R1, R2, R3]
    assert traj.steps[-1].text == "FINAL ANSWER: 1946" and traj.prediction == "1946" and traj.correct
    assert [str(a) for a in env.actions] == ["search[Walkman]", "search[Sony]", "finish[1946]"]
    # the plan prompt: PreFlect's plan and re_plan, ReflAct's three parts and FINAL ANSWER
    p0 = llm.calls[0].prompt
    assert p0.startswith("Solve a question answering task. First write a Plan: the steps that will solve it with "
                         "the actions below. Then follow it with interleaving Reflection, Action, Observation steps. "
                         "Each Reflection states (1) the current state")
    assert "re_plan[reason]" in p0 and "then FINAL ANSWER: <answer>." in p0
    # few-shot: the wiki exemplars' own reflections under a plan of their actions and a passing critique
    assert ("\nPlan 1: search[Walkman], then search[Sony], then finish[answer].\nCritique 1: PASS\nReflection 1: "
            "Current state: nothing is known yet. Latest discovery: none. Goal relation: I need the maker of the "
            "Walkman and then its founding year.\nAction 1: search[Walkman]\n") in p0
    assert "\nFINAL ANSWER: 1946\n" in p0 and "Thought 1:" not in p0
    assert llm.calls[0].stop == ["\n\n", "\nQuestion:", "\nCritique", "\nReflection"]
    assert llm.calls[1].prompt.startswith("You check an agent's plan before it acts.")
    assert llm.calls[2].prompt.endswith(f"Critique 1: {traj.steps[1].text}\nReflection 1:")
    assert llm.calls[2].stop == ["\nObservation", "\nQuestion:", "\n\n", "\nReflection"]
    assert llm.calls[4].prompt.endswith("Observation 2: Sony is a Japanese company. It was founded in 1946.\n"
                                        "Reflection 3:")
    assert traj.info["prompt"]["method"] == "preflect_reflact" and traj.method == "preflect_reflact"
    assert traj.info["preflect"]["plans"] == 1 and traj.info["preflect"]["critiques"] == 1
    assert step_order_problems(traj) == [] and reflection_part_problems(traj) == []
    assert Trajectory.from_json(traj.to_json()) == traj


def test_fail_has_the_reflector_revise_with_the_catalogs_failure_and_success_patterns():
    revised = "revised: check the year on the maker's page."
    traj, llm, _ = run(cfg(), [PLAN, FAIL, f" {revised}", PASS] + SOLVE)
    assert kinds(traj)[:5] == ["plan", "critique", "plan", "critique", "reflection"]
    icv = CATALOG.errors[0]
    revision_prompt = llm.calls[2].prompt
    assert revision_prompt.endswith(f"Errors to repair:\n{icv.render(1)}\nRevised plan:")
    assert f"   Failure pattern: {icv.failure_pattern}\n   Success pattern: {icv.success_pattern}" in revision_prompt
    assert traj.steps[2].meta == {"revision": 1, "errors": ["insufficient constraint verification"],
                                  "reviser": "reflector"}
    assert "Plan:\n" + revised + "\nJSON:" in llm.calls[3].prompt  # the revision is checked again
    assert llm.calls[4].prompt.endswith(f"Plan 1: {revised}\nCritique 1: PASS. The plan finds the maker, then the "
                                        "year.\nReflection 1:")
    assert traj.correct and step_order_problems(traj) == []


def test_unreadable_critique_is_retried_and_re_plan_writes_a_checked_plan():
    replies = [PLAN, "not json", PASS,
               f" {R1}\nAction 1: search[Walkmen]",
               " Current state: nothing. Latest discovery: no page. Goal relation: no closer.\n"
               "Action 2: re_plan[Tool Failure: search finds nothing]",
               " 1. search[Walkman] exactly.", PASS,
               f" {R1}\nAction 3: search[Walkman]", f" {R2}\nAction 4: search[Sony]", f" {R3}\nFINAL ANSWER: 1946"]
    traj, llm, _ = run(cfg(), replies)
    assert kinds(traj) == (["plan", "critique", "reflection", "action", "observation", "reflection", "action",
                            "plan", "critique"] + ["reflection", "action", "observation"] * 2 + ["reflection", "answer"])
    assert traj.steps[1].meta["retry_of"]["parse_error"] == "verdict is None, not PASS or FAIL"
    assert (traj.steps[6].action_name, traj.steps[7].meta) == ("re_plan", {"reason": "Tool Failure: search finds "
                                                                                     "nothing"})
    assert llm.calls[7].prompt.endswith("Plan 2: 1. search[Walkman] exactly.\nCritique 2: PASS. The plan finds the "
                                        "maker, then the year.\nReflection 3:")
    info = traj.info["preflect"]
    assert (info["plans"], info["critiques"], info["critique_retries"], info["re_plans"]) == (2, 2, 1, 1)
    assert traj.correct and step_order_problems(traj) == []


def test_forced_re_plan_at_step_6_of_its_own_budget():
    search = [f" {R1}\nAction {i}: search[Page{i}]" for i in range(1, 6)]
    traj, llm, _ = run(cfg(), [PLAN, PASS] + search + [" new plan", PASS, f" {R3}\nFINAL ANSWER: 1946"])
    assert cfg().step_budget("wiki") == 20 and cfg().step_budget("fever") == 20
    assert [(s.iteration, s.meta) for s in traj.steps if s.type == "plan"] == [(1, {"initial": True}),
                                                                               (6, {"forced": True})]
    assert kinds(traj)[-4:] == ["plan", "critique", "reflection", "answer"]
    assert traj.info["preflect"]["forced_re_plans"] == 1 and traj.correct and step_order_problems(traj) == []


def test_a_reflection_keeps_its_lines_and_the_action_is_asked_for_when_missing():
    two_lines = "Current state: nothing is known.\nLatest discovery: none. Goal relation: I need the maker."
    traj, llm, _ = run(cfg(), [PLAN, PASS, f" {two_lines}", " search[Walkman]", f" {R2}\nAction 2: search[Sony]",
                               f" {R3}\nFINAL ANSWER: 1946"])
    assert traj.steps[2].type == "reflection" and traj.steps[2].text == two_lines  # not cut to its first line
    assert llm.calls[3].prompt.endswith(f"Reflection 1: {two_lines}\nAction 1:")
    assert traj.steps[3].meta == {"reprompted": True} and traj.correct
    # a reflection without its parts is caught as in ReflAct
    traj.steps[5].text = "I should search Sony."
    assert reflection_part_problems(traj) == [
        "steps[5]: reflection 2 lacks current state, latest discovery, goal relation"]


def test_chat_wire_prefills_the_reflection_label():
    traj, llm, _ = run(cfg(wire="chat", regime="zero_shot"), [PLAN, PASS] + SOLVE)
    assert llm.calls[2].prompt[-3:] == [{"role": "assistant", "content": f"Plan 1: {PLAN.strip()}"},
                                        {"role": "user", "content": f"Critique 1: {traj.steps[1].text}"},
                                        {"role": "assistant", "content": "Reflection 1:"}]
    assert traj.correct and step_order_problems(traj) == []


def test_step_order_wants_reflections():
    traj, _, _ = run(cfg(), [PLAN, PASS] + SOLVE)
    traj.steps[2].type = "thought"
    assert step_order_problems(traj)[0] == "steps[2]: expected reflection, got thought"


@pytest.mark.parametrize("env", ["wiki", "world", "fever", "alfworld"])
def test_every_exemplar_set_with_reflections_serves_it(env):
    finish = None if env == "alfworld" else "finish"
    ctx = build_prompt_context("preflect_reflact", env, "(actions)", "q", finish_action=finish)
    lines = ctx.examples.splitlines()
    reflections = [ln for ln in lines if ln.startswith("Reflection ")]
    assert reflections and not any(ln.startswith("Thought ") for ln in lines)
    assert sum(ln.startswith("Plan 1: ") for ln in lines) == sum(ln.startswith("Critique 1: PASS") for ln in lines) > 0
    from actune.agent.reflection_parts import missing_reflection_parts

    assert all(missing_reflection_parts(r) == [] for r in reflections), env


def test_export_keeps_the_record_whole_and_trains_on_plans_and_reflections_not_critiques():
    """There is no PreFlect adapter format (``steps_method`` is react or reflact): like PreFlect's, these
    records are not converted (their reflections answer a plan and critiques a ReflAct loop never shows), and
    counted unconvertible; rendered as they are, plans and reflections are trained on, critiques are not."""
    from actune.bootstrap.export import convert_steps, text_example

    traj, _, _ = run(cfg(), [PLAN, FAIL, " revised", PASS] + SOLVE)
    assert convert_steps(traj, "react", "instruction") is None and convert_steps(traj, "reflact", "x") is None
    flags = [(seg["text"].split(":", 1)[0], seg["train"]) for seg in text_example(traj)["segments"][1:]]
    # the agent's plan is trained, the reflector's revision of it is not
    assert [f for f in flags if f[0] == "Plan 1"] == [("Plan 1", True), ("Plan 1", False)]
    assert {("Reflection 1", True), ("Action 1", True), ("FINAL ANSWER", True)} <= set(flags)
    assert ("Critique 1", True) not in flags and ("Observation 1", False) in flags
    assert text_example(traj)["steps_method"] == "preflect_reflact"


def test_preflect_settings_cover_both_variants():
    assert method_names(lambda s: plans_first(s.name)) == ("preflect", "preflect_reflact")
    assert cfg(preflect_episode_steps=None).step_budget("fever") == 5
    with pytest.raises(ValueError, match="is for react, not preflect_reflact"):
        from pathlib import Path

        sample = Path(__file__).resolve().parents[1] / "data" / "react_prompts_sample.json"
        run(cfg(paper_prompt_file=sample, paper_prompt_key="webthink_simple2"), [])
