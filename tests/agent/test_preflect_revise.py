"""PreFlect as the paper runs it (issue #37): on FAIL the reflector writes the revised plan in a second turn of
its conversation and checks the revision again; a distilled catalog's examples reach the reflector's prompts;
``preflect_episode_steps: null`` gives every method the same step budget. Exact prompts, from a ScriptedLLM."""

from __future__ import annotations

import asyncio
import json

import pytest

from actune.agent import AgentConfig, iter_episode, run_episode
from actune.agent.method_registry import method_names
from actune.agent.planning_errors import CatalogError, ErrorExample, load_catalog
from actune.agent.validate import step_order_problems
from actune.bootstrap.distill_errors import DistillConfig, distill_errors
from actune.records.task_record import Task
from actune.records.trajectory import Trajectory

from .fake_episodes import RIGHT, WALKMAN, WRONG_EARLY, WRONG_LATE, scripted_store
from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")
CATALOG = load_catalog()
ICV = CATALOG.errors[0]
PLAN = "1. search[Walkman] for its maker. 2. search the maker for its founding year. 3. finish."
REVISED = "1. search[Walkman]. 2. search[Sony] and read its founding year. 3. finish."
FAIL = 'It trusts the first page.", "verdict": "FAIL", "errors": ["insufficient constraint verification"]}'
FAIL_JSON = ('{"analysis": "It trusts the first page.", "verdict": "FAIL", "errors": ["insufficient constraint '
             'verification"]}')
PASS = 'Every condition is checked.", "verdict": "PASS", "errors": []}'
SOLVE = [" I need the maker.\nAction 1: search[Walkman]", " It is Sony.\nAction 2: search[Sony]",
         " Founded in 1946.\nAction 3: finish[1946]"]
TOOLS = ("(1) search[entity], which returns the first paragraph of the entity's page.\n"
         "(2) lookup[keyword], which returns the next sentence containing the keyword.\n"
         "(3) finish[answer], which returns the answer and finishes the task.")
REQUEST = f"Task: {TASK.question}\nTools:\n{TOOLS}\nPast actions:\n(none yet)\nPlan:\n"
REVISE = ("Revise the plan. Repair each error below: avoid its failure pattern, follow its success pattern, keep the "
          "steps that are sound and use only the tools listed. Write the revised plan only, as the plan was written.\n"
          "Errors to repair:\n"
          f"1. insufficient constraint verification: {ICV.description}\n"
          f"   Failure pattern: {ICV.failure_pattern}\n"
          f"   Success pattern: {ICV.success_pattern}")
FAIL_LINE = (f"FAIL (insufficient constraint verification). It trusts the first page. Insufficient constraint "
             f"verification. {ICV.description} Avoid: {ICV.failure_pattern} Instead: {ICV.success_pattern}")


def run(cfg: AgentConfig, replies, task: Task = TASK) -> tuple[Trajectory, ScriptedLLM]:
    llm = ScriptedLLM(replies)
    traj = asyncio.run(run_episode(task, FakeEnvironment(), llm, cfg, scorer=exact_match_scorer))
    assert not llm.replies, f"{len(llm.replies)} scripted replies left unused"
    return traj, llm


def cfg(**kw) -> AgentConfig:
    return AgentConfig(method="preflect", **kw)


def instruction(catalog_text: str) -> str:
    return ("You check an agent's plan before it acts. Diagnose the plan against the catalog of planning errors "
            "below, keeping in mind what the tools can and cannot do. Report at most the two most critical errors, "
            'as root causes. Answer with one JSON object with the keys "analysis" (one or two sentences), "verdict" '
            '("PASS" or "FAIL") and "errors" (at most two catalog error names; [] for PASS), e.g. {"analysis": '
            '"The plan answers with the first match and never checks it against the question.", "verdict": "FAIL", '
            '"errors": ["insufficient constraint verification"]}\n\n'
            f"Catalog of planning errors:\n{catalog_text}")


def test_the_reflector_revises_a_failed_plan_and_checks_the_revision():
    traj, llm = run(cfg(), [f" {PLAN}", FAIL, f" {REVISED}", PASS] + SOLVE)
    assert [(s.type, s.text, s.meta.get("verdict"), s.meta.get("reviser")) for s in traj.steps[:5]] == [
        ("plan", PLAN, None, None), ("critique", FAIL_LINE, "FAIL", None), ("plan", REVISED, None, "reflector"),
        ("critique", "PASS. Every condition is checked.", "PASS", None), ("thought", "I need the maker.", None, None)]
    assert traj.steps[2].meta == {"revision": 1, "errors": ["insufficient constraint verification"],
                                  "reviser": "reflector"}
    head = instruction(CATALOG.render())
    assert llm.calls[1].prompt == f'{head}\n\n{REQUEST}{PLAN}\nJSON: {{"analysis": "'
    # the revision: the critique's conversation, its verdict as read, then the revision turn
    assert llm.calls[2].prompt == f"{head}\n\n{REQUEST}{PLAN}\nJSON: {FAIL_JSON}\n\n{REVISE}\nRevised plan:"
    assert llm.calls[2].stop == ["\n\n", "\nQuestion:", "\nTask:", "\nJSON:"]
    # checked again as any plan is
    assert llm.calls[3].prompt == f'{head}\n\n{REQUEST}{REVISED}\nJSON: {{"analysis": "'
    # the agent acts on the revised, checked plan
    assert llm.calls[4].prompt.endswith(f"Question: {TASK.question}\nPlan 1: {PLAN}\nCritique 1: {FAIL_LINE}\n"
                                        f"Plan 1: {REVISED}\nCritique 1: PASS. Every condition is checked.\nThought 1:")
    assert traj.info["preflect"] == {"plans": 2, "critiques": 2, "fails": 1, "revisions": 1, "re_plans": 0,
                                     "forced_re_plans": 0, "critique_retries": 0, "critique_parse_errors": 0}
    assert traj.correct and step_order_problems(traj) == []


