"""Tiny real recipe runs on the embedded model: export 4 records (4 tasks), train LoRA r=4 for a few steps
with a dev slice of one task, check the adapter folder (best checkpoint, prompt spec, metadata, task list,
loss plot, merged model), resume from a checkpoint, and the pieces (split, dtype, checkpoints) alone."""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import pytest
from training_records import ADAPTER_FILES, FACTS, base_plus_adapter, tiny_config, write_store

from actune.agent.prompt_spec import load_prompt_spec
from actune.bootstrap.export import export_dataset
from actune.runtime import cpu_features
from actune.train import saving as train_run  # replace_folder: the save path's
from actune.train.common import TrainError, dev_task_ids, resolve_dtype, split_by_task
from actune.train.sft import tokenize_dataset, train


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory, embedded_model):
    """One run with the default dev slice (1 of the 4 tasks) and merge=True. The high learning rate
    overshoots after the first step, so the best checkpoint (step 1) is not the last one (step 3)."""
    tmp = tmp_path_factory.mktemp("dev_run")
    export_dataset(write_store(tmp / "store.jsonl"), tmp / "ds", "text")
    ds_files = sorted(p.name for p in (tmp / "ds").iterdir())
    lines: list[str] = []
    cfg = tiny_config(tmp, embedded_model, learning_rate=3e-2, merge=True)
    res = train(cfg, log=lines.append)
    return SimpleNamespace(tmp=tmp, cfg=cfg, res=res, out=tmp / "adapter", lines=lines, ds_files=ds_files,
                           meta=json.loads((tmp / "adapter" / "training_meta.json").read_text()))


def test_tiny_lora_run_learns_and_saves_a_complete_adapter(dev_run):
    from safetensors.torch import load_file

    res, out, meta = dev_run.res, dev_run.out, dev_run.meta
    assert res.steps == 3 and res.examples == 4 and len(res.losses) == 3
    assert (res.train_examples, res.dev_examples, res.dtype) == (3, 1, "float32")
    assert all(math.isfinite(x) and x > 0 for x in res.losses)
    assert 0 < res.trained_tokens < res.tokens and 0.3 < res.masked_fraction < 0.95
    assert sorted(p.name for p in out.iterdir()) == sorted(ADAPTER_FILES + ["merged"])
    spec = load_prompt_spec(out)
    assert (spec.method, spec.regime, spec.wire) == ("react", "zero_shot", "text")
    weights = load_file(str(out / "adapter_model.safetensors"))
    b = [v for k, v in weights.items() if "lora_B" in k]
    assert b and any(float(v.abs().max()) > 0 for v in b)  # LoRA B starts at zero: it learned
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 4
    assert meta["examples"] == 4 and meta["trained_tokens"] == res.trained_tokens
    assert (meta["train_examples"], meta["dev_examples"], meta["dropped_examples"], meta["task_ids"]) == (3, 1, 0, 4)
    assert meta["final_loss"] == res.losses[-1] and meta["straddling_tokens"] == 0
    assert meta["config"]["lora"]["r"] == 4 and meta["config"]["dtype"] == "float32" and meta["dtype"] == "float32"
    assert meta["merged"] == {"dir": "merged", "dtype": "float32"}
    # nothing left beside the adapter: no temp folder, checkpoints removed
    assert sorted(p.name for p in dev_run.tmp.iterdir()) == ["adapter", "ds", "store.jsonl"]
    assert sorted(p.name for p in (dev_run.tmp / "ds").iterdir()) == dev_run.ds_files  # no cache files in it
    assert any("masked" in line for line in dev_run.lines)
    assert dev_run.lines[0].startswith("train: dtype float32 (float32); CPU: ")
    assert "train: dev slice 1 of 4 tasks (1 examples), 3 training examples" in dev_run.lines


def test_dev_slice_is_held_out_and_the_best_checkpoint_is_saved(dev_run, embedded_model):
    import torch
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    res, meta = dev_run.res, dev_run.meta
    assert meta["dev_task_ids"] == ["q2"]  # seed 0
    assert meta["eval_steps"] == 1  # 2 steps per epoch (3 examples, batch 2), 2 evaluations per epoch
    assert [(e["step"], e["epoch"]) for e in meta["eval_losses"]] == [(1, 0.5), (2, 1.0), (3, 1.5)]
    assert meta["eval_losses"] == res.eval_losses
    dev_losses = [e["loss"] for e in meta["eval_losses"]]
    assert all(math.isfinite(x) and x > 0 for x in dev_losses)
    argmin = meta["eval_losses"][dev_losses.index(min(dev_losses))]["step"]
    assert meta["best_step"] == res.best_step == argmin == 1  # not the last step: the best was kept
    assert meta["best_eval_loss"] == res.best_eval_loss == min(dev_losses)
    assert any(f"dev loss {dev_losses[0]:.4f}" in line for line in dev_run.lines)
    assert f"best dev loss {min(dev_losses):.4f} at step 1" in dev_run.lines[-1]
    # the saved adapter is the best checkpoint: its loss on the dev example is the recorded best
    ds = load_from_disk(str(dev_run.tmp / "ds"))
    dev = [i for i, t in enumerate(ds["task_id"]) if t == "q2"]
    assert dev == [2]
    ex = tokenize_dataset(ds, AutoTokenizer.from_pretrained(embedded_model), dev_run.cfg)[2]
    model = base_plus_adapter(embedded_model, dev_run.out)
    with torch.no_grad():
        loss = model(input_ids=torch.tensor([ex["input_ids"]]), labels=torch.tensor([ex["labels"]])).loss.item()
    assert loss == pytest.approx(meta["best_eval_loss"], rel=1e-4)
    assert loss != pytest.approx(dev_losses[-1], rel=1e-2)


