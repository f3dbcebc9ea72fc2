"""PreFlect driven by a ScriptedLLM over a FakeEnvironment: plan, critique, revision, re-planning."""

from __future__ import annotations

import asyncio
import json

import pytest

from actune.agent import AgentConfig, run_episode
from actune.agent.critique import extract_json_object, parse_critique
from actune.agent.planning_errors import CatalogError, load_catalog
from actune.agent.validate import step_order_problems
from actune.records.task_record import Task
from actune.records.trajectory import Step, Trajectory

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")
CATALOG = load_catalog()
PLAN = " 1. search[Walkman] for its maker. 2. search the maker for its founding year. 3. finish."
PASS = 'The plan finds the maker, then the year.", "verdict": "PASS", "errors": []}'
FAIL = ('It trusts the first page.", "verdict": "FAIL", "errors": ["Insufficient constraint verification", '
        '{"name": "shallow_content_verification"}, "made up"]}')
SOLVE = [" I need the maker.\nAction 1: search[Walkman]", " It is Sony.\nAction 2: search[Sony]",
         " Founded in 1946.\nAction 3: finish[1946]"]


def run(cfg: AgentConfig, replies, env=None) -> tuple[Trajectory, ScriptedLLM, FakeEnvironment]:
    llm = ScriptedLLM(replies)
    env = env or FakeEnvironment()
    traj = asyncio.run(run_episode(TASK, env, llm, cfg, scorer=exact_match_scorer))
    assert not llm.replies, f"{len(llm.replies)} scripted replies left unused"
    return traj, llm, env


def kinds(traj: Trajectory) -> list[str]:
    return [s.type for s in traj.steps]


def cfg(**kw) -> AgentConfig:
    return AgentConfig(method="preflect", **kw)


def test_default_catalog_is_the_papers_three_errors():
    assert [e.name for e in CATALOG.errors] == ["insufficient constraint verification", "ineffective tool selection",
                                                "shallow content verification"]
    assert all(e.description and e.failure_pattern and e.success_pattern for e in CATALOG.errors)
    assert CATALOG.find("Ineffective_Tool_Selection").name == "ineffective tool selection"
    assert CATALOG.find("2. shallow content verification error").name == "shallow content verification"
    assert CATALOG.find("hallucination") is None


def test_bad_catalog_names_file_and_key(tmp_path):
    p = tmp_path / "cat.json"
    p.write_text(json.dumps({"errors": [{"name": "x", "description": "d", "failure_pattern": "f"}]}))
    with pytest.raises(CatalogError, match=r"cat\.json: errors\[0\]\.success_pattern: must be a non-empty string"):
        load_catalog(p)
    p.write_text('{"errors": [\n')
    with pytest.raises(CatalogError, match=r"cat\.json:2: invalid JSON"):
        load_catalog(p)
    with pytest.raises(CatalogError, match="not found"):
        load_catalog(tmp_path / "missing.json")


