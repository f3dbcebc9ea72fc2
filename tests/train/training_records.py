"""Hand-made kept records for the train tests: a zero-shot ReAct episode per question, as the loop
writes them (``info["prompt"]`` holds the prompt head; verdict kept); and the helpers the train tests
share to run the recipe on them."""

from __future__ import annotations

from pathlib import Path

from actune.judge import judge, record_verdict
from actune.records.store import TrajectoryStore
from actune.records.trajectory import Step, TaskRecord, Trajectory
from actune.train.config import LoraSettings, TrainConfig

INSTRUCTION = ("Solve a question answering task with interleaving Thought, Action, Observation steps. "
               "Thought can reason about the current situation, and Action can be one of:\n"
               "(1) search[entity]\n(2) finish[answer]")

# (question, entity, observation, answer): observations with awkward edges (trailing spaces,
# leading space, unicode, digits, brackets) to exercise the token seams
FACTS = [
    ("Who makes the Walkman?", "Walkman", "Walkman is a brand of portable audio players made by Sony.  ", "Sony"),
    ("How long is the Danube?", "Danube", " The Danube is about 2,850 km long (1,770 mi).", "2,850 km"),
    ("Where was Zoë Ménard born?", "Zoë Ménard", "Zoë Ménard (born 1971 in Liège) is a Belgian poet.", "Liège"),
    ("What does [SEP] mark?", "SEP token", "[SEP] marks a sentence boundary ... ", "a sentence boundary"),
]


def record(i: int) -> Trajectory:
    q, entity, obs, answer = FACTS[i]
    steps = [
        Step("thought", f"I need to search {entity}.", 1),
        Step("action", f"search[{entity}]", 1, action_name="search", action_arg=entity),
        Step("observation", obs, 1),
        Step("thought", f"So the answer is {answer}.", 2),
        Step("answer", f"finish[{answer}]", 2, action_name="finish", action_arg=answer),
    ]
    t = Trajectory(task=TaskRecord(f"q{i}", q, answer), method="react", steps=steps, prediction=answer,
                   correct=True, run_id="r", episode_id=f"e{i}",
                   info={"prompt": {"method": "react", "env": "wiki", "instruction": INSTRUCTION,
                                    "question": f"Question: {q}", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def records() -> list[Trajectory]:
    return [record(i) for i in range(len(FACTS))]


ADAPTER_FILES = ["README.md", "actune_prompt.json", "adapter_config.json", "adapter_model.safetensors",
                 "chat_template.jinja", "loss.png", "tokenizer.json", "tokenizer_config.json", "training_meta.json",
                 "training_tasks.json"]


def base_plus_adapter(embedded_model: Path, adapter: Path):
    """The embedded model with the adapter in ``adapter`` applied, in float32."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(embedded_model, dtype=torch.float32)
    return PeftModel.from_pretrained(base, str(adapter)).eval()


def write_store(path: Path) -> Path:
    with TrajectoryStore.open(path) as store:
        for t in records():
            store.append(t)
    return path


def tiny_config(tmp_path: Path, embedded_model: Path, **kw) -> TrainConfig:
    """A few steps of LoRA r=4 on short sequences: a real run that takes seconds."""
    fields = dict(base_model=str(embedded_model), dataset=tmp_path / "ds", output_dir=tmp_path / "adapter",
                  lora=LoraSettings(r=4, alpha=8, dropout=0.0), learning_rate=5e-3, warmup_ratio=0.0, max_steps=3,
                  per_device_train_batch_size=2, max_length=128, dtype="float32", save_steps=1000)
    return TrainConfig(**{**fields, **kw})
