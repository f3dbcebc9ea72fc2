"""Loop control driven by a ScriptedLLM over a FakeEnvironment: exact steps, finish reasons, events."""

from __future__ import annotations

import asyncio

import pytest

from actune.agent import AgentConfig, iter_episode, run_episode
from actune.agent.episode import episode_seed, truncate_observation
from actune.envs.alfworld_env import VERBS
from actune.envs.base import Environment
from actune.llm import ContextLengthError, ServerError
from actune.records.task_record import Task
from actune.records.trajectory import Trajectory

from .fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

TASK = Task(id="t1", question="In which year was the company that makes the Walkman founded?", answer="1946")


def run(cfg: AgentConfig, replies, env=None, task=TASK, **kw) -> tuple[Trajectory, ScriptedLLM, FakeEnvironment]:
    llm = ScriptedLLM(replies)
    env = env or FakeEnvironment()
    traj = asyncio.run(run_episode(task, env, llm, cfg, scorer=exact_match_scorer, **kw))
    return traj, llm, env


def kinds(traj: Trajectory) -> list[str]:
    return [s.type for s in traj.steps]


def test_react_solves_and_records_every_step():
    traj, llm, env = run(AgentConfig(method="react"), [
        " I need the maker of the Walkman.\nAction 1: Search[Walkman]\nObservation 1: invented text",
        " It is made by Sony.\nAction 2: search[Sony]",
        " Sony was founded in 1946.\nAction 3: finish[1946]",
    ])
    assert kinds(traj) == ["thought", "action", "observation"] * 2 + ["thought", "answer"]
    assert traj.steps[1].action_name == "search" and traj.steps[1].action_arg == "Walkman"
    # the made-up observation is dropped: the recorded one comes from the environment
    assert traj.steps[2].text == "Walkman is a brand of portable audio players made by Sony."
    assert traj.prediction == "1946" and traj.correct and traj.scores == {"em": 1.0}
    assert traj.finish_reason == "answered"
    assert [str(a) for a in env.actions] == ["search[Walkman]", "search[Sony]", "finish[1946]"]
    assert traj.info["env_info"]["titles"] == ["Walkman", "Sony"]
    # the third prompt is the paper's format: head, steps so far, next label
    p = llm.calls[2].prompt
    assert p.endswith("Thought 1: I need the maker of the Walkman.\nAction 1: Search[Walkman]\n"
                      "Observation 1: Walkman is a brand of portable audio players made by Sony.\n"
                      "Thought 2: It is made by Sony.\nAction 2: search[Sony]\n"
                      "Observation 2: Sony is a Japanese company. It was founded in 1946.\nThought 3:")
    assert "Question: In which year was the company" in p and "Here are some examples." in p
    assert llm.calls[0].stop == ["\nObservation", "\nQuestion:", "\n\n", "\nThought"]
    assert traj.usage.requests == 3 and traj.usage.completion_tokens > 0 and traj.usage.prompt_tokens > 0
    assert traj.sampling.seed == episode_seed(0, "t1", 0) == env.resets[0][1]
    assert Trajectory.from_json(traj.to_json()) == traj


def test_step_budget_ends_with_max_steps():
    traj, llm, _ = run(AgentConfig(method="react", episode_steps=2), [
        " a\nAction 1: search[Nowhere]", " b\nAction 2: search[Elsewhere]"])
    assert traj.finish_reason == "max_steps" and traj.prediction is None and not traj.correct
    assert len(llm.calls) == 2 and kinds(traj) == ["thought", "action", "observation"] * 2


def test_budget_defaults_and_multihop_rule():
    assert AgentConfig().step_budget("wiki") == 7
    assert AgentConfig().step_budget("fever") == 5
    assert AgentConfig(multihop=True).step_budget("wiki") == 9
    assert AgentConfig(multihop=True, episode_steps=9).step_budget("wiki") == 10


def test_repetition_ends_episode_on_third_identical_action():
    replies = [f" again\nAction {i}: search[Sony]" for i in range(1, 4)]
    traj, llm, env = run(AgentConfig(method="react"), replies)
    assert traj.finish_reason == "repetition"
    assert len(env.actions) == 2  # the third one is recorded but not executed
    assert kinds(traj)[-1] == "action" and traj.steps[-1].action_arg == "Sony"


