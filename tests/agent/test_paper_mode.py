"""Paper fidelity (issue #37): ``agent.fidelity: paper`` runs the ReAct paper's prompts as its code ran them.

Each ``paper_*`` function below is a notebook cell of github.com/ysymyth/ReAct (commit 6bdb3a1), reproduced
from its source with the printing and counters left out; it is fed the same model replies and observations as
actune's loop, and every request actune sends (prompt and stop strings) must equal the notebook's, byte for byte.
The prompt files are actune's bundled copies (actune/prompts/react_*.json), whose hashes
react_paper_sources.json records and a test checks, so only the comparison with ../shared needs ../shared.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from actune.agent import AgentConfig, run_episode
from actune.agent.exemplars import BUILTIN_DIR
from actune.cli.run_config import RunConfig
from actune.config import load_config
from actune.eval.config import model_agent
from actune.records.task_record import Task

from .fakes import (
    HOUSEHOLD_ROOM,
    PAGES,
    FakeEnvironment,
    FakeHousehold,
    ScriptedLLM,
    exact_match_scorer,
    household_step,
)

REPO = Path(__file__).resolve().parents[2]
SHARED_PROMPTS = REPO / ".." / "shared" / "data" / "react_prompts"
HOTPOT_FILE = BUILTIN_DIR / "react_prompts_naive.json"
FEVER_FILE = BUILTIN_DIR / "react_fever.json"
ALFWORLD_FILE = BUILTIN_DIR / "react_alfworld_3prompts.json"

# hotpotqa.ipynb, cell 4: the instruction, verbatim (its first line ends with a space)
NOTEBOOK_INSTRUCTION = """Solve a question answering task with interleaving Thought, Action, Observation steps. Thought can reason about the current situation, and Action can be three types: 
(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.
(2) Lookup[keyword], which returns the next sentence containing keyword in the current passage.
(3) Finish[answer], which returns the answer and finishes the task.
Here are some examples.
"""  # noqa: E501, W291


class PaperLLM:
    """The notebooks' ``llm(prompt, stop)``, answering scripted replies and recording each request."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)
        self.calls: list[tuple[str, list[str]]] = []

    def __call__(self, prompt: str, stop: list[str] | None = None) -> str:
        self.calls.append((prompt, stop or ["\n"]))
        return self.replies.pop(0)


def load_prompts(path: Path) -> dict[str, str]:
    with open(path) as f:  # the notebooks: json.load of the prompt file
        return json.load(f)


def wiki_step(action: str) -> tuple[str, int, bool, dict]:
    """wikienv.py's ``step`` for the notebooks, over FakeEnvironment's pages: search shows the page, finish ends."""
    name, arg = action.split("[", 1)[0], action.split("[", 1)[1][:-1]
    if name == "finish":
        return "Episode finished, reward = 0\n", 0, True, {}
    return PAGES[arg], 0, False, {}


def paper_webthink(llm: PaperLLM, question: str, prompt: str) -> str:
    """hotpotqa.ipynb cell 4 and FEVER.ipynb cell 4, ``webthink(idx, prompt=webthink_prompt)`` (both loop
    ``range(1, 8)``); ``question`` is what the wrappers' ``reset`` returns (``"Question: ..."``, ``"Claim: ..."``)."""
    prompt += question + "\n"
    for i in range(1, 8):
        thought_action = llm(prompt + f"Thought {i}:", stop=[f"\nObservation {i}:"])
        try:
            thought, action = thought_action.strip().split(f"\nAction {i}: ")
        except ValueError:  # the notebook: a bare except around this unpacking
            thought = thought_action.strip().split('\n')[0]
            action = llm(prompt + f"Thought {i}: {thought}\nAction {i}:", stop=["\n"]).strip()
        obs, r, done, info = wiki_step(action[0].lower() + action[1:])
        obs = obs.replace('\\n', '')
        step_str = f"Thought {i}: {thought}\nAction {i}: {action}\nObservation {i}: {obs}\n"
        prompt += step_str
        if done:
            break
    return prompt


def requests(llm: ScriptedLLM) -> list[tuple[str, list[str]]]:
    return [(c.prompt, c.stop) for c in llm.calls]


HOTPOT_QUESTION = "In which year was the company that makes the Walkman founded?"
HOTPOT_REPLIES = [
    " I need to search Walkman and find the company that makes it.\nAction 1: Search[Walkman]",
    " Walkman is made by Sony. I need to search Sony next.",  # no action: both ask once more for the action line
    " Search[Sony]",
    " Sony was founded in 1946.\nAction 3: Finish[1946]",
]


def test_hotpotqa_prompts_are_the_notebooks_byte_for_byte():
    paper = PaperLLM(HOTPOT_REPLIES)
    paper_webthink(paper, f"Question: {HOTPOT_QUESTION}",
                   NOTEBOOK_INSTRUCTION + load_prompts(HOTPOT_FILE)["webthink_simple6"])
    llm = ScriptedLLM(HOTPOT_REPLIES)
    traj = asyncio.run(run_episode(Task("h", HOTPOT_QUESTION, "1946"), FakeEnvironment(), llm,
                                   AgentConfig(method="react", fidelity="paper"), scorer=exact_match_scorer))
    assert requests(llm) == paper.calls
    assert [stop for _, stop in paper.calls] == [["\nObservation 1:"], ["\nObservation 2:"], ["\n"],
                                                 ["\nObservation 3:"]]
    first = llm.calls[0].prompt
    # the paper's examples open with a blank line after the instruction and end right before the question
    assert "Here are some examples.\n\nQuestion: What is the elevation range" in first
    assert first.endswith(f"Action 3: Finish[yes]\nQuestion: {HOTPOT_QUESTION}\nThought 1:")
    assert llm.calls[2].prompt.endswith(
        "Thought 2: Walkman is made by Sony. I need to search Sony next.\nAction 2:")
    assert (traj.correct, traj.finish_reason, traj.prediction) == (True, "answered", "1946")


def test_fever_prompts_are_the_notebooks_byte_for_byte():
    claim = "Sony is a Japanese company."
    replies = [" I need to search Sony and find whether it is Japanese.\nAction 1: Search[Sony]",
               " Sony is a Japanese company, so the claim is supported.\nAction 2: Finish[SUPPORTS]"]
    paper = PaperLLM(replies)
    paper_webthink(paper, f"Claim: {claim}", load_prompts(FEVER_FILE)["webthink_simple3"])
    llm = ScriptedLLM(replies)
    traj = asyncio.run(run_episode(Task("f", claim, "SUPPORTS"), FakeEnvironment(name="fever"), llm,
                                   AgentConfig(method="react", fidelity="paper"), scorer=exact_match_scorer))
    assert requests(llm) == paper.calls
    first = llm.calls[0].prompt
    assert first.startswith("\nDetermine if there is Observation that SUPPORTS or REFUTES a Claim")
    assert first.endswith(f"Action 4: Finish[NOT ENOUGH INFO]\n\nClaim: {claim}\nThought 1:")
    assert traj.correct and [c.stop for c in llm.calls] == [["\nObservation 1:"], ["\nObservation 2:"]]


ROOM, game_step, Household = HOUSEHOLD_ROOM, household_step, FakeHousehold


def paper_alfworld_run(llm: PaperLLM, prompt: str, ob: str) -> int:
    """alfworld.ipynb cell 3, ``alfworld_run(prompt, ob=ob)``, with :func:`game_step` as ``env.step``."""
    init_prompt = prompt + ob + '\n>'
    prompt = ''
    for _i in range(1, 50):  # the notebook's i only numbers its printout
        action = llm(init_prompt + prompt, stop=['\n']).strip()
        observation, done = game_step(action)
        reward = int(done)
        if action.startswith('think:'):
            observation = 'OK.'
        prompt += f' {action}\n{observation}\n>'
        if done:
            return reward
    return 0


def won(task: Task, prediction: str | None, info: dict[str, Any]) -> tuple[bool, dict[str, float]]:
    return bool(info.get("won")), {"won": float(bool(info.get("won")))}


def test_alfworld_prompts_are_the_notebooks_byte_for_byte():
    replies = [" think: First I need to find a spraybottle. It is likely in cabinet 1.", " go to cabinet 1",
               " take spraybottle 2 from cabinet 1", " put spraybottle 2 in/on toilet 1"]
    d = load_prompts(ALFWORLD_FILE)
    v = "put"  # alfworld.ipynb cell 4: prefixes['pick_and_place'] == 'put'
    prompt = 'Interact with a household to solve a task. Here are two examples.\n' + d[f'react_{v}_1'] + \
        d[f'react_{v}_0'] + '\nHere is the task.\n'
    paper = PaperLLM(replies)
    assert paper_alfworld_run(paper, prompt, ob=ROOM) == 1
    llm = ScriptedLLM(replies)
    task = Task("g", "put some spraybottle on toilet", "", env="alfworld", meta={"task_type": "put"})
    traj = asyncio.run(run_episode(task, Household(), llm, AgentConfig(method="react", fidelity="paper"), scorer=won))
    assert requests(llm) == paper.calls
    assert llm.calls[0].prompt.endswith(f"Here is the task.\n{ROOM}\n>")
    assert llm.calls[3].prompt.endswith(
        "\n> take spraybottle 2 from cabinet 1\nYou pick up the spraybottle 2 from the cabinet 1.\n>")
    assert "Action 1:" not in llm.calls[3].prompt and all(c.stop == ["\n"] for c in llm.calls)
    assert (traj.correct, traj.finish_reason, traj.info["prompt"]["style"]) == (True, "env_done", "sparse_think")


REPEATING = [" I search Sony.\nAction 1: Search[Sony]", " Again.\nAction 2: Search[Sony]",
             " Again.\nAction 3: Search[Sony]", " I dance.\nAction 4: Dance[now]", " Again.\nAction 5: Dance[now]",
             " Again.\nAction 6: Dance[now]", " Sony was founded in 1946.\nAction 7: Finish[1946]"]


def test_paper_mode_has_no_repetition_or_parse_error_ending():
    task = Task("h", "When was Sony founded?", "1946")
    traj = asyncio.run(run_episode(task, FakeEnvironment(), ScriptedLLM(REPEATING),
                                   AgentConfig(method="react", fidelity="paper"), scorer=exact_match_scorer))
    assert (traj.finish_reason, traj.prediction, traj.info["parse_errors"]) == ("answered", "1946", 3)
    assert [s.text for s in traj.steps if s.type == "action"] == ["Search[Sony]"] * 3 + ["Dance[now]"] * 3
    # an unusable action is answered as the paper's wikienv answers it, not with actune's format hint
    assert [s.text for s in traj.steps if s.type == "observation"][3:] == ["Invalid action: dance[now]"] * 3
    # actune's own endings, for contrast: the third Search[Sony] ends the episode
    actune = asyncio.run(run_episode(task, FakeEnvironment(), ScriptedLLM(REPEATING), AgentConfig(method="react"),
                                     scorer=exact_match_scorer))
    assert (actune.finish_reason, actune.prediction) == ("repetition", None)
    three_errors = [REPEATING[0]] + REPEATING[3:]
    actune = asyncio.run(run_episode(task, FakeEnvironment(), ScriptedLLM(three_errors), AgentConfig(method="react"),
                                     scorer=exact_match_scorer))
    assert actune.finish_reason == "parse_errors"


def test_paper_budgets_and_the_budget_ending():
    assert [AgentConfig(method=m, fidelity="paper").step_budget(env) for m in ("react", "act")
            for env in ("wiki", "fever", "alfworld")] == [7, 5, 50] * 2
    assert AgentConfig(fidelity="paper", episode_steps=3).step_budget("wiki") == 3
    cfg = AgentConfig(method="react", fidelity="paper")
    assert (cfg.cot_sc_n, cfg.cot_sc_temperature) == (21, 0.7)
    llm = ScriptedLLM([f" I search Sony.\nAction {i}: Search[Sony]" for i in range(1, 6)])
    traj = asyncio.run(run_episode(Task("f", "Sony is Japanese.", "SUPPORTS"), FakeEnvironment(name="fever"), llm,
                                   cfg, scorer=exact_match_scorer))
    assert (traj.finish_reason, len(llm.calls)) == ("max_steps", 5)


def test_paper_stop_strings_for_each_method():
    def first_stop(method: str, env: str = "wiki", **kw: Any) -> list[str] | None:
        llm = ScriptedLLM(["x"] * 3)
        try:
            asyncio.run(run_episode(Task("t", "Q?", "A"), FakeEnvironment(name=env), llm,
                                    AgentConfig(method=method, fidelity="paper", **kw), scorer=exact_match_scorer))
        except AssertionError:  # the fake ran out of replies: the first request is all this test reads
            pass
        return llm.calls[0].stop

    assert first_stop("act") == ["\nObservation 1:"]
    assert first_stop("cot") == ["\nQuestion:"]
    assert first_stop("cot", "fever") == ["\nClaim:"]
    assert first_stop("standard") == ["\n"]
    # actune's, for contrast: its blank-line and new-question stops
    llm = ScriptedLLM([" Search[Sony]", " Finish[1946]"])
    asyncio.run(run_episode(Task("t", "Q?", "A"), FakeEnvironment(), llm, AgentConfig(method="act"),
                            scorer=exact_match_scorer))
    assert llm.calls[0].stop == ["\nObservation", "\nQuestion:", "\n\n", "\n"]


def test_hybrids_second_phase_reads_the_papers_prompts():
    question = "When was Sony founded?"
    prompts = load_prompts(HOTPOT_FILE)
    # ReAct -> CoT-SC: ReAct gives no answer within its budget (1 step here), CoT-SC asks with cotqa_simple6
    llm = ScriptedLLM([" I search Sony.\nAction 1: Search[Sony]"] + [" It was 1946.\nAnswer: 1946"] * 3)
    cfg = AgentConfig(method="react_cotsc", fidelity="paper", episode_steps=1, cot_sc_n=3)
    traj = asyncio.run(run_episode(Task("t", question, "1946"), FakeEnvironment(), llm, cfg, scorer=exact_match_scorer))
    assert traj.prediction == "1946" and [p["method"] for p in traj.info["phases"]] == ["react", "cot_sc"]
    cot_prompt = prompts["cotqa_simple6"] + f"Question: {question}\nThought:"
    assert requests(llm)[1:] == [(cot_prompt, ["\nQuestion:"])] * 3
    assert traj.steps[0].text == "It was 1946."
    # CoT-SC -> ReAct: no answer has n/2 of the votes, ReAct asks with webthink_simple6 under the notebook's instruction
    llm = ScriptedLLM([" a\nAnswer: 1945", " b\nAnswer: 1946", " c\nAnswer: 1947",
                       " Sony was founded in 1946.\nAction 1: Finish[1946]"])
    cfg = AgentConfig(method="cotsc_react", fidelity="paper", cot_sc_n=3)
    traj = asyncio.run(run_episode(Task("t", question, "1946"), FakeEnvironment(), llm, cfg, scorer=exact_match_scorer))
    assert traj.prediction == "1946" and [p["method"] for p in traj.info["phases"]] == ["cot_sc", "react"]
    react_prompt = NOTEBOOK_INSTRUCTION + prompts["webthink_simple6"] + f"Question: {question}\nThought 1:"
    assert requests(llm)[3] == (react_prompt, ["\nObservation 1:"])


def test_paper_prompt_key_names_the_variant_of_every_phase():
    llm = ScriptedLLM([" x\nAnswer: 1946"] * 3)
    cfg = AgentConfig(method="cot_sc", fidelity="paper", paper_prompt_key="cotqa_simple", cot_sc_n=3)
    asyncio.run(run_episode(Task("t", "Q?", "1946"), FakeEnvironment(), llm, cfg, scorer=exact_match_scorer))
    assert llm.calls[0].prompt == load_prompts(HOTPOT_FILE)["cotqa_simple"] + "Question: Q?\nThought:"
    with pytest.raises(ValueError, match="'webact_simple6' is for act, not react"):
        asyncio.run(run_episode(Task("t", "Q?", "A"), FakeEnvironment(), ScriptedLLM([]),
                                AgentConfig(method="react", fidelity="paper", paper_prompt_key="webact_simple6")))


@pytest.mark.parametrize("setting, message", [
    ({"method": "reflact"}, "method reflact"),
    ({"multihop": True}, "multihop: True"),
    ({"early_exit": True}, "early_exit: True"),
    ({"extra_stop": ["\n\n"]}, "extra_stop"),
    ({"reprompt_action": False}, "reprompt_action: False"),
    ({"wire": "chat"}, "wire chat"),
])
def test_settings_the_paper_does_not_have_are_errors(setting: dict[str, Any], message: str):
    with pytest.raises(ValidationError, match=message):
        AgentConfig(fidelity="paper", **setting)
    assert AgentConfig(fidelity="paper", regime="zero_shot", wire="chat").fidelity == "paper"  # a tuned model


def test_actune_stays_the_default():
    cfg = AgentConfig()
    assert (cfg.fidelity, cfg.stops_for("wiki"), cfg.ending_limits(7) is cfg) == ("actune", ["\nQuestion:"], True)
    assert AgentConfig(fidelity="paper").stops_for("wiki") == []


def test_configs_that_say_as_in_the_paper_run_it():
    for name in ("hotpotqa-react.yaml", "fever-react.yaml"):
        run = load_config(RunConfig, REPO / "configs" / name, [])
        assert (run.bootstrap.agent.fidelity, run.eval.agent.fidelity) == ("paper", "paper"), name
    alfworld = load_config(RunConfig, REPO / "configs" / "alfworld-prompted.yaml", [])
    assert [model_agent(alfworld.eval, i).fidelity for i in range(3)] == ["actune", "actune", "paper"]


def test_bundled_prompt_files_are_the_papers_byte_for_byte():
    sources = json.loads((BUILTIN_DIR / "react_paper_sources.json").read_text())
    assert sources["commit"] == "6bdb3a1fd38b8188fc7ba4102969fe483df8fdc9"
    assert {name: hashlib.sha256((BUILTIN_DIR / name).read_bytes()).hexdigest() for name in sources["files"]} == {
        "react_prompts_naive.json": "f35e8c17bbd620b90857712484c51005f5440641a37cff0b042b82ac7f3d71b5",
        "react_fever.json": "bfd7793d8766e020a817c8a56b2228f230298fb161f9fa87fa543b4b38d46c03",
        "react_alfworld_3prompts.json": "a10976b4ae99f4802aa9e621933bb71065ae103f2bd273a24466ab1005fbc45a"}
    assert all(f["sha256"] == hashlib.sha256((BUILTIN_DIR / n).read_bytes()).hexdigest()
               for n, f in sources["files"].items())


@pytest.mark.shared
@pytest.mark.skipif(not SHARED_PROMPTS.is_dir(), reason="../shared/data/react_prompts absent (a fresh clone has no "
                                                          "../shared); the bundled copies' hashes are checked above")
def test_bundled_prompt_files_equal_the_shared_copies():
    sources = json.loads((BUILTIN_DIR / "react_paper_sources.json").read_text())
    for name, f in sources["files"].items():
        assert (BUILTIN_DIR / name).read_bytes() == (SHARED_PROMPTS / Path(f["path"]).name).read_bytes(), name