def test_pass_path_records_plan_critique_then_react_steps():
    traj, llm, env = run(cfg(), [PLAN, PASS] + SOLVE)
    assert kinds(traj) == ["plan", "critique"] + ["thought", "action", "observation"] * 2 + ["thought", "answer"]
    assert [s.iteration for s in traj.steps] == [1, 1, 1, 1, 1, 2, 2, 2, 3, 3]
    assert traj.steps[0].text == PLAN.strip() and traj.steps[0].meta == {"initial": True}
    crit = traj.steps[1]
    assert crit.text == "PASS. The plan finds the maker, then the year."
    assert crit.meta["verdict"] == "PASS" and crit.meta["errors"] == [] and "parse_error" not in crit.meta
    assert traj.correct and traj.finish_reason == "answered" and traj.prediction == "1946"
    assert [str(a) for a in env.actions] == ["search[Walkman]", "search[Sony]", "finish[1946]"]
    # the agent's plan prompt: the preflect instruction (tools + re_plan) and the Plan label
    p0 = llm.calls[0].prompt
    assert "First write a Plan" in p0 and "re_plan[reason]" in p0 and "(1) search[entity]" in p0
    assert p0.endswith("Question: In which year was the company that makes the Walkman founded?\nPlan 1:")
    assert "Here are some examples." in p0 and "Thought 1:" in p0  # few-shot: the ReAct exemplars
    # ... each opened by a plan made of its own actions (answer left out) and a passing critique
    assert ("\nPlan 1: search[Walkman], then search[Sony], then finish[answer].\nCritique 1: PASS\nThought 1:"
            in p0), p0[:1500]
    assert llm.calls[0].stop == ["\n\n", "\nQuestion:", "\nCritique", "\nThought"]
    # the reflector's own prompt: catalog, task, tools, past actions, plan, JSON prefill
    p1 = llm.calls[1].prompt
    assert p1.startswith("You check an agent's plan before it acts.")
    assert "1. insufficient constraint verification:" in p1 and "Success pattern:" in p1
    assert f"Task: {TASK.question}\nTools:\n(1) search[entity]" in p1
    assert "Past actions:\n(none yet)\nPlan:\n" + PLAN.strip() + '\nJSON: {"analysis": "' in p1
    assert "Here are some examples." not in p1
    # acting sees plan and critique in context
    assert llm.calls[2].prompt.endswith(f"Plan 1: {PLAN.strip()}\nCritique 1: {crit.text}\nThought 1:")
    assert traj.info["preflect"] == {"plans": 1, "critiques": 1, "fails": 0, "revisions": 0, "re_plans": 0,
                                     "forced_re_plans": 0, "critique_retries": 0, "critique_parse_errors": 0}
    assert traj.usage.requests == 5 == len(llm.calls)
    assert step_order_problems(traj) == []
    assert traj.info["prompt"]["method"] == "preflect"
    assert Trajectory.from_json(traj.to_json()) == traj


def test_fail_path_has_the_reflector_revise_the_plan_and_check_the_revision():
    revised = " 1. search[Walkman]. 2. search the maker. 3. read its page and check the year. 4. finish."
    traj, llm, _ = run(cfg(), [PLAN, FAIL, revised, PASS] + SOLVE)
    assert kinds(traj)[:5] == ["plan", "critique", "plan", "critique", "thought"]
    crit = traj.steps[1]
    # at most two errors, catalog names, the unknown one kept apart
    assert crit.meta["verdict"] == "FAIL"
    assert crit.meta["errors"] == ["insufficient constraint verification", "shallow content verification"]
    assert crit.meta["unknown_errors"] == ["made up"]
    # each named error: what it is, what to avoid, what to do instead (the reflector's unknown name listed)
    icv, scv = CATALOG.errors[0], CATALOG.errors[2]
    assert crit.text == (
        "FAIL (insufficient constraint verification; shallow content verification; made up). "
        f"It trusts the first page. Insufficient constraint verification. {icv.description} "
        f"Avoid: {icv.failure_pattern} Instead: {icv.success_pattern} "
        f"Shallow content verification. {scv.description} Avoid: {scv.failure_pattern} Instead: {scv.success_pattern}")
    # the revision is the reflector's second turn, after its verdict (exact prompts: test_preflect_revise.py)
    assert llm.calls[2].prompt.startswith("You check an agent's plan before it acts.")
    assert llm.calls[2].prompt.endswith("\nRevised plan:")
    assert ('JSON: {"analysis": "It trusts the first page.", "verdict": "FAIL", "errors": ["insufficient constraint '
            'verification", "shallow content verification", "made up"]}\n\nRevise the plan.') in llm.calls[2].prompt
    assert traj.steps[2].text == revised.strip()
    assert traj.steps[2].meta == {"revision": 1, "errors": crit.meta["errors"], "reviser": "reflector"}
    # the revision is checked again, then the agent acts on it
    assert llm.calls[3].prompt == llm.calls[1].prompt.replace(f"Plan:\n{PLAN.strip()}\n", f"Plan:\n{revised.strip()}\n")
    assert traj.steps[3].text == "PASS. The plan finds the maker, then the year."
    assert llm.calls[4].prompt.endswith(f"Plan 1: {revised.strip()}\nCritique 1: {traj.steps[3].text}\nThought 1:")
    assert traj.info["preflect"] == {"plans": 2, "critiques": 2, "fails": 1, "revisions": 1, "re_plans": 0,
                                     "forced_re_plans": 0, "critique_retries": 0, "critique_parse_errors": 0}
    assert traj.correct and step_order_problems(traj) == []