def test_parse_errors_after_k_consecutive_failures_with_format_hint():
    replies = [" t\nAction 1: dance[x]", " t\nAction 2: Search[X", " t\nAction 3: jump"]
    traj, llm, env = run(AgentConfig(method="react", max_parse_errors=3), replies)
    assert traj.finish_reason == "parse_errors" and traj.info["parse_errors"] == 3
    obs = [s for s in traj.steps if s.type == "observation"]
    assert len(obs) == 3 and all(o.meta.get("format_hint") for o in obs)
    assert obs[0].text.startswith("Invalid action: unknown action 'dance'")
    assert "search[...], lookup[...], finish[...]" in obs[0].text
    assert env.actions == []
    # the hint goes back to the model as the observation
    assert "Observation 1: Invalid action" in llm.calls[1].prompt


def test_parse_error_counter_resets_after_a_good_step():
    replies = [" t\nAction 1: dance[x]", " t\nAction 2: search[Sony]", " t\nAction 3: dance[y]",
               " t\nAction 4: finish[1946]"]
    traj, _, _ = run(AgentConfig(method="react", max_parse_errors=2), replies)
    assert traj.finish_reason == "answered" and traj.info["parse_errors"] == 2


def test_reprompt_with_action_label_when_thought_has_no_action():
    traj, llm, _ = run(AgentConfig(method="react"), [" I should search Sony.\nIt is a company.", " Search[Sony]\n",
                                                       " done\nAction 2: finish[1946]"])
    assert llm.calls[1].prompt.endswith("Thought 1: I should search Sony.\nAction 1:")
    assert llm.calls[1].stop == ["\n", "\nQuestion:"]
    assert traj.steps[1].action_arg == "Sony" and traj.steps[1].meta == {"reprompted": True}
    assert traj.correct


def test_no_reprompt_when_disabled_counts_a_parse_error():
    traj, llm, _ = run(AgentConfig(method="react", reprompt_action=False, max_parse_errors=1), [" no action here"])
    assert traj.finish_reason == "parse_errors" and len(llm.calls) == 1


def test_context_overflow_and_server_error_end_cleanly():
    traj, _, _ = run(AgentConfig(method="react"), [" t\nAction 1: search[Sony]", ContextLengthError("too long")])
    assert traj.finish_reason == "context_overflow" and kinds(traj) == ["thought", "action", "observation"]
    assert "too long" in traj.info["error"]
    traj, _, _ = run(AgentConfig(method="react"), [ServerError("boom")])
    assert traj.finish_reason == "server_error" and traj.steps == []


def test_act_has_no_thoughts():
    traj, llm, _ = run(AgentConfig(method="act"), ["Search[Sony]", "Action 2: finish[1946]"])
    assert kinds(traj) == ["action", "observation", "answer"] and traj.correct
    assert llm.calls[1].prompt.endswith("Action 1: Search[Sony]\nObservation 1: Sony is a Japanese company. "
                                        "It was founded in 1946.\nAction 2:")
    assert "Thought" not in llm.calls[1].prompt.split("Question: In which")[-1]


def test_reflact_accepts_thought_label_and_final_answer():
    traj, llm, env = run(AgentConfig(method="reflact"), [
        " Current state: nothing. Latest discovery: none. Goal relation: need maker.\nACTION: search[Walkman]",
        " THOUGHT: Walkman is by Sony; need year.\nAction 2: search[Sony]",
        " Sony founded 1946; goal reached.\nFINAL ANSWER: 1946",
    ])
    assert kinds(traj) == ["reflection", "action", "observation"] * 2 + ["reflection", "answer"]
    assert traj.steps[3].text == "Walkman is by Sony; need year."
    assert traj.prediction == "1946" and traj.correct
    assert str(env.actions[-1]) == "finish[1946]"  # the env is told the answer too
    assert llm.calls[2].prompt.endswith("Reflection 3:")
    assert llm.calls[0].stop == ["\nObservation", "\nQuestion:", "\n\n", "\nReflection"]
    assert "(3) the relation to the goal" in llm.calls[0].prompt
    assert "FINAL ANSWER: 1946" in llm.calls[0].prompt  # exemplars end with FINAL ANSWER


def test_standard_and_cot():
    traj, llm, _ = run(AgentConfig(method="standard"), [" 1946\n"])
    assert kinds(traj) == ["answer"] and traj.prediction == "1946" and traj.correct
    assert llm.calls[0].prompt.endswith("Question: In which year was the company that makes the Walkman founded?\nAnswer:")
    traj, llm, _ = run(AgentConfig(method="cot"), [" Walkman is by Sony, founded 1946.\nAnswer: 1946"])
    assert kinds(traj) == ["thought", "answer"] and traj.correct
    assert traj.steps[0].text == "Let's think step by step. Walkman is by Sony, founded 1946."
    assert llm.calls[0].prompt.endswith("Thought: Let's think step by step.")


