"""The world through the real agent loop and wiki env, with a scripted (fake) model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from actune.agent import AgentConfig, run_episode
from actune.envs.config import EnvConfig
from actune.envs.wiki_env import from_config
from actune.llm import Completion, Sampling, Usage
from actune.records.task_record import Task
from actune.world import WorldConfig, write_world


class ScriptedLLM:
    """A fake model: returns the given step texts in order and keeps every prompt."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    async def complete(self, prompt: str, *, sampling: Sampling, stop: list[str] | None = None) -> Completion:
        self.prompts.append(prompt)
        return Completion(text=self.replies.pop(0), finish_reason="stop", usage=Usage(1, 1))

    async def chat(self, messages, *, sampling: Sampling, stop=None, extra_body=None) -> Completion:
        raise AssertionError("text wire only")


def test_a_bridge_question_is_solved_and_grounded_through_the_loop(tmp_path: Path) -> None:
    gen = write_world(WorldConfig(seed=0, n_people=20, n_companies=12, n_cities=8, n_train=20, n_dev=5, n_test=5,
                                  late_fact_prob=0.0), tmp_path / "w")
    rec = next(r for rs in gen.splits.values() for r in rs if r["meta"]["template"] == "founder_birth_city")
    company, founder = rec["meta"]["supporting_titles"]
    task = Task(id=rec["id"], question=rec["question"], answer=rec["answer"], aliases=rec["aliases"], meta=rec["meta"])
    env = from_config(EnvConfig(name="wiki", corpus=str(tmp_path / "w" / "corpus.jsonl"),
                                index_dir=str(tmp_path / "idx")))
    llm = ScriptedLLM([
        f" I need to search {company} and find its founder.\nAction 1: search[{company}]",
        f" {company} was founded by {founder}. I need to search {founder}.\nAction 2: search[{founder}]",
        f" {founder} was born in {rec['answer']}.\nAction 3: finish[{rec['answer']}]",
    ])
    cfg = AgentConfig(method="react", exemplar_set="world", exemplar_kinds=["bridge"], num_exemplars=2)
    traj = asyncio.run(run_episode(task, env, llm, cfg))
    assert traj.correct and traj.prediction == rec["answer"]
    assert traj.info["env_info"]["titles"] == [company, founder]
    # the observation of step 2 is the founder's page, which names the answer
    observations = [s.text for s in traj.steps if s.type == "observation"]
    assert rec["answer"] in observations[1]
    # the prompt holds the two bridge exemplars (reserved entities) and none of this world's titles
    first = llm.prompts[0]
    assert "In which city was the founder of Quillory Foods born?" in first
    assert "In which province was Ilvo Prassen born?" in first
    assert "Which was founded earlier" not in first
    exemplar_part = first[: first.rindex(rec["question"])]
    assert not any(p["title"] in exemplar_part for p in gen.corpus)


def test_exemplars_follow_their_own_pages() -> None:
    """Every exemplar's search observation is consistent with its answer and kind."""
    data = json.loads((Path(__file__).resolve().parents[2] / "actune" / "prompts" / "world.json").read_text())
    assert data["env"] == "wiki"
    kinds = [e["kind"] for e in data["exemplars"]]
    assert {k: kinds.count(k) for k in set(kinds)} == {"single": 2, "bridge": 2, "comparison": 2}
    for e in data["exemplars"]:
        steps = e["steps"]
        assert steps[-1]["action"] == f"finish[{e['answer']}]"
        assert all(s["thought"] and s["reflection"] and s["action"] for s in steps)
        assert all(s["reflection"].startswith("Current state:") and "Goal relation:" in s["reflection"] for s in steps)
        assert all(s.get("observation") for s in steps[:-1]) and "observation" not in steps[-1]
        seen = " ".join(s["observation"] for s in steps[:-1])
        assert e["answer"] in seen or e["kind"] == "comparison"
        assert e["answer"] in e["cot"]