def test_a_revision_that_fails_again_stands_once_the_revisions_are_spent():
    traj, llm = run(cfg(), [f" {PLAN}", FAIL, f" {REVISED}", FAIL] + SOLVE)
    assert [s.type for s in traj.steps[:5]] == ["plan", "critique", "plan", "critique", "thought"]
    assert [s.meta.get("verdict") for s in traj.steps if s.type == "critique"] == ["FAIL", "FAIL"]
    assert llm.calls[4].prompt.endswith(f"Plan 1: {REVISED}\nCritique 1: {FAIL_LINE}\nThought 1:")
    info = traj.info["preflect"]
    assert (info["plans"], info["critiques"], info["fails"], info["revisions"]) == (2, 2, 2, 1)


def test_each_of_more_revisions_continues_the_conversation_about_the_plan_before_it():
    traj, llm = run(cfg(preflect_max_revisions=2), [f" {PLAN}", FAIL, " second", FAIL, f" {REVISED}", PASS] + SOLVE)
    assert [(s.type, s.text) for s in traj.steps[:6]] == [
        ("plan", PLAN), ("critique", FAIL_LINE), ("plan", "second"), ("critique", FAIL_LINE), ("plan", REVISED),
        ("critique", "PASS. Every condition is checked.")]
    assert [s.meta["revision"] for s in traj.steps if "revision" in s.meta] == [1, 2]
    head = instruction(CATALOG.render())
    assert llm.calls[4].prompt == f"{head}\n\n{REQUEST}second\nJSON: {FAIL_JSON}\n\n{REVISE}\nRevised plan:"
    assert llm.calls[5].prompt == f'{head}\n\n{REQUEST}{REVISED}\nJSON: {{"analysis": "'


@pytest.mark.parametrize("prefill", [True, False])
def test_chat_wire_revision_is_the_reflectors_second_turn(prefill):
    # unprefilled, the reflector writes its whole JSON
    fail, ok = (FAIL, PASS) if prefill else (FAIL_JSON, '{"analysis": "' + PASS)
    traj, llm = run(cfg(wire="chat", regime="zero_shot", chat_prefill=prefill),
                    [f" {PLAN}", fail, f" {REVISED}", ok] + SOLVE)
    turns = [{"role": "system", "content": instruction(CATALOG.render())},
             {"role": "user", "content": REQUEST + PLAN},
             {"role": "assistant", "content": FAIL_JSON},
             {"role": "user", "content": REVISE}]
    call = llm.calls[2]
    if prefill:
        assert call.prompt == turns + [{"role": "assistant", "content": "Revised plan:"}]
        assert call.extra_body == {"continue_final_message": True, "add_generation_prompt": False}
    else:
        assert call.prompt == turns and call.extra_body is None
    assert traj.steps[2].text == REVISED and traj.correct


def test_the_agent_writes_the_revision_with_reviser_agent_and_it_is_checked_too():
    traj, llm = run(cfg(preflect_reviser="agent"), [f" {PLAN}", FAIL, f" {REVISED}", PASS] + SOLVE)
    assert llm.calls[2].prompt.endswith(f"Plan 1: {PLAN}\nCritique 1: {FAIL_LINE}\nPlan 1:")
    assert llm.calls[2].stop == ["\n\n", "\nQuestion:", "\nCritique", "\nThought"]
    assert traj.steps[2].meta == {"revision": 1, "errors": ["insufficient constraint verification"],
                                  "reviser": "agent"}
    assert llm.calls[3].prompt == f'{instruction(CATALOG.render())}\n\n{REQUEST}{REVISED}\nJSON: {{"analysis": "'
    assert [s.type for s in traj.steps[:5]] == ["plan", "critique", "plan", "critique", "thought"] and traj.correct


# --- a distilled catalog's examples -------------------------------------------------------------------------------

ICV_EXAMPLE = ("The failed episode read the pages the correct one read ('Walkman') but answered 'Panasonic' instead "
               "of 'Sony', without checking it against the question.")
SCV_EXAMPLE = ("The failed episode answered 'Panasonic' without reading 'Walkman', which the correct episode read "
               "before answering 'Sony'.")