def test_more_revisions_are_each_checked_until_pass():
    traj, llm, _ = run(cfg(preflect_max_revisions=2), [PLAN, FAIL, " plan two", PASS] + SOLVE)
    assert kinds(traj)[:5] == ["plan", "critique", "plan", "critique", "thought"]
    assert [s.meta.get("verdict") for s in traj.steps if s.type == "critique"] == ["FAIL", "PASS"]
    assert "Plan:\nplan two\n" in llm.calls[3].prompt
    assert step_order_problems(traj) == []


def test_zero_revisions_is_critique_only():
    traj, _, _ = run(cfg(preflect_max_revisions=0), [PLAN, FAIL] + SOLVE)
    assert kinds(traj)[:3] == ["plan", "critique", "thought"] and traj.correct


UNREADABLE = [
    ("I think the plan is fine", "verdict is None, not PASS or FAIL"),
    ('", "verdict": PASS}', "invalid JSON: Expecting value"),
    ('ok", "verdict": "MAYBE"}', "verdict is 'MAYBE', not PASS or FAIL"),
]


@pytest.mark.parametrize("reply, error", UNREADABLE)
def test_unreadable_critique_is_asked_again_then_counts_as_pass(reply, error):
    again, again_error = UNREADABLE[(UNREADABLE.index((reply, error)) + 1) % len(UNREADABLE)]
    traj, llm, _ = run(cfg(), [PLAN, reply, again] + SOLVE)
    crit = traj.steps[1]
    assert kinds(traj)[:3] == ["plan", "critique", "thought"]  # one critique step, no revision
    assert crit.meta["verdict"] == "PASS" and crit.text == "PASS"  # an unreadable answer's text is not shown
    assert crit.meta["parse_error"] == again_error and crit.meta["raw"] == '{"analysis": "' + again
    assert crit.meta["retry_of"] == {"parse_error": error, "raw": '{"analysis": "' + reply}
    # the second request is the first one, told why its answer could not be read
    first, second = llm.calls[1].prompt, llm.calls[2].prompt
    note = (f"\nYour previous answer could not be read ({error}). Answer with one JSON object only, with the keys "
            '"analysis", "verdict" ("PASS" or "FAIL") and "errors".')
    assert second == first.replace('\nJSON: {"analysis": "', note + '\nJSON: {"analysis": "')
    assert crit.tokens == len(reply.split()) + len(again.split())
    info = traj.info["preflect"]
    assert (info["critiques"], info["critique_retries"], info["critique_parse_errors"]) == (1, 1, 1) and traj.correct


def test_readable_retry_counts_and_its_fail_is_revised():
    traj, llm, _ = run(cfg(), [PLAN, "not json", FAIL, " revised", PASS] + SOLVE)
    crit = traj.steps[1]
    assert kinds(traj)[:5] == ["plan", "critique", "plan", "critique", "thought"]
    assert crit.meta["verdict"] == "FAIL" and "parse_error" not in crit.meta
    assert crit.meta["retry_of"]["parse_error"] == "verdict is None, not PASS or FAIL"
    info = traj.info["preflect"]
    assert (info["critique_retries"], info["critique_parse_errors"], info["fails"]) == (1, 0, 1)
    assert step_order_problems(traj) == []


def test_parse_critique_is_tolerant_and_never_evaluates():
    c = parse_critique('Sure!\n```json\n{"Analysis": "a {b}", "Verdict": "fail", "detected_errors": '
                       '[{"type": "ineffective tool selection", "root_cause": "x"}]}\n```', CATALOG)
    assert (c.verdict, c.analysis, c.errors, c.parse_error) == ("FAIL", "a {b}", ["ineffective tool selection"], None)
    # cut off by the token limit: the complete part is still read
    c = parse_critique('{"analysis": "too short", "verdict": "FAIL", "errors": ["insufficient constr', CATALOG)
    assert c.verdict == "FAIL" and c.errors == ["insufficient constraint verification"]
    assert parse_critique("[1, 2]", CATALOG).parse_error == "no JSON object in the critique"
    assert parse_critique('{"verdict": "PASS"]', CATALOG).parse_error == "no JSON object in the critique"
    assert parse_critique('{"verdict": __import__("os")}', CATALOG).parse_error.startswith("invalid JSON")
    assert extract_json_object('x {"a": "}"} y') == '{"a": "}"}'
    # PASS drops errors; more than two errors keep the first two
    assert parse_critique('{"verdict": "PASS", "errors": ["ineffective tool selection"]}', CATALOG).errors == []
    c = parse_critique(json.dumps({"verdict": "FAIL", "errors": [e.name for e in reversed(CATALOG.errors)]}), CATALOG)
    assert c.errors == ["shallow content verification", "ineffective tool selection"]