def test_training_tasks_and_loss_plot(dev_run):
    tasks = json.loads((dev_run.out / "training_tasks.json").read_text())
    assert tasks == [{"id": f"q{i}", "question": q} for i, (q, *_rest) in enumerate(FACTS)]  # dev task included
    png = (dev_run.out / "loss.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (700, 400)


def test_the_adapter_and_the_merged_model_carry_hub_model_cards(dev_run):
    from huggingface_hub import ModelCard

    adapter = ModelCard.load(dev_run.out / "README.md")
    merged = ModelCard.load(dev_run.out / "merged" / "README.md")
    assert adapter.data.base_model == merged.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert (adapter.data.library_name, merged.data.library_name) == ("peft", "transformers")
    assert {"actune", "lora", "agent", "react"} <= set(adapter.data.tags)
    assert "Model Card for Model ID" not in adapter.text  # PEFT's template card is replaced
    assert f"Final training loss {dev_run.meta['final_loss']:.4f} after 3 steps." in adapter.text
    assert f"The saved weights are those of step {dev_run.meta['best_step']}" in adapter.text


def test_merged_model_is_the_base_with_the_best_adapter(dev_run, embedded_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    merged_dir = dev_run.out / "merged"
    assert sorted(p.name for p in merged_dir.iterdir()) == [
        "README.md", "actune_prompt.json", "chat_template.jinja", "config.json", "generation_config.json", "model.safetensors",
        "tokenizer.json", "tokenizer_config.json", "training_meta.json", "training_tasks.json"]
    assert json.loads((merged_dir / "config.json").read_text())["dtype"] == "float32"  # trained in float32
    assert load_prompt_spec(merged_dir) == load_prompt_spec(dev_run.out)
    for name in ("training_meta.json", "training_tasks.json"):
        assert (merged_dir / name).read_text() == (dev_run.out / name).read_text()
    merged = AutoModelForCausalLM.from_pretrained(merged_dir).eval()
    assert merged.dtype == torch.float32 and not hasattr(merged, "peft_config")
    tok = AutoTokenizer.from_pretrained(merged_dir)
    ids = tok(f"Question: {FACTS[0][0]}\nThought 1: I need to search", return_tensors="pt").input_ids
    with torch.no_grad():
        expected = base_plus_adapter(embedded_model, dev_run.out)(input_ids=ids).logits[0, -1]
        got = merged(input_ids=ids).logits[0, -1]
    assert torch.allclose(got, expected, atol=1e-3, rtol=1e-4)
    assert int(got.argmax()) == int(expected.argmax())


def test_resume_from_the_last_complete_checkpoint_keeps_the_best(tmp_path, embedded_model, monkeypatch):
    from safetensors.torch import load_file

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "text")
    cfg = tiny_config(tmp_path, embedded_model, max_steps=2)
    real_replace = train_run.replace_folder

    def crash(tmp: Path, out: Path) -> None:  # killed after training, while saving
        shutil.copytree(tmp, tmp_path / "first")
        raise OSError("disk full")

    monkeypatch.setattr(train_run, "replace_folder", crash)
    with pytest.raises(OSError, match="disk full"):
        train(cfg, log=lambda line: None)
    ckpts = tmp_path / "adapter.checkpoints"
    assert sorted(p.name for p in ckpts.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert not (tmp_path / "adapter").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter.checkpoints", "ds", "first", "store.jsonl"]
    # a later checkpoint that was cut off while saving (weights, no trainer_state.json) is not resumed from
    (ckpts / "checkpoint-3").mkdir()
    shutil.copy(ckpts / "checkpoint-2" / "adapter_model.safetensors", ckpts / "checkpoint-3")

    monkeypatch.setattr(train_run, "replace_folder", real_replace)
    lines: list[str] = []
    res = train(cfg, log=lines.append)
    assert f"train: resuming from {ckpts / 'checkpoint-2'}" in lines
    first = json.loads((tmp_path / "first" / "training_meta.json").read_text())
    meta = json.loads((tmp_path / "adapter" / "training_meta.json").read_text())
    assert res.steps == meta["steps"] == 2
    assert meta["eval_losses"] == first["eval_losses"] and [e["step"] for e in meta["eval_losses"]] == [1, 2]
    assert (meta["best_step"], meta["best_eval_loss"]) == (first["best_step"], first["best_eval_loss"])
    assert meta["losses"] == first["losses"]
    ours = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    theirs = load_file(str(tmp_path / "first" / "adapter_model.safetensors"))
    assert ours.keys() == theirs.keys() and all(bool((ours[k] == theirs[k]).all()) for k in ours)
    assert not ckpts.exists()



def test_a_run_resumed_mid_way_with_lora_dropout_ends_with_the_uninterrupted_runs_adapter(tmp_path, embedded_model,
                                                                                         monkeypatch):
    """LoRA dropout from geometric gaps draws on torch's generator, which the checkpoints carry: step 3 redone
    after a resume from step 2 draws the same masks, so the adapter is bit for bit the same."""
    from safetensors.torch import load_file

    from actune.train.config import LoraSettings

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "text")
    cfg = tiny_config(tmp_path, embedded_model, max_steps=3, lora=LoraSettings(r=4, alpha=8, dropout=0.3),
                      dropout_masks="gaps")

    def crash(tmp: Path, out: Path) -> None:  # the whole run done, kept aside before its checkpoints go
        shutil.copytree(tmp, tmp_path / "first")
        raise OSError("disk full")

    monkeypatch.setattr(train_run, "replace_folder", crash)
    with pytest.raises(OSError, match="disk full"):
        train(cfg, log=lambda line: None)
    monkeypatch.undo()
    ckpts = tmp_path / "adapter.checkpoints"
    assert sorted(p.name for p in ckpts.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-3"]  # best and last
    shutil.rmtree(ckpts / "checkpoint-3")  # as if killed during step 3
    lines: list[str] = []
    train(cfg, log=lines.append)
    assert f"train: resuming from {ckpts / 'checkpoint-2'}" in lines
    first = json.loads((tmp_path / "first" / "training_meta.json").read_text())
    meta = json.loads((tmp_path / "adapter" / "training_meta.json").read_text())
    assert meta["speed"]["dropout_masks"] == "gaps" and len(meta["losses"]) == 3
    assert meta["losses"] == first["losses"] and meta["eval_losses"] == first["eval_losses"]
    ours = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    theirs = load_file(str(tmp_path / "first" / "adapter_model.safetensors"))
    assert ours.keys() == theirs.keys() and all(bool((ours[k] == theirs[k]).all()) for k in ours)


def test_a_run_first_puts_back_an_adapter_that_a_crashed_swap_left_aside(tmp_path, embedded_model):
    from actune.records.atomic_write import _aside

    cfg = tiny_config(tmp_path, embedded_model, dataset=tmp_path / "nope")
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    (tmp_path / "adapter" / "training_meta.json").write_text("{}")  # written before every swap
    (tmp_path / "adapter").rename(_aside(tmp_path / "adapter"))  # killed between the swap's two renames
    with pytest.raises(TrainError, match="dataset not found"):  # even a run that fails at once
        train(cfg, log=lambda line: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]
    assert (tmp_path / "adapter" / "adapter_config.json").read_text() == "{}"


def test_chat_run_without_a_dev_slice(tmp_path, embedded_model):
    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "chat")
    cfg = tiny_config(tmp_path, embedded_model, wire_format="chat", eval_fraction=0, max_steps=1, max_length=256)
    res = train(cfg, log=lambda line: None)
    out = tmp_path / "adapter"
    assert (res.steps, res.train_examples, res.dev_examples, res.eval_losses, res.best_step) == (1, 4, 0, [], None)
    meta = json.loads((out / "training_meta.json").read_text())
    assert (meta["dev_task_ids"], meta["eval_losses"], meta["best_step"], meta["merged"]) == ([], [], None, None)
    assert sorted(p.name for p in out.iterdir()) == ADAPTER_FILES
    assert load_prompt_spec(out).wire == "chat"
    assert [t["id"] for t in json.loads((out / "training_tasks.json").read_text())] == ["q0", "q1", "q2", "q3"]


def test_tools_run_from_an_exported_dataset(tmp_path, embedded_model):
    """The tools wire from export (Arrow round trip) through tokenising to a two-step run."""
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from actune.train.sft import use_tools_template

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "tools")
    cfg = tiny_config(tmp_path, embedded_model, wire_format="tools", eval_fraction=0, max_steps=2, max_length=512)
    tok = AutoTokenizer.from_pretrained(embedded_model)
    use_tools_template(tok, embedded_model, None)
    enc = tokenize_dataset(load_from_disk(str(tmp_path / "ds")), tok, cfg)
    trained = [t for t in enc[0]["labels"] if t != -100]
    assert tok.decode(trained) == (
        'I need to search Walkman.\n<tool_call>\n{"name": "search", "arguments": {"entity": "Walkman"}}\n'
        '</tool_call><|im_end|>So the answer is Sony.\n<tool_call>\n{"name": "finish", "arguments": {"answer": '
        '"Sony"}}\n</tool_call><|im_end|>')
    assert sum(enc["straddling"]) == 0 and not any(enc["truncated"])
    res = train(cfg, log=lambda line: None)
    assert (res.steps, res.train_examples) == (2, 4)
    assert load_prompt_spec(tmp_path / "adapter").wire == "tools"