@pytest.fixture
def distilled(tmp_path):
    """A catalog written by ``actune distill-errors --diagnoser rules`` from a store with one right and two wrong
    episodes of one task: one example per entry, in its ``evidence``."""
    store = tmp_path / "trajectories.jsonl"
    scripted_store(store, [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE), (WALKMAN, WRONG_EARLY)])
    out = tmp_path / "catalog.json"
    asyncio.run(distill_errors([store], out, DistillConfig(diagnoser="rules", min_support=1), log=lambda _: None))
    return out


def test_a_distilled_catalogs_examples_are_loaded_with_their_entries(distilled):
    catalog = load_catalog(distilled)
    scv = CATALOG.errors[2]
    assert [(e.name, e.examples) for e in catalog.errors] == [
        ("insufficient constraint verification", (ErrorExample("Which company makes the Walkman?", ICV_EXAMPLE),)),
        ("shallow content verification", (ErrorExample("Which company makes the Walkman?", SCV_EXAMPLE),))]
    assert catalog.render() == (
        f"1. insufficient constraint verification: {ICV.description}\n"
        f"   Failure pattern: {ICV.failure_pattern}\n"
        f"   Success pattern: {ICV.success_pattern}\n"
        f'   Example on "Which company makes the Walkman?": {ICV_EXAMPLE}\n'
        f"2. shallow content verification: {scv.description}\n"
        f"   Failure pattern: {scv.failure_pattern}\n"
        f"   Success pattern: {scv.success_pattern}\n"
        f'   Example on "Which company makes the Walkman?": {SCV_EXAMPLE}')


def test_the_examples_reach_the_critique_and_the_revision(distilled):
    catalog = load_catalog(distilled)
    traj, llm = run(cfg(preflect_catalog=distilled), [f" {PLAN}", FAIL, f" {REVISED}", PASS] + SOLVE)
    head = instruction(catalog.render())
    assert llm.calls[1].prompt == f'{head}\n\n{REQUEST}{PLAN}\nJSON: {{"analysis": "'
    # the revision turn shows the named error with its example
    revise = REVISE + f'\n   Example on "Which company makes the Walkman?": {ICV_EXAMPLE}'
    assert llm.calls[2].prompt == f"{head}\n\n{REQUEST}{PLAN}\nJSON: {FAIL_JSON}\n\n{revise}\nRevised plan:"
    assert traj.steps[2].text == REVISED and traj.correct


def test_a_hand_written_entry_may_hold_examples_and_bad_ones_are_named(tmp_path):
    entry = {"name": "unchecked year", "description": "d.", "failure_pattern": "f.", "success_pattern": "s.",
             "examples": [{"question": "When?", "analysis": "The failed run  answered\n1900.", "task_id": "t9"}]}
    p = tmp_path / "cat.json"
    p.write_text(json.dumps({"errors": [entry]}))
    assert load_catalog(p).errors[0].examples == (ErrorExample("When?", "The failed run answered 1900."),)
    bad = [({"errors": [{**entry, "examples": [{"question": "When?"}]}]},
            r"cat\.json: errors\[0\]\.examples\[0\]\.analysis: must be a non-empty string"),
           ({"errors": [{**entry, "examples": "none"}]}, r"cat\.json: errors\[0\]\.examples: must be a list"),
           ({"errors": [entry], "evidence": [{"error": "made up", "examples": []}]},
            r"cat\.json: evidence\[0\]\.error: 'made up' names no entry of 'errors'"),
           ({"errors": [entry], "evidence": {"error": "unchecked year"}}, r"cat\.json: evidence: must be a list")]
    for data, message in bad:
        p.write_text(json.dumps(data))
        with pytest.raises(CatalogError, match=message):
            load_catalog(p)


# --- the same step budget for every method --------------------------------------------------------------------

def test_preflect_episode_steps_null_gives_every_method_the_same_budget():
    for env in ("wiki", "fever", "docqa"):
        budgets = {m: AgentConfig(method=m, preflect_episode_steps=None).step_budget(env) for m in method_names()}
        assert set(budgets.values()) == {AgentConfig().step_budget(env)}, (env, budgets)
    assert AgentConfig.model_validate({"method": "preflect", "preflect_episode_steps": None}).step_budget("wiki") == 7


def test_a_preflect_episode_at_the_react_budget_says_so_in_its_events():
    async def events():
        llm = ScriptedLLM([f" {PLAN}", PASS] + SOLVE)
        return [e async for e in iter_episode(TASK, FakeEnvironment(), llm, cfg(preflect_episode_steps=None),
                                              scorer=exact_match_scorer)]

    got = asyncio.run(events())
    assert [(e.type, e.iteration, e.data) for e in got if e.type in ("starting", "iteration")] == [
        ("starting", 0, {"task_id": "t1", "goal": TASK.question, "method": "preflect", "max_iterations": 7}),
        ("iteration", 1, {"goal": TASK.question, "max_iterations": 7, "max": 7}),
        ("iteration", 2, {"goal": TASK.question, "max_iterations": 7, "max": 7}),
        ("iteration", 3, {"goal": TASK.question, "max_iterations": 7, "max": 7})]