def test_cot_sc_majority_vote_and_seeds():
    replies = [" a\nAnswer: 1946", " b\nAnswer: 1950", " c\nAnswer: The 1946.", " d\nno answer", " e\nAnswer: 1950"]
    traj, llm, _ = run(AgentConfig(method="cot_sc", cot_sc_n=5), replies)
    assert traj.info["cot_sc"]["votes"] == {"1946": 2, "1950": 2}
    assert traj.prediction == "1946"  # tie goes to the answer seen first
    assert traj.info["cot_sc"]["majority_votes"] == 2
    assert {c.sampling.temperature for c in llm.calls} == {0.7}
    assert len({c.sampling.seed for c in llm.calls}) == 5
    assert traj.sampling.temperature == 0.7


def test_react_cotsc_backs_off_when_react_gives_no_answer():
    replies = [" t\nAction 1: search[Nowhere]", " a\nAnswer: 1946", " b\nAnswer: 1946", " c\nAnswer: 1900"]
    traj, llm, _ = run(AgentConfig(method="react_cotsc", episode_steps=1, cot_sc_n=3), replies)
    assert traj.prediction == "1946" and traj.correct and traj.finish_reason == "answered"
    phases = traj.info["phases"]
    assert [p["method"] for p in phases] == ["react", "cot_sc"]
    assert phases[0]["finish_reason"] == "max_steps" and len(phases[0]["steps"]) == 3
    assert kinds(traj) == ["thought", "answer"]
    assert Trajectory.from_json(traj.to_json()) == traj


def test_react_cotsc_keeps_react_answer():
    traj, llm, _ = run(AgentConfig(method="react_cotsc", cot_sc_n=3), [" t\nAction 1: finish[1946]"])
    assert len(llm.calls) == 1 and traj.info["phases"] == [{"method": "react", "finish_reason": "answered"}]


def test_cotsc_react_backs_off_below_half_the_votes():
    replies = [" a\nAnswer: 1", " b\nAnswer: 2", " c\nAnswer: 3", " t\nAction 1: finish[1946]"]
    traj, llm, _ = run(AgentConfig(method="cotsc_react", cot_sc_n=3), replies)
    assert [p["method"] for p in traj.info["phases"]] == ["cot_sc", "react"]
    assert traj.info["phases"][0]["prediction"] == "1"
    assert kinds(traj) == ["thought", "answer"] and traj.prediction == "1946"
    # with a clear majority (2 of 3 >= 1.5) it keeps the CoT-SC answer
    traj, llm, _ = run(AgentConfig(method="cotsc_react", cot_sc_n=3),
                       [" a\nAnswer: 1946", " b\nAnswer: 1946", " c\nAnswer: 3"])
    assert len(llm.calls) == 3 and traj.prediction == "1946"


def test_early_exit_on_confident_retrieval():
    env = FakeEnvironment(retrieval_scores={"Sony": 0.95})
    traj, llm, _ = run(AgentConfig(method="react", early_exit=True, early_exit_threshold=0.9),
                       [" t\nAction 1: search[Sony]", "1946]"], env=env)
    assert llm.calls[1].prompt.endswith("Observation 1: Sony is a Japanese company. It was founded in 1946.\n"
                                        "Action 2: finish[")
    assert traj.info["early_exit"] == {"iteration": 1, "retrieval_score": 0.95}
    assert traj.steps[-1].meta == {"early_exit": True} and traj.correct
    # below the threshold nothing changes
    env = FakeEnvironment(retrieval_scores={"Sony": 0.5})
    traj, llm, _ = run(AgentConfig(method="react", early_exit=True), [" t\nAction 1: search[Sony]",
                                                                     " t\nAction 2: finish[1946]"], env=env)
    assert "early_exit" not in traj.info and llm.calls[1].prompt.endswith("Thought 2:")


def test_events_order():
    async def collect():
        llm = ScriptedLLM([" t\nAction 1: search[Sony]", " t2\nAction 2: finish[1946]"])
        return [e async for e in iter_episode(TASK, FakeEnvironment(), llm, AgentConfig(), scorer=exact_match_scorer)]

    events = asyncio.run(collect())
    assert [e.type for e in events] == ["starting", "iteration", "thought", "action", "observation",
                                        "iteration", "thought", "answer", "final_answer", "done"]
    assert events[-1].data["trajectory"].prediction == "1946"
    assert events[3].data == {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony",
                              "action": "search", "param": "Sony"}  # LLARS' keys beside actune's