def test_wire_format_mismatch_is_refused(tmp_path, embedded_model):
    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "chat")
    with pytest.raises(TrainError, match="wire format is \\['chat'\\].*train.wire_format is 'text'"):
        train(tiny_config(tmp_path, embedded_model))
    with pytest.raises(TrainError, match="dataset not found"):
        train(tiny_config(tmp_path, embedded_model).model_copy(update={"dataset": tmp_path / "nope"}))


def test_tokenize_dataset_chat_and_unmasked(tmp_path, embedded_model):
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(embedded_model)
    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "chat")
    cfg = tiny_config(tmp_path, embedded_model, wire_format="chat").model_copy(update={"max_length": 512})
    enc = tokenize_dataset(load_from_disk(str(tmp_path / "ds")), tok, cfg)
    assert enc.column_names == ["input_ids", "labels", "n_tokens", "n_trained", "truncated", "straddling"]
    first = enc[0]
    trained = [t for t in first["labels"] if t != -100]
    assert tok.decode(trained) == ("Thought 1: I need to search Walkman.\nAction 1: search[Walkman]<|im_end|>"
                                   "Thought 2: So the answer is Sony.\nAction 2: finish[Sony]<|im_end|>")
    assert first["n_trained"] == len(trained) and sum(enc["straddling"]) == 0 and not any(enc["truncated"])
    unmasked = tokenize_dataset(load_from_disk(str(tmp_path / "ds")), tok,
                                cfg.model_copy(update={"mask_observations": False}))
    assert unmasked[0]["labels"] == unmasked[0]["input_ids"] == first["input_ids"]


