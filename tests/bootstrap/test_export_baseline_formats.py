"""The ReAct paper's baselines as adapter step formats (its Figure 3): kept ReAct and ReflAct episodes converted into
Standard (the answer), CoT (the thoughts as one reasoning, then the answer) and Act (actions and observations), each
rendering exactly as an episode the loop collects in that method."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent.fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

from actune.agent import AgentConfig, run_episode
from actune.agent.render import instruction_for, render_messages, render_text, trajectory_prompt_context
from actune.bootstrap.config import ExportConfig
from actune.bootstrap.dataset_card import dataset_card
from actune.bootstrap.export import ExportError, convert_steps, export_rows
from actune.judge import judge, record_verdict
from actune.records.task_record import Task
from actune.records.trajectory import Step, TaskRecord, Trajectory, write_trajectories

TASK = Task(id="t1", question="Who makes the Walkman?", answer="Sony")
REACT_REPLIES = [" I need the maker of the Walkman.\nAction 1: search[Walkman]",
                 " It is made by Sony.\nAction 2: finish[Sony]"]
# what each method's loop is answered with to write the same episode as the ReAct one, less what it cannot write
NATIVE_REPLIES = {"act": [" search[Walkman]", " finish[Sony]"],
                  "cot": [" I need the maker of the Walkman. It is made by Sony.\nAnswer: Sony"],
                  "standard": [" Sony"]}
ACTIONS = FakeEnvironment().describe_actions()
QUESTION = "Question: Who makes the Walkman?\n"
EXPECTED = {
    "act": (instruction_for("act", "wiki", ACTIONS) + "\n" + QUESTION + "Action 1: search[Walkman]\n"
            "Observation 1: Walkman is a brand of portable audio players made by Sony.\nAction 2: finish[Sony]\n"),
    "cot": ("Solve a question answering task. Think step by step, then give the answer on a line starting with "
            "'Answer:'.\n" + QUESTION + "Thought: Let's think step by step. I need the maker of the Walkman. It is "
            "made by Sony.\nAnswer: Sony\n"),
    "standard": ("Solve a question answering task. Give the answer on a line starting with 'Answer:'.\n" + QUESTION
                 + "Answer: Sony\n"),
}


def loop_episode(method: str, replies: list[str]) -> tuple[Trajectory, ScriptedLLM]:
    llm = ScriptedLLM(list(replies))
    cfg = AgentConfig(method=method, regime="zero_shot", reprompt_action=False)
    traj = asyncio.run(run_episode(TASK, FakeEnvironment(), llm, cfg, scorer=exact_match_scorer, run_id="r"))
    return record_verdict(traj, judge(traj)), llm


@pytest.mark.parametrize("method", ["act", "cot", "standard"])
def test_a_react_episode_converts_into_what_the_loop_writes_in_each_baseline(method: str) -> None:
    react, _ = loop_episode("react", REACT_REPLIES)
    native, llm = loop_episode(method, NATIVE_REPLIES[method])
    out = convert_steps(react, method, instruction_for(method, "wiki", ACTIONS))
    text = render_text(trajectory_prompt_context(out), out.steps)
    assert text == EXPECTED[method]
    # exactly what the method's loop sent and its model wrote, and what a record of it renders
    assert text == llm.calls[-1].prompt + NATIVE_REPLIES[method][-1] + "\n"
    assert text == render_text(trajectory_prompt_context(native), native.steps)
    assert render_messages(trajectory_prompt_context(out), out.steps) == \
        render_messages(trajectory_prompt_context(native), native.steps)
    assert out.info["prompt"] == native.info["prompt"]
    assert [(s.type, s.text, s.iteration, s.action_name, s.action_arg) for s in out.steps] == \
        [(s.type, s.text, s.iteration, s.action_name, s.action_arg) for s in native.steps]
    assert (out.info["converted_from"], out.method, react.info["prompt"]["method"]) == ("react", "react", "react")


def hand_made_react() -> Trajectory:
    """A kept ReAct record with an unreadable action (answered by a format hint), an empty thought and an early
    exit's answer."""
    steps = [Step("thought", "I need to search\nthe Walkman.", 1, tokens=7, latency_s=0.5),
             Step("action", "look up Walkman", 1, tokens=3),
             Step("observation", "Invalid action: no action was given.", 1, tokens=8, meta={"format_hint": True}),
             Step("thought", "", 2, tokens=1, latency_s=0.25),
             Step("action", "search[Walkman]", 2, action_name="search", action_arg="Walkman", tokens=2,
                  meta={"reprompted": True}),
             Step("observation", "Walkman is made by Sony.", 2, tokens=6),
             Step("thought", "It is Sony.", 3, tokens=4, latency_s=0.25),
             Step("answer", "finish[Sony]", 3, action_name="finish", action_arg="Sony", tokens=2, latency_s=0.1,
                  meta={"early_exit": True})]
    t = Trajectory(task=TaskRecord("t1", "Who makes the Walkman?", "Sony"), method="react", steps=steps,
                   prediction="Sony", correct=True, run_id="r", episode_id="e1",
                   info={"prompt": {"method": "react", "env": "wiki", "instruction": instruction_for("react", "wiki",
                                                                                                      ACTIONS),
                                    "question": "Question: Who makes the Walkman?", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def test_hand_made_react_record_in_each_baseline_step_for_step() -> None:
    t = hand_made_react()
    before = t.to_dict()
    act = convert_steps(t, "act", instruction_for("act", "wiki", ACTIONS))
    assert act.steps == [t.steps[1], t.steps[2], t.steps[4], t.steps[5], t.steps[7]]  # tokens, meta kept
    assert render_text(trajectory_prompt_context(act), act.steps).removeprefix(
        instruction_for("act", "wiki", ACTIONS) + "\n" + QUESTION) == (
        "Action 1: look up Walkman\nObservation 1: Invalid action: no action was given.\n"
        "Action 2: search[Walkman]\nObservation 2: Walkman is made by Sony.\nAction 3: finish[Sony]\n")
    cot = convert_steps(t, "cot", instruction_for("cot", "wiki", ""))
    assert cot.steps == [
        Step("thought", "Let's think step by step. I need to search the Walkman. It is Sony.", 1, tokens=12,
             latency_s=1.0),
        Step("answer", "Sony", 1, action_name="answer", action_arg="Sony", tokens=2, latency_s=0.1,
             meta={"early_exit": True})]
    standard = convert_steps(t, "standard", instruction_for("standard", "wiki", ""))
    assert standard.steps == [Step("answer", "Sony", 1, action_name="answer", action_arg="Sony", tokens=2,
                                   latency_s=0.1, meta={"early_exit": True})]
    assert render_text(trajectory_prompt_context(standard), standard.steps) == EXPECTED["standard"]
    assert t.to_dict() == before  # the input is never changed


def reflact_record() -> Trajectory:
    steps = [Step("reflection", "Nothing is known yet; I need the maker.", 1, tokens=9, latency_s=0.3),
             Step("action", "search[Walkman]", 1, action_name="search", action_arg="Walkman", tokens=3),
             Step("observation", "Walkman is made by Sony.", 1, tokens=6),
             Step("reflection", "The maker is Sony: the goal is reached.", 2, tokens=10, latency_s=0.4),
             Step("answer", "FINAL ANSWER: Sony", 2, action_name="finish", action_arg="Sony", tokens=2)]
    t = Trajectory(task=TaskRecord("t1", "Who makes the Walkman?", "Sony"), method="reflact", steps=steps,
                   prediction="Sony", correct=True, run_id="r", episode_id="e2",
                   info={"prompt": {"method": "reflact", "env": "wiki",
                                    "instruction": instruction_for("reflact", "wiki", ACTIONS),
                                    "question": "Question: Who makes the Walkman?", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def test_a_reflact_record_converts_into_act_and_cot() -> None:
    t = reflact_record()
    act = convert_steps(t, "act", instruction_for("act", "wiki", ACTIONS))
    assert act.steps == [t.steps[1], t.steps[2], Step("answer", "finish[Sony]", 2, action_name="finish",
                                                      action_arg="Sony", tokens=2)]
    assert act.info["converted_from"] == "reflact"
    cot = convert_steps(t, "cot", instruction_for("cot", "wiki", ""))
    assert render_text(trajectory_prompt_context(cot), cot.steps).endswith(
        "Thought: Let's think step by step. Nothing is known yet; I need the maker. The maker is Sony: the goal is "
        "reached.\nAnswer: Sony\n")


def test_react_sparse_think_form_converts_into_act_without_its_thinks() -> None:
    """ALFWorld in ReAct's sparse form: thoughts are think: actions the game answers OK.; Act drops them and
    numbers its actions anew. There is no answer to give: CoT and Standard cannot be made."""
    steps = [Step("action", "think: the spraybottle is likely in the cabinet.", 1, action_name="think",
                  action_arg="the spraybottle is likely in the cabinet."),
             Step("observation", "OK.", 1),
             Step("action", "go to cabinet 1", 2, action_name="go", action_arg="to cabinet 1", tokens=4),
             Step("observation", "On the cabinet 1, you see a spraybottle 2.", 2),
             Step("action", "think: now I take it.", 3, action_name="think:", action_arg="now I take it."),
             Step("observation", "OK.", 3),
             Step("action", "take spraybottle 2 from cabinet 1", 4, action_name="take",
                  action_arg="spraybottle 2 from cabinet 1")]
    t = Trajectory(task=TaskRecord("g1", "put some spraybottle on toilet", "", env="alfworld"), method="react",
                   steps=steps, correct=True, run_id="r", episode_id="g1",
                   info={"prompt": {"method": "react", "env": "alfworld", "instruction": "x", "question": "room",
                                    "finish_action": None, "style": "sparse_think"}})
    act = convert_steps(t, "act", "the act instruction")
    assert [(s.iteration, s.text) for s in act.steps] == [
        (1, "go to cabinet 1"), (1, "On the cabinet 1, you see a spraybottle 2."),
        (2, "take spraybottle 2 from cabinet 1")]
    assert act.steps[0].tokens == 4 and "style" not in act.info["prompt"]
    assert render_text(trajectory_prompt_context(act), act.steps) == (
        "the act instruction\nroom\nAction 1: go to cabinet 1\nObservation 1: On the cabinet 1, you see a "
        "spraybottle 2.\nAction 2: take spraybottle 2 from cabinet 1\n")
    assert convert_steps(t, "cot", "i") is None and convert_steps(t, "standard", "i") is None


def direct_record(method: str) -> Trajectory:
    steps = ([Step("thought", "Let's think step by step. Sony makes it.", 1, tokens=8)] if method == "cot" else []) + \
        [Step("answer", "Sony", 1, action_name="answer", action_arg="Sony", tokens=1)]
    t = Trajectory(task=TaskRecord("t1", "Who makes the Walkman?", "Sony"), method=method, steps=steps,
                   prediction="Sony", correct=True, run_id="r", episode_id=f"{method}-1",
                   info={"prompt": {"method": method, "env": "wiki", "instruction": instruction_for(method, "wiki", ""),
                                    "question": "Question: Who makes the Walkman?", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def test_direct_answers_convert_into_act_and_standard_and_what_stays_unconvertible() -> None:
    for method in ("cot", "standard"):
        act = convert_steps(direct_record(method), "act", instruction_for("act", "wiki", ACTIONS))
        assert act.steps == [Step("answer", "finish[Sony]", 1, action_name="finish", action_arg="Sony", tokens=1)]
    standard = convert_steps(direct_record("cot"), "standard", "s")
    assert standard.steps == [Step("answer", "Sony", 1, action_name="answer", action_arg="Sony", tokens=1)]
    act_record = convert_steps(hand_made_react(), "act", "a")
    assert convert_steps(act_record, "react", "r") is None and convert_steps(act_record, "cot", "c") is None
    assert convert_steps(direct_record("standard"), "cot", "c") is None  # no reasoning is invented
    assert convert_steps(act_record, "standard", "s").steps[0].text == "Sony"


def react_store(path: Path) -> Path:
    """t1: two kept episodes (the second with other thoughts, the same actions: a duplicate for Act and Standard
    only) and a failed one; t2: one kept episode."""
    def episode(task: str, attempt: int, thought: str, answer: str, correct: bool = True) -> Trajectory:
        t = hand_made_react()
        t.task = TaskRecord(task, f"Question {task}?", answer)
        t.info["prompt"]["question"] = f"Question: Question {task}?"
        t.attempt, t.episode_id, t.correct, t.prediction = attempt, f"{task}-{attempt}", correct, answer
        t.steps[0].text, t.steps[-1].action_arg, t.steps[-1].text = thought, answer, f"finish[{answer}]"
        return record_verdict(t, judge(t))

    write_trajectories(path, [episode("t1", 0, "Look it up.", "Sony"), episode("t1", 1, "Entirely other words.", "Sony"),
                              episode("t2", 0, "Search.", "Zeiss", correct=False), episode("t2", 1, "Find.", "Sony")])
    return path


def test_one_episode_a_task_gives_every_format_the_same_episodes(tmp_path: Path) -> None:
    store = react_store(tmp_path / "react.jsonl")
    chosen = {}
    for fmt in ("react", "act", "cot", "standard"):
        rows, summary = export_rows(store, "text", ExportConfig(steps_method=fmt, max_per_task=1),
                                    actions={"wiki": ACTIONS})
        chosen[fmt] = [(r["task_id"], r["episode_id"]) for r in rows]
        counts = summary.methods["react"]
        assert {r["steps_method"] for r in rows} == {fmt} and counts.capped + counts.duplicates == 1
    assert chosen == {fmt: [("t1", "t1-0"), ("t2", "t2-1")] for fmt in chosen}
    # with two a task, Standard drops t1's second episode as a duplicate of its first: another data budget
    two = ExportConfig(steps_method="standard", max_per_task=2)
    assert [r["episode_id"] for r in export_rows(store, "text", two)[0]] == ["t1-0", "t2-1"]
    assert len(export_rows(store, "text", ExportConfig(steps_method="react", max_per_task=2))[0]) == 3


def test_act_needs_the_environments_actions_cot_and_standard_do_not(tmp_path: Path) -> None:
    store = react_store(tmp_path / "react.jsonl")
    for fmt in ("cot", "standard"):
        rows, _ = export_rows(store, "text", ExportConfig(steps_method=fmt))
        assert rows[0]["text"].startswith(instruction_for(fmt, "wiki", "") + "\nQuestion: Question t1?\n")
    with pytest.raises(ExportError, match="need converting into act steps"):
        export_rows(store, "text", ExportConfig(steps_method="act"))


@pytest.mark.parametrize("fmt, name, words", [
    ("act", "Act", "`act` (Act): `Action i: tool[argument]`, answered by `Observation i: ...`, with no thought"),
    ("cot", "CoT", "`cot` (CoT): one `Thought: Let's think step by step. ...` (the reasoning on one line)"),
    ("standard", "Standard", "`standard` (Standard): the answer alone, `Answer: answer`"),
])
def test_the_dataset_card_names_each_baseline_format(tmp_path: Path, fmt: str, name: str, words: str) -> None:
    rows, summary = export_rows(react_store(tmp_path / "react.jsonl"), "text", ExportConfig(steps_method=fmt),
                                actions={"wiki": ACTIONS})
    card = dataset_card(summary, rows, fmt="actune", data_files="data-*.arrow")
    assert f"# actune {name} agent trajectories" in card and words in card
