"""One tiny real recipe run: export 4 records, train LoRA r=4 for 3 steps on the embedded model,
check the adapter folder, its prompt spec and metadata, and that the LoRA B weights moved off zero."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from training_records import records

from actune.agent.prompt_spec import load_prompt_spec
from actune.bootstrap.export import export_dataset
from actune.bootstrap.store import TrajectoryStore
from actune.train.config import LoraSettings, TrainConfig
from actune.train.run import TrainError, train


def write_store(path: Path) -> Path:
    with TrajectoryStore.open(path) as store:
        for t in records():
            store.append(t)
    return path


def tiny_config(tmp_path: Path, embedded_model: Path, **kw) -> TrainConfig:
    return TrainConfig(base_model=str(embedded_model), dataset=tmp_path / "ds", output_dir=tmp_path / "adapter",
                       lora=LoraSettings(r=4, alpha=8, dropout=0.0), learning_rate=5e-3, warmup_ratio=0.0,
                       max_steps=3, per_device_train_batch_size=2, max_length=128, bf16=False, save_steps=1000,
                       **kw)


def test_tiny_lora_run_learns_and_saves_a_complete_adapter(tmp_path, embedded_model):
    from safetensors.torch import load_file

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "text")
    cfg = tiny_config(tmp_path, embedded_model)
    ds_files = sorted(p.name for p in (tmp_path / "ds").iterdir())
    lines: list[str] = []
    res = train(cfg, log=lines.append)
    out = tmp_path / "adapter"
    assert res.steps == 3 and res.examples == 4 and len(res.losses) == 3
    assert all(math.isfinite(x) and x > 0 for x in res.losses)
    assert 0 < res.trained_tokens < res.tokens and 0.3 < res.masked_fraction < 0.95
    for name in ("adapter_config.json", "adapter_model.safetensors", "actune_prompt.json", "training_meta.json"):
        assert (out / name).is_file(), name
    spec = load_prompt_spec(out)
    assert (spec.method, spec.regime, spec.wire) == ("react", "zero_shot", "text")
    weights = load_file(str(out / "adapter_model.safetensors"))
    b = [v for k, v in weights.items() if "lora_B" in k]
    assert b and any(float(v.abs().max()) > 0 for v in b)  # LoRA B starts at zero: it learned
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 4
    meta = json.loads((out / "training_meta.json").read_text())
    assert meta["examples"] == 4 and meta["trained_tokens"] == res.trained_tokens
    assert meta["final_loss"] == res.losses[-1] and meta["straddling_tokens"] == 0
    assert meta["config"]["lora"]["r"] == 4
    # nothing left beside the adapter: no temp folder, checkpoints removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "ds", "store.jsonl"]
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == ds_files  # no cache files written into it
    assert any("masked" in line for line in lines)


def test_wire_format_mismatch_is_refused(tmp_path, embedded_model):
    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "chat")
    with pytest.raises(TrainError, match="wire format is \\['chat'\\].*train.wire_format is 'text'"):
        train(tiny_config(tmp_path, embedded_model))
    with pytest.raises(TrainError, match="dataset not found"):
        train(tiny_config(tmp_path, embedded_model).model_copy(update={"dataset": tmp_path / "nope"}))


def test_tokenize_dataset_chat_and_unmasked(tmp_path, embedded_model):
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from actune.train.run import tokenize_dataset

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
