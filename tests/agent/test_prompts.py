"""Exemplars, rendering into each method's format, the ReAct repo's prompt files, PromptSpec."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from actune.agent import AgentConfig, PromptSpec, load_prompt_spec, run_episode, save_prompt_spec
from actune.agent.exemplars import ExemplarError, load_exemplars, load_paper_prompt, select_exemplars
from actune.agent.render import (
    build_prompt_context,
    render_exemplar,
    render_messages,
    render_text,
    resolve_exemplar_kinds,
)
from actune.config import ConfigError
from actune.records.task_record import Task
from actune.tasks.metrics import strip_citations

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
ACTIONS = FakeEnvironment().describe_actions()


def test_builtin_exemplar_sets():
    wiki = load_exemplars("wiki")
    assert len(wiki.exemplars) == 6
    assert {e.kind for e in wiki.exemplars} == {"single", "bridge", "comparison"}
    assert len(load_exemplars("fever").exemplars) == 3
    assert len(load_exemplars("docqa").exemplars) >= 2
    alf = load_exemplars("alfworld")
    assert len(alf.exemplars) == 6 and "ysymyth/ReAct" in alf.source
    for name in ("wiki", "fever", "docqa"):
        for e in load_exemplars(name).exemplars:
            last = e.steps[-1].action
            answer = strip_citations(last[len("finish["):-1]) if name == "docqa" else last[len("finish["):-1]
            assert last.startswith("finish[") and answer == e.answer, (name, e.question)
            assert all(s.thought and s.reflection for s in e.steps)
            assert all(s.observation for s in e.steps[:-1])


def test_select_by_kind():
    wiki = load_exemplars("wiki")
    assert [e.kind for e in select_exemplars(wiki, ["bridge"])] == ["bridge", "bridge"]
    assert len(select_exemplars(wiki, None, 4)) == 4
    with pytest.raises(ExemplarError, match="no exemplar of kinds"):
        select_exemplars(wiki, ["riddle"])


WIKI_QUESTIONS = {
    "bridge": ["In which year was the company that makes the Walkman founded?",
               "What instrument did the composer of the opera Carmen primarily study at the Paris Conservatoire?"],
    "comparison": ["Which river is longer, the Danube or the Rhine?",
                   "Were Alan Turing and Ada Lovelace of the same nationality?"],
}


def prompt_exemplar_questions(prompt: str, own_question: str) -> list[str]:
    """The exemplar questions of a text prompt, in order (its own question line left out)."""
    qs = [line.removeprefix("Question: ") for line in prompt.splitlines() if line.startswith("Question: ")]
    assert qs[-1] == own_question
    return qs[:-1]


def test_exemplar_kinds_task_matches_each_tasks_own_kind():
    """exemplar_kinds: [task] gives each episode the exemplars of its task's kind (the oracle prompt); a
    task without a kind gets them all."""
    cfg = AgentConfig(method="react", exemplar_set="wiki", exemplar_kinds=["task"])
    questions = {}
    for tid, kind in [("b", "bridge"), ("c", "comparison"), ("none", None)]:
        task = Task(tid, f"Question of task {tid}?", "1946", meta={} if kind is None else {"kind": kind})
        llm = ScriptedLLM(["I search.\nAction 1: finish[1946]"])
        traj = asyncio.run(run_episode(task, FakeEnvironment(), llm, cfg, scorer=exact_match_scorer))
        assert traj.correct and traj.model.exemplar_set == "wiki"
        questions[tid] = prompt_exemplar_questions(llm.calls[0].prompt, task.question)
    assert questions["b"] == WIKI_QUESTIONS["bridge"]
    assert questions["c"] == WIKI_QUESTIONS["comparison"]
    assert questions["none"] == [e.question for e in load_exemplars("wiki").exemplars]
    # beside a fixed kind and with num_exemplars: both kinds' exemplars, in file order, at most 3
    cfg2 = cfg.model_copy(update={"exemplar_kinds": ["single", "task"], "num_exemplars": 3})
    task = Task("c2", "Which is older?", "1946", meta={"kind": "comparison"})
    llm = ScriptedLLM(["I search.\nAction 1: finish[1946]"])
    asyncio.run(run_episode(task, FakeEnvironment(), llm, cfg2, scorer=exact_match_scorer))
    assert prompt_exemplar_questions(llm.calls[0].prompt, task.question) == [
        WIKI_QUESTIONS["comparison"][0], WIKI_QUESTIONS["comparison"][1],
        "In which city was the physicist Marie Curie born?"]


def test_resolve_exemplar_kinds():
    assert resolve_exemplar_kinds(None, "bridge") is None
    assert resolve_exemplar_kinds(["single"], "bridge") == ["single"]
    assert resolve_exemplar_kinds(["task"], "bridge") == ["bridge"]
    assert resolve_exemplar_kinds(["task", "bridge"], "bridge") == ["bridge"]
    assert resolve_exemplar_kinds(["single", "task"], "bridge") == ["single", "bridge"]
    assert resolve_exemplar_kinds(["task"], None) is None
    assert resolve_exemplar_kinds(["task", "single"], "") is None
    # a task kind the set has no exemplar of is an error, as a listed kind is
    with pytest.raises(ExemplarError, match=r"no exemplar of kinds \['riddle'\]"):
        build_prompt_context("react", "wiki", ACTIONS, "Who?", exemplar_kinds=["task"], task_kind="riddle")


def test_render_one_exemplar_in_every_method():
    ex = select_exemplars(load_exemplars("wiki"), ["single"], 1)[0]
    assert render_exemplar(ex, "standard", "wiki") == (
        "Question: In which city was the physicist Marie Curie born?\nAnswer: Warsaw\n")
    cot = render_exemplar(ex, "cot", "wiki")
    assert cot.splitlines()[1].startswith("Thought: Let's think step by step. Marie Curie was born in Warsaw")
    react = render_exemplar(ex, "react", "wiki").splitlines()
    assert [l.split(":")[0] for l in react] == ["Question", "Thought 1", "Action 1", "Observation 1", "Thought 2", "Action 2"]
    assert react[-1] == "Action 2: finish[Warsaw]"
    act = render_exemplar(ex, "act", "wiki").splitlines()
    assert [l.split(":")[0] for l in act] == ["Question", "Action 1", "Observation 1", "Action 2"]
    refl = render_exemplar(ex, "reflact", "wiki").splitlines()
    assert [l.split(":")[0] for l in refl] == ["Question", "Reflection 1", "Action 1", "Observation 1", "Reflection 2",
                                                "FINAL ANSWER"]
    assert refl[1].startswith("Reflection 1: Current state:")
    fever = load_exemplars("fever").exemplars[0]
    assert render_exemplar(fever, "standard", "fever") == "Claim: The Eiffel Tower is located in Berlin.\nAnswer: REFUTES\n"
    alf = load_exemplars("alfworld").exemplars[0]
    lines = render_exemplar(alf, "react", "alfworld", finish_action=None).splitlines()
    assert lines[1] == "Your task is to: put some spraybottle on toilet." and lines[3] == "Action 1: go to cabinet 1"


def test_zero_shot_has_instruction_and_question_only():
    ctx = build_prompt_context("react", "wiki", ACTIONS, "Who?", regime="zero_shot")
    text = render_text(ctx, [], "Thought 1:")
    assert text == ctx.instruction + "\nQuestion: Who?\nThought 1:"
    assert render_messages(ctx, []) == [{"role": "system", "content": ctx.instruction},
                                        {"role": "user", "content": "Question: Who?"}]


def test_loads_react_repo_prompt_format():
    f = DATA / "react_prompts_sample.json"
    assert load_paper_prompt(f, "webact_simple2")[0] == "act"
    assert load_paper_prompt(f, "cotqa_simple2")[0] == "cot"
    with pytest.raises(ExemplarError, match="no prompt key 'webthink_simple6'"):
        load_paper_prompt(f, "webthink_simple6")
    ctx = build_prompt_context("react", "wiki", ACTIONS, "Who?", paper_prompt=(str(f), "webthink_simple2"))
    text = render_text(ctx, [], "Thought 1:")
    assert text.startswith("Solve a question answering task with interleaving Thought, Action, Observation steps. "
                           "Thought can reason about the current situation, and Action can be three types: \n(1) Search[entity]")
    assert "Here are some examples.\nQuestion: Which river is longer" in text
    assert text.endswith("Action 2: Finish[Warsaw]\n\nQuestion: Who?\nThought 1:")
    fever = build_prompt_context("react", "fever", ACTIONS, "X is Y.", paper_prompt=(str(f), "webthink_simple1"))
    assert fever.instruction == "" and render_text(fever, []).startswith("Determine if there is Observation")
    assert render_text(fever, []).endswith("Action 2: Finish[SUPPORTS]\n\nClaim: X is Y.\n")
    with pytest.raises(ValueError, match="is for act, not react"):
        build_prompt_context("react", "wiki", ACTIONS, "Who?", paper_prompt=(str(f), "webact_simple2"))


def test_episode_with_paper_prompt_file():
    cfg = AgentConfig(method="act", paper_prompt_file=DATA / "react_prompts_sample.json", paper_prompt_key="webact_simple2")
    llm = ScriptedLLM(["Search[Sony]", "Finish[1946]"])
    traj = asyncio.run(run_episode(Task("t", "When was Sony founded?", "1946"), FakeEnvironment(), llm, cfg,
                                   scorer=exact_match_scorer))
    assert traj.correct and traj.model.exemplar_set == "webact_simple2"
    assert "Action 2: Finish[Warsaw]\n\nQuestion: When was Sony founded?\nAction 1:" in llm.calls[0].prompt


@pytest.mark.shared
@pytest.mark.skipif(not (SHARED / "data" / "react_prompts").is_dir(), reason="../shared absent")
def test_real_react_prompt_files():
    d = SHARED / "data" / "react_prompts"
    for key, method in [("webthink_simple6", "react"), ("webact_simple6", "act"), ("cotqa_simple6", "cot"),
                        ("webqa_simple6", "standard")]:
        got, text = load_paper_prompt(d / "prompts_naive.json", key)
        assert got == method and text.count("Question:") == 6
        ctx = build_prompt_context(method, "wiki", ACTIONS, "Who?", paper_prompt=(str(d / "prompts_naive.json"), key))
        assert render_text(ctx, []).endswith("\nQuestion: Who?\n")
    for key in ("webthink_simple3", "webact_simple3", "cotqa_simple3", "webqa_simple3"):
        got, text = load_paper_prompt(d / "fever.json", key)
        assert text.count("Claim:") == 3


def test_prompt_spec_round_trip_and_apply(tmp_path):
    spec = PromptSpec(method="reflact", regime="zero_shot", wire="chat")
    path = save_prompt_spec(spec, tmp_path / "adapter")
    assert path.name == "actune_prompt.json" and load_prompt_spec(tmp_path / "adapter") == spec
    cfg = spec.apply(AgentConfig(method="react", regime="few_shot", episode_steps=4, temperature=0.4))
    assert (cfg.method, cfg.regime, cfg.wire, cfg.episode_steps, cfg.temperature) == ("reflact", "zero_shot", "chat", 4, 0.4)
    assert PromptSpec.from_agent_config(cfg) == spec
    (tmp_path / "bad.json").write_text(json.dumps({"method": "react", "wire": "fax"}))
    with pytest.raises(ConfigError, match=r"bad\.json: invalid prompt spec: wire"):
        load_prompt_spec(tmp_path / "bad.json")


def test_docqa_exemplars_match_the_real_environment():
    """Every docqa exemplar action parses to an action the real DocQAEnv offers, and every observation
    is exactly what the env prints for it (on the tiny documents the exemplars were written from)."""
    from actune.agent.parser import parse_action
    from actune.envs.docqa_env import DocQAEnv

    env = DocQAEnv.from_folder(DATA / "agent" / "docqa")
    exemplars = load_exemplars("docqa").exemplars
    used = set()
    for ex in exemplars:
        env.reset(Task(id="ex", question=ex.question, env="docqa"))
        for s in ex.steps:
            action, error = parse_action(s.action, env.action_names, env.finish_action)
            assert error is None, (ex.question, s.action, error)
            used.add(action.name)
            result = env.step(action)
            if s.observation:
                assert result.observation == s.observation, (ex.question, s.action)
                assert result.info["sources"], s.action  # a real hit, not "No passage matches"
            else:  # the answer cites the sources it rests on; scoring strips the citations
                assert result.done and result.info["cited"] and strip_citations(result.info["answer"]) == ex.answer
    # the documented names (not the ReAct alias search[...]), so a model learns what describe_actions lists
    assert used == {"lexical_search", "finish"}


def test_assistant_turns_trained_flags_each_turn_between_observations():
    from actune.agent.render import assistant_turns_trained
    from actune.records.trajectory import Step

    revised = Step("plan", "p2", 0, meta={"reviser": "reflector"})
    steps = [Step("thought", "t", 1), Step("action", "search[a]", 1, action_name="search", action_arg="a"),
             Step("observation", "o", 1),
             Step("thought", "t", 2), Step("action", "", 2),  # unreadable: answered with a hint, not learnt
             Step("observation", "hint", 2),
             revised, Step("answer", "finish[a]", 3, action_name="finish", action_arg="a")]
    assert assistant_turns_trained(steps) == [True, False, False]
    assert assistant_turns_trained(steps[:3]) == [True]  # ends on an observation: no open turn
    assert assistant_turns_trained([]) == []
