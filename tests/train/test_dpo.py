"""DPO on preference pairs: the pair's tokens and loss flags (observations never trained, on either side), the
collator's completion mask, and a real two-step DPO run on the embedded model from pairs of a real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from agent.fake_episodes import RIGHT, WALKMAN, WRONG_EARLY, WRONG_LATE
from agent.fake_episodes import scripted_store as _store

from actune.bootstrap.preference_pairs import export_pairs, pair_rows
from actune.train.config import TrainConfig
from actune.train.dpo import _collator_class, tokenize_pair, train_dpo


@pytest.fixture(scope="module")
def tokenizer(embedded_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(embedded_model)


def _row(tmp_path: Path, failed: list[str]) -> dict:
    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, failed)])
    return pair_rows(tmp_path / "s.jsonl")[0][0]


def test_a_pairs_tokens_are_the_prompt_once_then_each_side_and_observations_carry_no_loss(tmp_path, tokenizer):
    row = _row(tmp_path, WRONG_EARLY)
    enc = tokenize_pair(tokenizer, row)
    for side in ("chosen", "rejected"):
        whole = tokenizer(row["prompt"] + row[side])["input_ids"]
        assert enc["prompt_ids"] + enc[f"{side}_ids"] == whole  # the very tokens of the rendered text
        trained = tokenizer.decode([t for t, f in zip(enc[f"{side}_ids"], enc[f"{side}_loss"]) if f])
        untrained = tokenizer.decode([t for t, f in zip(enc[f"{side}_ids"], enc[f"{side}_loss"]) if not f])
        observations = [s["text"] for s in row[f"{side}_segments"] if not s["train"]]
        assert observations and all(o.strip() in untrained for o in observations)
        assert not any(o.strip()[:20] in trained for o in observations)
    # the unreadable action is in the rejected side's loss: it is what the pair pushes down
    assert "look up Walkman" in tokenizer.decode([t for t, f in zip(enc["rejected_ids"], enc["rejected_loss"]) if f])


def test_the_collator_takes_the_completion_mask_from_the_loss_flags(tmp_path, tokenizer):
    enc = tokenize_pair(tokenizer, _row(tmp_path, WRONG_LATE))
    collate = _collator_class()(pad_token_id=0, max_length=None)
    batch = collate.torch_call([enc])
    n_p = len(enc["prompt_ids"])
    chosen = [0] * n_p + enc["chosen_loss"]
    rejected = [0] * n_p + enc["rejected_loss"]
    width = batch["completion_mask"].shape[1]
    assert batch["completion_mask"].tolist() == [chosen + [0] * (width - len(chosen)),
                                                 rejected + [0] * (width - len(rejected))]


@pytest.mark.parametrize("precompute", [False, True], ids=["reference-each-step", "reference-precomputed"])
def test_two_real_dpo_steps_on_the_embedded_model(tmp_path, embedded_model, precompute):
    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE), (WALKMAN, RIGHT), (WALKMAN, WRONG_EARLY)])
    export_pairs(tmp_path / "s.jsonl", tmp_path / "pairs")
    cfg = TrainConfig(objective="dpo", base_model=str(embedded_model), dataset=tmp_path / "pairs",
                      output_dir=tmp_path / "dpo", max_steps=2, per_device_train_batch_size=1, eval_fraction=0.0,
                      learning_rate=1e-4, dtype="float32", lora={"r": 4, "alpha": 8},
                      dpo={"beta": 0.2, "precompute_ref_log_probs": precompute})
    meta = train_dpo(cfg, log=lambda m: None)
    assert (meta["steps"], meta["pairs"], meta["beta"], meta["objective"]) == (2, 2, 0.2, "dpo")
    assert (tmp_path / "dpo" / "adapter_model.safetensors").is_file()
    assert json.loads((tmp_path / "dpo" / "actune_prompt.json").read_text())["method"] == "react"
    saved = json.loads((tmp_path / "dpo" / "training_meta.json").read_text())
    assert saved["steps"] == 2 and len(saved["losses"]) == 2  # a loss a logged step
    assert saved["padding_free"] is True  # the default: each batch's sequences as one row
    # the pairs' task (the walkman question), for eval's leakage check
    assert [t["id"] for t in json.loads((tmp_path / "dpo" / "training_tasks.json").read_text())] == [WALKMAN.id]
    # a model card as SFT's adapters have, saying how it was trained: actune push uploads the folder with it
    card = (tmp_path / "dpo" / "README.md").read_text()
    assert "fine-tuned with TRL's `DPOTrainer` on pairs of one task's kept and failed episodes" in card
    assert "- 2 preference pairs (a kept and a failed episode of one task, the prompt shared): 2 trained on, 0 in " \
           "the dev slice; beta 0.2, loss sigmoid." in card
    assert "\n- dpo\n" in card and "Final training loss" in card and "float32, seed" in card


def test_padding_free_dpo_learns_what_padded_dpo_learns(tmp_path, embedded_model):
    """Three real steps each way from the same seed: the same losses and the same adapter, to float rounding (the
    exact log-probabilities and gradients: tests/train/test_packed_rows.py)."""
    from safetensors.torch import load_file

    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE), (WALKMAN, RIGHT), (WALKMAN, WRONG_EARLY)])
    export_pairs(tmp_path / "s.jsonl", tmp_path / "pairs")
    runs = {}
    for padding_free in (True, False):
        cfg = TrainConfig(objective="dpo", base_model=str(embedded_model), dataset=tmp_path / "pairs",
                          output_dir=tmp_path / f"dpo-{padding_free}", max_steps=3, per_device_train_batch_size=2,
                          eval_fraction=0.0, learning_rate=1e-3, dtype="float32",
                          lora={"r": 4, "alpha": 8, "dropout": 0.0},  # dropout masks follow the shapes
                          padding_free=padding_free, dpo={"beta": 0.2})
        meta = train_dpo(cfg, log=lambda m: None)
        assert meta["padding_free"] is padding_free
        saved = json.loads((cfg.output_dir / "training_meta.json").read_text())
        runs[padding_free] = (saved["losses"], load_file(cfg.output_dir / "adapter_model.safetensors"))
    (free_losses, free), (padded_losses, padded) = runs[True], runs[False]
    assert free_losses == pytest.approx(padded_losses, abs=1e-4)
    assert free_losses[-1] != pytest.approx(free_losses[0], abs=1e-3)  # step 3 scores what steps 1-2 learned
    assert free.keys() == padded.keys()
    moved = [k for k in free if "lora_B" in k and free[k].abs().max() > 0]
    assert moved  # two steps trained the adapter
    # Adam's first update is about lr * sign(gradient): elements whose gradient is rounding noise may take either
    # sign, so the adapters are compared as a whole
    diff = torch.cat([(free[k] - padded[k]).flatten() for k in free]).norm()
    assert float(diff) < 1e-2 * float(torch.cat([padded[k].flatten() for k in free]).norm())


def test_a_model_that_fails_the_padding_free_check_trains_padded(tmp_path, embedded_model, monkeypatch):
    import actune.train.speed as speed

    monkeypatch.setattr(speed, "padding_free_matches_padded", lambda model: False)
    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE)])
    export_pairs(tmp_path / "s.jsonl", tmp_path / "pairs")
    cfg = TrainConfig(objective="dpo", base_model=str(embedded_model), dataset=tmp_path / "pairs",
                      output_dir=tmp_path / "dpo", max_steps=1, per_device_train_batch_size=1, eval_fraction=0.0,
                      dtype="float32", lora={"r": 4, "alpha": 8})
    meta = train_dpo(cfg, log=lambda m: None)
    assert meta["padding_free"] is False and meta["steps"] == 1


def test_the_export_command_writes_pairs_when_the_run_trains_dpo(tmp_path, capsys):
    import argparse

    from datasets import load_from_disk

    from actune.cli import stages

    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE)])
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {tmp_path / 's.jsonl'}\ntrain:\n  objective: dpo\n"
                   f"  dataset: {tmp_path / 'pairs'}\n")
    parser = argparse.ArgumentParser(prog="actune")
    stages.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["export", str(cfg)])
    assert args.func(args) == 0
    assert f"exported 1 preference pairs of 1 tasks (1 cut where the two episodes part) from {tmp_path / 's.jsonl'}" \
        in capsys.readouterr().out
    assert load_from_disk(str(tmp_path / "pairs"))["rejected_episode"] != []