def test_re_plan_action_writes_a_new_checked_plan_instead_of_an_env_step():
    replies = [PLAN, PASS,
               " Search it.\nAction 1: search[Walkmen]",
               " Nothing.\nAction 2: re_plan[Tool Failure: search finds nothing]",
               " 1. search[Walkman] exactly. 2. search[Sony].", PASS,
               " Exact title.\nAction 3: search[Walkman]", " Sony.\nAction 4: search[Sony]",
               " 1946.\nAction 5: finish[1946]"]
    traj, llm, env = run(cfg(), replies)
    assert kinds(traj) == (["plan", "critique", "thought", "action", "observation", "thought", "action", "plan",
                            "critique"] + ["thought", "action", "observation"] * 2 + ["thought", "answer"])
    act = traj.steps[6]
    assert (act.action_name, act.action_arg) == ("re_plan", "Tool Failure: search finds nothing")
    assert traj.steps[7].iteration == 2 and traj.steps[7].meta == {"reason": "Tool Failure: search finds nothing"}
    assert [str(a) for a in env.actions] == ["search[Walkmen]", "search[Walkman]", "search[Sony]", "finish[1946]"]
    # the reflector sees the past actions with what they brought back
    p = llm.calls[5].prompt
    assert "Past actions:\n1. search[Walkmen] -> Could not find [Walkmen]." in p
    assert "\n2. re_plan[Tool Failure: search finds nothing]\nPlan:\n1. search[Walkman] exactly." in p
    assert llm.calls[6].prompt.endswith("Action 2: re_plan[Tool Failure: search finds nothing]\n"
                                        "Plan 2: 1. search[Walkman] exactly. 2. search[Sony].\n"
                                        "Critique 2: PASS. The plan finds the maker, then the year.\nThought 3:")
    assert traj.info["preflect"]["re_plans"] == 1 and traj.info["preflect"]["plans"] == 2
    assert traj.correct and step_order_problems(traj) == []


def _searches(n: int, start: int = 1) -> list[str]:
    return [f" Try.\nAction {i}: search[Page{i}]" for i in range(start, start + n)]


def test_forced_re_plan_at_step_6_when_none_happened():
    replies = [PLAN, PASS] + _searches(5) + [" new plan", PASS, " Done.\nAction 6: finish[1946]"]
    traj, llm, _ = run(cfg(preflect_episode_steps=8), replies)
    plans = [s for s in traj.steps if s.type == "plan"]
    assert [(p.iteration, p.meta) for p in plans] == [(1, {"initial": True}), (6, {"forced": True})]
    k = traj.steps.index(plans[1])
    assert [s.type for s in traj.steps[k - 1:k + 3]] == ["observation", "plan", "critique", "thought"]
    assert llm.calls[7].prompt.endswith("Observation 5: Could not find [Page5]. Similar: ['Danube', 'Rhine'].\n"
                                        "Plan 6:")
    assert traj.info["preflect"]["forced_re_plans"] == 1 and traj.info["preflect"]["re_plans"] == 0
    assert traj.correct and step_order_problems(traj) == []


def test_own_re_plan_in_the_window_skips_the_forced_one():
    # every=3: a re-plan at step 2 covers steps 1-3; none in 4-6 -> forced at 6
    replies = ([PLAN, PASS] + _searches(1) + [" Stuck.\nAction 2: re_plan[no luck]", " p2", PASS]
               + _searches(3, start=3) + [" p6", PASS, " Done.\nAction 6: finish[1946]"])
    traj, _, _ = run(cfg(preflect_force_replan_every=3, preflect_episode_steps=7), replies)
    plans = [(s.iteration, s.meta) for s in traj.steps if s.type == "plan"]
    assert plans == [(1, {"initial": True}), (2, {"reason": "no luck"}), (6, {"forced": True})]
    assert step_order_problems(traj) == []