def test_long_observation_truncated():
    env = FakeEnvironment(pages={"Sony": "word " * 500})
    traj, _, _ = run(AgentConfig(method="react", observation_max_tokens=20), [
        " t\nAction 1: search[Sony]", " t\nAction 2: finish[x]"], env=env)
    obs = traj.steps[2]
    assert obs.text.endswith(" ...") and len(obs.text) <= 20 * 4 + 4 and obs.meta == {"truncated": True}
    assert truncate_observation("short", 20) == "short"


def test_seed_is_stable_and_distinct():
    assert episode_seed(0, "a", 0) == episode_seed(0, "a", 0)
    assert len({episode_seed(0, "a", 0), episode_seed(0, "a", 1), episode_seed(1, "a", 0), episode_seed(0, "b", 0)}) == 4


def test_chat_wire_prefills_and_records_same_steps():
    replies = [" t\nAction 1: search[Sony]", " t2\nAction 2: finish[1946]"]
    text_traj, _, _ = run(AgentConfig(wire="text"), list(replies))
    chat_traj, llm, _ = run(AgentConfig(wire="chat", regime="zero_shot"), list(replies))
    assert [(s.type, s.text, s.action_arg) for s in chat_traj.steps] == \
           [(s.type, s.text, s.action_arg) for s in text_traj.steps]
    msgs = llm.calls[1].prompt
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]
    assert msgs[2]["content"] == "Thought 1: t\nAction 1: search[Sony]"
    assert msgs[3]["content"] == "Observation 1: Sony is a Japanese company. It was founded in 1946."
    assert msgs[4]["content"] == "Thought 2:"
    assert llm.calls[1].extra_body == {"continue_final_message": True, "add_generation_prompt": False}
    assert "Here are some examples" not in msgs[0]["content"]  # zero-shot


def test_chat_without_prefill_parses_labelled_turns():
    traj, llm, _ = run(AgentConfig(wire="chat", chat_prefill=False),
                       ["Thought 1: t\nAction 1: search[Sony]", "Thought 2: ok\nAction 2: finish[1946]"])
    assert traj.correct and llm.calls[0].extra_body is None
    assert llm.calls[1].prompt[-1]["role"] == "user"


def test_unknown_method_rejected_by_config():
    from actune.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="method"):
        load_config(AgentConfig, overrides=["method=reflexion"])


def test_step_order_validator_accepts_loop_output_and_flags_bad_order():
    from actune.agent.validate import step_order_problems
    from actune.records.trajectory import Step

    traj, _, _ = run(AgentConfig(method="react"), [" t\nAction 1: search[Sony]", " t\nAction 2: finish[1946]"])
    assert step_order_problems(traj) == []
    traj.steps.insert(2, Step("thought", "extra", 1))
    assert step_order_problems(traj)
    traj, _, _ = run(AgentConfig(method="act"), ["search[Sony]", "finish[1946]"])
    assert step_order_problems(traj) == []
    traj.prediction = "other"
    assert step_order_problems(traj) == ["the answer step and the prediction differ"]


def test_cli_rejects_bad_override_before_starting_anything(capsys):
    from actune.cli import main

    assert main(["run", "--question", "Q?", "--set", "max_stepz=3", "--endpoint", "http://127.0.0.1:9/v1"]) == 2
    assert "max_stepz: unknown key" in capsys.readouterr().err


def test_finished_record_renders_as_the_model_saw_it():
    from actune.agent.render import render_messages, render_text, trajectory_prompt_context

    cfg = AgentConfig(method="react", regime="zero_shot")
    traj, llm, _ = run(cfg, [" t\nAction 1: Search[Sony]\nObservation 1: fake", " t2\nAction 2: finish[1946]"])
    traj = Trajectory.from_json(traj.to_json())
    ctx = trajectory_prompt_context(traj)
    full = render_text(ctx, traj.steps)
    # the last prompt sent plus what the model wrote is exactly the rendered record
    assert full == llm.calls[1].prompt + " t2\nAction 2: finish[1946]\n"
    msgs = render_messages(ctx, traj.steps)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]
    assert msgs[-1]["content"] == "Thought 2: t2\nAction 2: finish[1946]"
    # a few-shot record renders to the same zero-shot text (what the tuned model will be run with)
    few, _, _ = run(AgentConfig(method="react"), [" t\nAction 1: Search[Sony]", " t2\nAction 2: finish[1946]"])
    assert render_text(trajectory_prompt_context(few), few.steps) == full


