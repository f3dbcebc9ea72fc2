"""The model cards of an adapter folder and of its ``merged/`` (:mod:`actune.train.model_card`), built from the
folder's own files and checked with huggingface_hub's ``ModelCard``; the adapter pushed with a fake Hub client.
(The real training run writes them too: ``test_train_run.py``.)"""

from __future__ import annotations

import json

from huggingface_hub import ModelCard
from test_hub_push import FakeHfApi, factory

from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.hub_push import push
from actune.train.model_card import hub_base_model, write_model_card

META = {
    "config": {"base_model": "smollm2-135m", "dataset": "", "max_length": 1024, "mask_observations": True,
               "lora": {"r": 8, "alpha": 16, "dropout": 0.05, "target_modules": "all-linear"},
               "learning_rate": 5e-4, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
               "num_train_epochs": 3.0, "max_steps": -1, "seed": 2},
    "method": "reflact", "dtype": "bfloat16", "processes": 1, "examples": 229, "train_examples": 204,
    "dev_examples": 25, "dropped_examples": 0, "task_ids": 163, "dev_task_ids": ["a", "b"], "steps": 153,
    "final_loss": 0.0526, "eval_losses": [{"step": 26, "epoch": 0.51, "loss": 0.17}, {"step": 52, "epoch": 1.02,
                                                                                      "loss": 0.1174}],
    "best_step": 52, "best_eval_loss": 0.1174, "tokens": 76963, "trained_tokens": 28295,
    "masked_fraction": 0.6324, "truncated_examples": 0, "merged": {"dir": "merged", "dtype": "bfloat16"},
}
SUMMARY = {"steps_method": "reflact", "wire": "chat", "stores": ["runs/a.jsonl", "runs/b.jsonl"],
           "methods": {"reflact": {"exported": 200}, "cot": {"exported": 29}}, "exported": 229, "tasks": 163}


def adapter(tmp_path, with_summary: bool = True):
    folder = tmp_path / "adapter"
    ds = tmp_path / "ds"
    ds.mkdir()
    if with_summary:
        (ds / "export_summary.json").write_text(json.dumps(SUMMARY))
    meta = {**META, "config": {**META["config"], "dataset": str(ds)}}
    for f in (folder, folder / "merged"):
        f.mkdir(parents=True)
        (f / "training_meta.json").write_text(json.dumps(meta))
        save_prompt_spec(PromptSpec(method="reflact", wire="chat"), f)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "merged" / "config.json").write_text("{}")
    (folder / "merged" / "model.safetensors").write_text("w")
    return folder


def test_the_adapter_card_is_a_hub_model_card(tmp_path):
    folder = adapter(tmp_path)
    card = ModelCard.load(write_model_card(folder))
    assert card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct" and card.data.library_name == "peft"
    assert {"actune", "lora", "agent", "reflact"} <= set(card.data.tags)
    text = card.text
    assert "`reflact`: each step is `Reflection i: ...`" in text
    assert "229 examples over 163 tasks: 204 trained on, 25 in the dev slice (held out by task: 2 tasks)" in text
    assert "28295 carrying loss (63.2% masked" in text
    assert "from `runs/a.jsonl`, `runs/b.jsonl`: 229 kept episodes (per source method: reflact 200, cot 29)" in text
    assert "| 52 | 1.02 | 0.1174 |" in text and "those of step 52, the lowest dev loss (0.1174)" in text
    assert "LoRA r=8, alpha=16" in text and "4 sequences x 2 accumulation x 1 processes" in text
    assert '"wire": "chat"' in text and "method `reflact`, regime `zero_shot`, wire `chat`" in text
    assert "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --enable-lora --max-lora-rank 16" in text
    assert "actune serve --model smollm2-135m --adapter tuned=adapter" in text


def test_the_merged_card_names_transformers(tmp_path):
    folder = adapter(tmp_path, with_summary=False)
    card = ModelCard.load(write_model_card(folder / "merged", merged=True))
    assert card.data.library_name == "transformers" and "merged" in card.data.tags
    assert card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert "vllm serve org/name" in card.text and "Merged in bfloat16." in card.text
    assert f"- Dataset: `{tmp_path / 'ds'}`" in card.text  # the export summary is gone: the path is named


def test_base_models_are_named_by_hub_id_or_left_out(tmp_path):
    assert hub_base_model("smollm2-135m") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert hub_base_model("Qwen/Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"
    assert hub_base_model(str(tmp_path)) is None
    (tmp_path / "actune_model.json").write_text('{"name": "smollm2-135m"}')  # the folder actune built it in
    assert hub_base_model(str(tmp_path)) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    folder = adapter(tmp_path)
    meta = json.loads((folder / "training_meta.json").read_text())
    meta["config"]["base_model"] = "/models/local-base"
    (folder / "training_meta.json").write_text(json.dumps(meta))
    card = ModelCard.load(write_model_card(folder))
    assert card.data.base_model is None and "a local model folder (`/models/local-base`)" in card.text


def test_the_adapter_and_merged_model_push_as_model_repos(tmp_path):
    folder = adapter(tmp_path)
    write_model_card(folder)
    write_model_card(folder / "merged", merged=True)
    api = FakeHfApi()
    push(folder, "org/agent", api_factory=factory(api))
    assert api.calls[0][1]["repo_type"] == "model"
    assert api.uploaded == ["README.md", "actune_prompt.json", "adapter_config.json", "training_meta.json"]
    push(folder / "merged", "org/agent-merged", api_factory=factory(api))
    assert "config.json" in api.uploaded and "README.md" in api.uploaded