def test_no_forced_re_plan_when_disabled():
    traj, _, _ = run(cfg(preflect_force_replan_every=0, preflect_episode_steps=6), [PLAN, PASS] + _searches(6))
    assert [s.type for s in traj.steps].count("plan") == 1 and traj.finish_reason == "max_steps"


def test_chat_wire_critique_is_a_user_turn_and_reflector_is_prefilled():
    traj, llm, _ = run(cfg(wire="chat", regime="zero_shot"), [PLAN, PASS] + SOLVE)
    assert traj.correct and step_order_problems(traj) == []
    refl = llm.calls[1]
    assert [m["role"] for m in refl.prompt] == ["system", "user", "assistant"]
    assert refl.prompt[2]["content"] == '{"analysis": "' and refl.extra_body["continue_final_message"] is True
    act = llm.calls[2].prompt
    assert act[-3:] == [{"role": "assistant", "content": f"Plan 1: {PLAN.strip()}"},
                        {"role": "user", "content": f"Critique 1: {traj.steps[1].text}"},
                        {"role": "assistant", "content": "Thought 1:"}]


def test_step_order_problems_catches_a_missing_plan():
    traj, _, _ = run(cfg(), [PLAN, PASS] + SOLVE)
    traj.steps = traj.steps[2:]
    assert step_order_problems(traj)[0] == "steps[0]: expected plan, got thought"
    traj.steps.insert(1, Step("critique", "PASS", 1))
    assert any("expected action, got critique" in p for p in step_order_problems(traj))


@pytest.mark.parametrize("wire", ["text", "chat"])
def test_export_trains_on_plans_not_on_the_reflectors_critiques(wire):
    from actune.bootstrap.export import chat_example, text_example

    traj, _, _ = run(cfg(wire=wire), [PLAN, FAIL, " revised plan", PASS] + SOLVE)
    if wire == "text":
        ex = text_example(traj)
        flags = [(seg["text"].split(":", 1)[0], seg["train"]) for seg in ex["segments"][1:]]
        # the agent's plan is trained; the reflector's critique and its revision of the plan are not
        assert flags[:5] == [("Plan 1", True), ("Critique 1", False), ("Plan 1", False), ("Critique 1", False),
                             ("Thought 1", True)]
        assert ("Action 1", True) in flags and ("Observation 1", False) in flags
    else:
        msgs = chat_example(traj)["messages"]
        assert [(m["role"], m["content"].split(":", 1)[0], m["train"]) for m in msgs[2:5]] == [
            ("assistant", "Plan 1", True), ("user", "Critique 1", False), ("assistant", "Plan 1", False)]
        assert all(m["train"] == (m["role"] == "assistant") for m in msgs[5:])


def test_paper_react_prompt_serves_preflect_under_its_own_instruction():
    from pathlib import Path

    sample = Path(__file__).resolve().parents[1] / "data" / "react_prompts_sample.json"
    c = cfg(paper_prompt_file=sample, paper_prompt_key="webthink_simple2")
    traj, llm, _ = run(c, [PLAN, PASS] + SOLVE)
    p = llm.calls[0].prompt
    assert p.startswith("Solve a question answering task. First write a Plan")
    assert "Question: Which river is longer, the Danube or the Rhine?\nThought 1:" in p and traj.correct
    with pytest.raises(ValueError, match="is for act, not preflect"):
        run(cfg(paper_prompt_file=sample, paper_prompt_key="webact_simple2"), [])