def test_tokenizer_counter_truncates_by_real_tokens(embedded_model):
    from actune.agent.episode import tokenizer_counter

    count = tokenizer_counter(str(embedded_model))
    assert count("hello world") == 2
    long = "The Danube flows through ten countries. " * 60
    cut = truncate_observation(long, 50, count)
    assert count(cut) <= 52 and cut.endswith(" ...") and len(cut) > 100


def test_default_scorer_is_the_project_metric():
    llm = ScriptedLLM([" t\nAction 1: finish[the 1946]"])
    traj = asyncio.run(run_episode(TASK, FakeEnvironment(), llm, AgentConfig()))
    assert traj.correct and traj.scores["em"] == 1.0 and traj.scores["f1"] == 1.0


def test_live_view_prints_events():
    from rich.console import Console

    from actune.cli.run import LiveView

    async def collect():
        llm = ScriptedLLM([" I look it up.\nAction 1: search[Sony]", " Found.\nAction 2: finish[1946]"])
        return [e async for e in iter_episode(TASK, FakeEnvironment(), llm, AgentConfig(), scorer=exact_match_scorer)]

    view = LiveView()
    view.console = Console(record=True, width=200, force_terminal=False)
    for ev in asyncio.run(collect()):
        view(ev)
    out = view.console.export_text()
    for line in ("— step 1/7", "Thought: I look it up.", "Action: search[Sony]",
                 "Observation: Sony is a Japanese company. It was founded in 1946.", "Final answer: 1946",
                 "finish: answered · correct: True · 2 requests"):
        assert line in out, out


class FakeHouseholdEnvironment(Environment):
    """ALFWorld-like: free-text commands, no finish action; the env decides when the task is won."""

    name = "alfworld"
    action_names = VERBS  # ALFWorld's: its exemplars also clean, heat, cool and use
    finish_action = None

    def __init__(self):
        self.actions = []

    def reset(self, task, seed=None):
        return "You are in the middle of a room. You see a cabinet 1.\nYour task is to: put a cup on cabinet 1."

    def step(self, action):
        from actune.envs.base import StepResult

        self.actions.append(action)
        won = action.name == "put"
        return StepResult("You put the cup." if won else "Nothing happens.", done=won, info={"won": won})

    def describe_actions(self):
        return "go to X, open X, take X from Y, put X in/on Y"


def test_free_text_commands_and_env_decided_end():
    task = Task(id="h1", question="put a cup on cabinet 1", env="alfworld")
    env = FakeHouseholdEnvironment()
    llm = ScriptedLLM([" Find the cup.\nAction 1: go to cabinet 1", " t\nAction 2: finish[done]",
                       " Now put it.\nAction 3: put cup 1 in/on cabinet 1"])
    won_scorer = lambda task, pred, info: (bool(info.get("won")), {"won": float(bool(info.get("won")))})
    traj = asyncio.run(run_episode(task, env, llm, AgentConfig(), scorer=won_scorer))
    assert [(a.name, a.argument) for a in env.actions] == [("go", "to cabinet 1"), ("put", "cup 1 in/on cabinet 1")]
    assert traj.finish_reason == "env_done" and traj.correct and traj.prediction is None
    assert "Write exactly one command per step" in traj.steps[5].text  # finish[...] is not a command here
    p = llm.calls[0].prompt
    assert "\nYou are in the middle of a room. You see a cabinet 1.\nYour task is to: put a cup on cabinet 1.\nThought 1:" in p
    assert "> think" not in p and "Action 1: go to cabinet 1" in p  # alfworld exemplars, our format


def test_fever_claim_format_and_stops():
    task = Task(id="f1", question="Sony was founded in 1946.", answer="SUPPORTS", env="fever")
    traj, llm, _ = run(AgentConfig(), [" t\nAction 1: search[Sony]", " t\nAction 2: finish[SUPPORTS]"],
                       env=FakeEnvironment(name="fever"), task=task)
    assert traj.correct and llm.calls[0].stop == ["\nObservation", "\nClaim:", "\n\n", "\nThought"]
    assert llm.calls[0].prompt.startswith("Decide whether a claim is SUPPORTS, REFUTES or NOT ENOUGH INFO")
    assert "\nClaim: Sony was founded in 1946.\nThought 1:" in llm.calls[0].prompt
    assert llm.calls[0].prompt.count("Claim: ") == 4  # three exemplars + the task


def test_the_old_budget_key_names_its_new_name():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="max_steps was renamed episode_steps .* write episode_steps: 4"):
        AgentConfig.model_validate({"max_steps": 4})