# -- the pieces alone ---------------------------------------------------------------------------------

def test_dev_split_is_by_task_disjoint_and_deterministic():
    ids = [f"t{i % 10:02d}" for i in range(30)]  # 10 tasks, 3 trajectories each
    assert dev_task_ids(ids, 0.25, seed=0) == ["t01", "t07", "t08"]  # round(2.5) = 3 tasks
    assert dev_task_ids(ids, 0.25, seed=7) == ["t01", "t03", "t08"]
    assert dev_task_ids(list(reversed(ids)), 0.25, seed=0) == ["t01", "t07", "t08"]  # order does not matter
    assert dev_task_ids(["q0", "q1", "q2", "q3"], 0.1, seed=0) == ["q2"]  # at least one task
    assert dev_task_ids(["a", "b"], 0.9, seed=0) == ["a"]  # never all of them
    assert dev_task_ids(ids, 0.0, seed=0) == []
    train_idx, dev_idx = split_by_task(ids, 0.25, seed=0)
    assert sorted(train_idx + dev_idx) == list(range(30)) and len(dev_idx) == 9
    assert {ids[i] for i in dev_idx} == {"t01", "t07", "t08"}
    assert not {ids[i] for i in train_idx} & {ids[i] for i in dev_idx}
    assert split_by_task(ids, 0.25, seed=0) == (train_idx, dev_idx)
    assert split_by_task(["a", "b", "a", "c", "b"], 0.4, seed=0) == ([1, 3, 4], [0, 2])
    with pytest.raises(TrainError, match="a dev slice needs at least 2 tasks.*eval_fraction=0"):
        dev_task_ids(["only", "only"], 0.1, seed=0)


@pytest.mark.parametrize("cuda, cuda_bf16, cpu_bf16, expected", [
    (False, False, True, "bfloat16"), (False, False, False, "float32"),
    (True, True, False, "bfloat16"), (True, False, True, "float32"),
], ids=["amx-or-avx512bf16-cpu", "avx2-cpu", "bf16-gpu", "older-gpu"])
def test_dtype_auto_follows_the_hardware(monkeypatch, cuda, cuda_bf16, cpu_bf16, expected):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: cuda_bf16)
    monkeypatch.setattr(cpu_features, "native_bf16", lambda: cpu_bf16)
    assert resolve_dtype("auto") == expected
    assert (resolve_dtype("float32"), resolve_dtype("bfloat16")) == ("float32", "bfloat16")