def test_event_order_plan_retry_revision_steps_and_forced_re_plans_at_6_and_12():
    """PreFlect's own budget (20 by default, not the wiki's 7) leaves room for the paper's two forced
    re-plans, at steps 6 and 12, and none after; each event in order, from a scripted model."""
    from actune.agent import iter_episode

    search = [f" Try.\nAction {i}: search[Page{i}]" for i in range(1, 21)]
    replies = ([PLAN, "not json", FAIL, " revised", PASS] + search[:5] + [" p6", PASS] + search[5:11]
               + [" p12", PASS] + search[11:])
    llm = ScriptedLLM(replies)

    async def events():
        return [ev async for ev in iter_episode(TASK, FakeEnvironment(), llm, cfg(), scorer=exact_match_scorer)]

    got = asyncio.run(events())
    assert not llm.replies
    step = ["thought", "action", "observation"]
    expected = [("starting", 0), ("iteration", 1), ("plan", 1), ("critique_retry", 1), ("critique", 1), ("plan", 1),
                ("critique", 1)]
    for i in range(1, 21):
        if i > 1:
            expected.append(("iteration", i))
        if i in (6, 12):
            expected += [("re_plan", i), ("plan", i), ("critique", i)]
        expected += [(t, i) for t in step]
    expected += [("max_iterations_reached", 20), ("done", 0)]
    assert [(ev.type, ev.iteration) for ev in got] == expected
    assert got[0].data["max_iterations"] == 20 and got[1].data["max_iterations"] == 20
    assert got[3].data == {"parse_error": "verdict is None, not PASS or FAIL"}
    assert [ev.data for ev in got if ev.type == "re_plan"] == [{"reason": "scheduled", "forced": True}] * 2
    assert got[4].data["text"].startswith("FAIL (insufficient constraint verification; shallow content verification")
    traj = got[-1].data["trajectory"]
    assert [(s.iteration, s.meta) for s in traj.steps if s.type == "plan"] == [
        (1, {"initial": True}), (1, {"revision": 1, "errors": ["insufficient constraint verification",
                                                               "shallow content verification"],
                                     "reviser": "reflector"}),
        (6, {"forced": True}), (12, {"forced": True})]
    # the reflector's revision turn sees the named errors' failure patterns, not only the success patterns
    revision_prompt = llm.calls[3].prompt
    assert revision_prompt.endswith(f"   Success pattern: {CATALOG.errors[2].success_pattern}\nRevised plan:")
    assert f"Errors to repair:\n1. {CATALOG.errors[0].name}: " in revision_prompt
    assert f"   Failure pattern: {CATALOG.errors[0].failure_pattern}" in revision_prompt
    assert traj.finish_reason == "max_steps" and step_order_problems(traj) == []
    assert traj.info["preflect"] == {"plans": 4, "critiques": 4, "fails": 1, "revisions": 1, "re_plans": 0,
                                     "forced_re_plans": 2, "critique_retries": 1, "critique_parse_errors": 0}


def test_preflect_budget_is_its_own_and_none_falls_back_to_the_envs():
    assert cfg().step_budget("wiki") == 20 and cfg().step_budget("fever") == 20
    assert cfg(episode_steps=4).step_budget("wiki") == 20  # episode_steps is the other methods' budget
    assert cfg(preflect_episode_steps=None).step_budget("fever") == 5
    assert cfg(preflect_episode_steps=None, episode_steps=4).step_budget("wiki") == 4
    assert AgentConfig(method="react", preflect_episode_steps=30).step_budget("wiki") == 7


def test_forced_re_plans_stop_after_the_configured_windows():
    replies = [PLAN, PASS] + _searches(1) + [" p2", PASS] + _searches(5, start=2)
    traj, _, _ = run(cfg(preflect_force_replan_every=2, preflect_force_replan_windows=1, preflect_episode_steps=6),
                     replies)
    assert [(s.iteration, s.meta) for s in traj.steps if s.type == "plan"] == [(1, {"initial": True}),
                                                                               (2, {"forced": True})]
    assert traj.finish_reason == "max_steps" and step_order_problems(traj) == []


def test_a_fail_naming_no_catalog_error_revises_with_every_entrys_failure_and_success_pattern():
    fail = 'It guesses.", "verdict": "FAIL", "errors": ["made up"]}'
    traj, llm, _ = run(cfg(), [PLAN, fail, " revised", PASS] + SOLVE)
    patterns = " ".join(f"Avoid: {e.failure_pattern} Instead: {e.success_pattern}" for e in CATALOG.errors)
    assert traj.steps[1].text == f"FAIL (made up). It guesses. Revise: {patterns}"
    # the reflector is asked to repair against every entry
    assert llm.calls[2].prompt.endswith(
        'JSON: {"analysis": "It guesses.", "verdict": "FAIL", "errors": ["made up"]}\n\nRevise the plan. Repair each '
        "error below: avoid its failure pattern, follow its success pattern, keep the steps that are sound and use "
        "only the tools listed. Write the revised plan only, as the plan was written.\nErrors to repair:\n"
        + CATALOG.render() + "\nRevised plan:")
