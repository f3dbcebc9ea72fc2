"""actune environments as TRL's ``environment_factory`` classes and back (issue #49 item 9): the real wiki
environment over the small HotpotQA corpus, TRL's own schema reader and response parser, and a GRPOTrainer run of
two steps on CPU (a tiny random model with the embedded model's tokenizer); the round trip plays the same episode
as the environment itself."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from pathlib import Path

import pytest
from agent.fakes import ScriptedLLM

from actune.agent import AgentConfig, run_episode
from actune.bridges.trl import actune_environment, trl_environment
from actune.envs.config import EnvConfig
from actune.envs.factory import checked_env, make_env
from actune.records.task_record import Task

CORPUS = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small" / "wiki_paragraphs.jsonl"
CFG = EnvConfig(name="wiki", corpus=str(CORPUS))
TASK = Task(id="q1", question="When did the 2002–03 La Liga season start?", answer="31 August 2002", env="wiki")
REPLIES = [" I search the season.\nAction 1: search[2002–03 La Liga]",
           " It started on 31 August 2002.\nAction 2: finish[31 August 2002]"]


def test_an_actune_environment_is_a_trl_environment_class() -> None:
    from transformers.utils import get_json_schema

    cls = trl_environment(CFG)
    tools = [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")]
    assert tools == ["finish", "get_reward", "lookup", "reset", "search"]
    env = cls()
    schema = get_json_schema(env.search)  # what TRL puts in the prompt
    assert schema["function"]["name"] == "search"
    assert schema["function"]["parameters"] == {"type": "object", "required": ["entity"], "properties": {
        "entity": {"type": "string", "description": "the entity."}}}
    assert env.reset(question=TASK.question, answer=TASK.answer) is None  # the wiki shows nothing before a search
    direct = make_env(CFG)
    direct.reset(TASK)
    from actune.envs.base import Action

    assert env.search(entity="2002–03 La Liga") == direct.step(Action("search", "2002–03 La Liga")).observation
    assert env.get_reward() == 0.0  # no answer yet
    env.finish(answer="31 August 2002")
    assert env.get_reward() == 1.0
    env.reset(question=TASK.question, answer=TASK.answer)
    env.finish(answer="1 September 2002")
    assert env.get_reward() == 0.0


def test_trls_own_parser_reaches_the_environment_tool(embedded_model) -> None:
    """The tools wire's Hermes form, as actune's ChatML-with-tools template writes it, parsed by TRL's response
    template and dispatched as GRPOTrainer does (the method of that name, the parsed arguments)."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import parse_response, qwen3_template

    from actune.runtime.chat_templates import CHATML_TOOLS_TEMPLATE

    tok = AutoTokenizer.from_pretrained(embedded_model)
    tok.chat_template = CHATML_TOOLS_TEMPLATE.read_text()
    tok.response_template = qwen3_template
    env = trl_environment(CFG)()
    tools = [env.search, env.lookup, env.finish]
    prompt = tok.apply_chat_template([{"role": "user", "content": TASK.question}], tools=tools,
                                     add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    written = tok('I search it.\n<tool_call>\n{"name": "search", "arguments": {"entity": "2002–03 La Liga"}}\n'
                  "</tool_call><|im_end|>", add_special_tokens=False)["input_ids"]
    parsed = parse_response(tok, written, prefix=prompt, tools=tools)  # as GRPOTrainer parses a completion
    assert parsed["content"].strip() == "I search it."
    call = parsed["tool_calls"][0]["function"]
    env.reset(question=TASK.question, answer=TASK.answer)
    assert getattr(env, call["name"])(**call["arguments"]).startswith("The 2002–03 La Liga season")


def test_grpo_trainer_runs_two_steps_on_an_actune_environment(tmp_path, embedded_model) -> None:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_template

    from actune.runtime.chat_templates import CHATML_TOOLS_TEMPLATE

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tok = AutoTokenizer.from_pretrained(embedded_model)
    tok.chat_template = CHATML_TOOLS_TEMPLATE.read_text()  # SmolLM2's own has no tools
    tok.response_template = qwen3_template  # the Hermes form it writes
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=2048, tie_word_embeddings=True))
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": TASK.question}], "question": TASK.question,
                             "answer": TASK.answer}] * 4)
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=16, report_to="none", save_strategy="no",
                      use_cpu=True, logging_steps=1, dataloader_num_workers=0, max_tool_calling_iterations=2)
    cls = trl_environment(CFG)
    trainer = GRPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, environment_factory=cls)
    assert trainer.train().global_step == 2
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2 and all(f"rewards/{cls.__name__}/mean" in h for h in logged)  # the env owns the reward
    assert "search" in json.dumps([t.__name__ for t in trainer.tools])


class Counter:
    """A TRL-style environment of a user's: a tool with a typed argument and a docstring, and its own reward."""

    def reset(self, **example) -> str:
        self.total, self.target = 0, int(example["answer"])
        return "Start at 0."

    def add(self, amount: str) -> str:
        """Adds an amount to the total.

        Args:
            amount: how much to add.
        """
        self.total += int(amount)
        return f"Total: {self.total}"

    def get_reward(self) -> float:
        return float(self.total == self.target)


def test_a_trl_environment_class_runs_in_actunes_loop() -> None:
    env = checked_env(actune_environment(Counter)(EnvConfig()), "counter")
    assert env.action_names == ("add", "finish") and env.describe_actions().startswith("add[amount]: Adds an amount")
    task = Task(id="c", question="Reach 5.", answer="5", env="counter")
    cfg = AgentConfig(method="react", regime="zero_shot", reprompt_action=False)
    traj = asyncio.run(run_episode(task, env, ScriptedLLM([" Add 5.\nAction 1: add[5]", " Done.\nAction 2: finish[5]"]),
                                   cfg, run_id="r"))
    assert [s.text for s in traj.steps if s.type == "observation"][:1] == ["Total: 5"]
    assert traj.correct and traj.prediction == "5"


@pytest.mark.parametrize("replies", [REPLIES])
def test_the_round_trip_plays_the_same_episode_as_the_environment(replies) -> None:
    cfg = AgentConfig(method="react", regime="zero_shot", reprompt_action=False)
    direct = asyncio.run(run_episode(TASK, make_env(CFG), ScriptedLLM(list(replies)), cfg, run_id="r"))
    back = checked_env(actune_environment(trl_environment(CFG))(EnvConfig()), "wiki-via-trl")
    via = asyncio.run(run_episode(TASK, back, ScriptedLLM(list(replies)), cfg, run_id="r"))
    assert [(s.type, s.text) for s in via.steps] == [(s.type, s.text) for s in direct.steps]
    assert via.correct and direct.correct
