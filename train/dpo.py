"""DPO on preference pairs (``train.objective: dpo``): TRL's ``DPOTrainer`` with a LoRA adapter, the reference
model the same weights with the adapter switched off (TRL's own rule for a PEFT model without ``ref_model``: no
second copy in memory), and observation tokens kept out of the loss on both sides of every pair.

    summary = train_dpo(TrainConfig(objective="dpo", base_model="runs/sft/merged", dataset="runs/pairs", ...))

``dataset`` is a folder of :func:`actune.bootstrap.preference_pairs.export_pairs`; ``base_model`` is where DPO
starts: the SFT model (its merged folder) for ETO's SFT -> DPO, or the base. TRL tokenises ``prompt`` + ``chosen``
strings and puts every completion token in the loss, observations included; actune tokenises the pairs' segments
itself (:func:`tokenize_pair`, by :func:`actune.train.masking.tokenize_segments`, as SFT does) and hands TRL the
token ids with a loss flag per token (:class:`MaskedPreferenceCollator`). ``train.dpo``
(:class:`actune.train.config.DpoSettings`) holds ``beta`` and any other ``DPOConfig`` field (``loss_type``...) on top
of actune's. The dev slice (``eval_fraction``, by task) picks the
checkpoint of the lowest dev loss; a rerun resumes from the last complete checkpoint. On a CPU, TRL's fused LM head
projects only the completion tokens (:func:`actune.train.speed.fused_head_on_trained_positions`); with
``train.padding_free`` (the default) a batch's sequences run as one padding-free row
(:func:`actune.train.packed_rows.pack_fused_forward`), where TRL 1.16 would pad them.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Callable

from actune.config import public_dump
from actune.runtime.provenance import provenance
from actune.train.checkpoints import durable_checkpoints, run_identity, train_resuming
from actune.train.common import (
    Start,
    TrainError,
    load_model,
    logged_losses,
    open_start,
    recipe_args,
    split_by_task,
    steps_per_epoch,
    trl_args,
)
from actune.train.config import TrainConfig
from actune.train.masking import tokenize_segments
from actune.train.saving import save_weights, start_prompt_spec, training_tasks_record, write_adapter_folder

__all__ = ["LOSS_COLUMNS", "dpo_args", "make_dpo_trainer", "tokenize_pair", "tokenized_pairs", "train_dpo"]

LOSS_COLUMNS = ["prompt_ids", "chosen_ids", "rejected_ids", "chosen_loss", "rejected_loss"]


def tokenize_pair(tokenizer: Any, row: dict[str, Any]) -> dict[str, list[int]]:
    """A pair's token ids (the prompt once, then each side) and each side's loss flags (1: trained)."""
    from trl.data_utils import common_prefix_length

    prompt = row["prompt_segments"]
    chosen = tokenize_segments(tokenizer, [*prompt, *row["chosen_segments"]])
    rejected = tokenize_segments(tokenizer, [*prompt, *row["rejected_segments"]])
    # where the two sides' tokens part: the prompt, up to a token that merges across its end
    p = common_prefix_length(chosen.input_ids, rejected.input_ids)
    return {"prompt_ids": chosen.input_ids[:p],
            "chosen_ids": chosen.input_ids[p:], "chosen_loss": [int(x != -100) for x in chosen.labels[p:]],
            "rejected_ids": rejected.input_ids[p:], "rejected_loss": [int(x != -100) for x in rejected.labels[p:]]}


def _collator_class() -> type:
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    class MaskedPreferenceCollator(DataCollatorForPreference):
        """TRL's collator with the completion mask taken from each token's loss flag, not "every completion token":
        TRL has no per-token mask inside a completion, which an agent episode's observations need."""

        def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
            import torch

            out = super().torch_call(examples)
            flags = [[0] * len(e["prompt_ids"]) + list(e[f"{side}_loss"]) for side in ("chosen", "rejected")
                     for e in examples]
            if self.max_length is not None:  # as TRL truncates the ids (keep_start)
                flags = [f[: self.max_length] for f in flags]
            width = out["completion_mask"].shape[1]
            out["completion_mask"] = torch.tensor([f + [0] * (width - len(f)) for f in flags], dtype=torch.long)
            return out

    return MaskedPreferenceCollator


def _trainer_class() -> type:
    from trl import DPOTrainer

    class ActuneDPOTrainer(DPOTrainer):
        """DPOTrainer on pairs :func:`tokenize_pair` already tokenised (TRL would tokenise the strings again)."""

        def _prepare_dataset(self, dataset: Any, processing_class: Any, args: Any, dataset_name: str) -> Any:
            return dataset

        def _set_signature_columns_if_needed(self) -> None:
            # with precompute_ref_log_probs TRL adds the reference's log-probs as two columns of the dataset
            self._signature_columns = [*LOSS_COLUMNS, "ref_chosen_logps", "ref_rejected_logps"]

    return ActuneDPOTrainer


def dpo_args(cfg: TrainConfig, dtype: str, ckpt_dir: Path) -> Any:
    """The ``DPOConfig``: what actune sets, then ``cfg.dpo`` on top (checked by TRL itself)."""
    from trl import DPOConfig

    has_dev = cfg.eval_fraction > 0
    ours = {**recipe_args(cfg, dtype, ckpt_dir),
            "per_device_eval_batch_size": cfg.per_device_train_batch_size, "max_length": cfg.max_length,
            "save_steps": 1 if has_dev else cfg.save_steps, "eval_strategy": "steps" if has_dev else "no",
            "eval_steps": 1 if has_dev else None, "load_best_model_at_end": has_dev,
            "metric_for_best_model": "eval_loss" if has_dev else None, "greater_is_better": False if has_dev else None}
    return trl_args(DPOConfig, ours, cfg.dpo.trl_settings(), "train.dpo")


def _split(ds: Any, cfg: TrainConfig) -> tuple[Any, Any]:

    train_idx, dev_idx = split_by_task(list(ds["task_id"]), cfg.eval_fraction, cfg.seed)
    return ds.select(train_idx), (ds.select(dev_idx) if dev_idx else None)


def tokenized_pairs(pairs: Any, tokenizer: Any, max_length: int | None, say: Callable[[str], None],
                    where: str = "pairs") -> Any:
    """Each pair's token ids and loss flags (:func:`tokenize_pair`), without the pairs whose prompt alone fills
    ``max_length`` (no completion token left to compare, as TRL drops such pairs)."""

    missing = {"task_id", "prompt_segments", "chosen_segments", "rejected_segments"} - set(pairs.column_names)
    if missing:
        raise TrainError(f"{where}: not a preference-pairs folder (no {', '.join(sorted(missing))}; write one "
                         "with export_pairs)")
    tokenized = pairs.map(lambda row: tokenize_pair(tokenizer, row), desc="Tokenising pairs and their loss flags")
    fits = tokenized.filter(lambda row: max_length is None or len(row["prompt_ids"]) < max_length)
    if len(fits) < len(tokenized):
        say(f"train dpo: {len(tokenized) - len(fits)} pairs dropped: their prompt alone fills max_length {max_length}")
    if len(fits) == 0:
        raise TrainError(f"{where}: every pair's prompt fills max_length {max_length}; raise max_length")
    return fits


def make_dpo_trainer(cfg: TrainConfig, args: Any, start: Start, train_ds: Any, dev_ds: Any = None) -> Any:
    """The DPO trainer on tokenised pairs (``LOSS_COLUMNS``), a fresh LoRA on the start model."""
    from actune.train.packed_rows import pack_fused_forward  # lazy: imports torch

    # lazy: train.speed imports torch, transformers and trl
    from actune.train.speed import fused_head_on_trained_positions, padding_free_matches_padded, register_varlen_sdpa

    fused_head_on_trained_positions(cfg.loss_head != "trl")
    packed = cfg.padding_free
    kwargs = {"attn_implementation": register_varlen_sdpa()} if packed else {}
    model = load_model(start.model_dir, start.dtype, **kwargs)
    # as SFT does: a model that fails the check keeps its attention, which attends padded batches as SDPA does
    packed = packed and padding_free_matches_padded(model)
    tokenizer = start.tokenizer
    collator = _collator_class()(pad_token_id=tokenizer.pad_token_id, max_length=args.max_length,
                                 truncation_mode=args.truncation_mode)
    trainer = _trainer_class()(model=model, args=args, data_collator=collator, train_dataset=train_ds,
                               eval_dataset=dev_ds, processing_class=tokenizer, peft_config=cfg.lora.peft_config())
    if packed:  # after TRL added its fused head to the model PEFT wraps
        pack_fused_forward(trainer.model.get_base_model())
    trainer.padding_free = packed  # TRL's own attribute, which it keeps False in 1.16
    return trainer


def train_dpo(cfg: TrainConfig, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Train the DPO adapter into ``cfg.output_dir`` (module docstring); returns what it did."""
    from datasets import load_from_disk

    say = log or print
    t0 = time.perf_counter()
    start = open_start(cfg)
    args = dpo_args(cfg, start.dtype, start.ckpt_dir)
    pairs = load_from_disk(str(cfg.dataset))
    tokenized = tokenized_pairs(pairs, start.tokenizer, args.max_length, say, str(cfg.dataset))
    train_ds, dev_ds = _split(tokenized.select_columns([*LOSS_COLUMNS, "task_id"]), cfg)
    train_ds, dev_ds = train_ds.select_columns(LOSS_COLUMNS), dev_ds.select_columns(LOSS_COLUMNS) if dev_ds else None
    trainer = make_dpo_trainer(cfg, args, start, train_ds, dev_ds)
    say(f"train dpo: {len(pairs)} pairs, {len(train_ds)} trained, {len(dev_ds) if dev_ds else 0} dev; "
        f"beta {args.beta}; start {cfg.base_model}; {'padding-free' if trainer.padding_free else 'padded'} batches")
    if dev_ds is not None:
        steps = steps_per_epoch(len(train_ds), trainer.args)
        trainer.args.eval_steps = trainer.args.save_steps = max(1, math.ceil(steps / cfg.evals_per_epoch))
    trainer.add_callback(durable_checkpoints())
    identity = run_identity(cfg)
    result = train_resuming(trainer, start.ckpt_dir, say, "train dpo", identity=identity)
    dev = [(int(h["step"]), float(h["eval_loss"])) for h in trainer.state.log_history if "eval_loss" in h]
    meta = {"objective": "dpo", "config": public_dump(cfg), "run": identity, "base_model": cfg.base_model,
            "pairs": len(pairs), "train_pairs": len(train_ds),
            "dev_pairs": len(dev_ds) if dev_ds else 0, "padding_free": trainer.padding_free, "beta": args.beta,
            "loss_type": list(args.loss_type),
            "steps": int(trainer.state.global_step), "final_loss": float(result.training_loss),
            "dev_losses": dev, "best_checkpoint": trainer.state.best_model_checkpoint,
            "minutes": round((time.perf_counter() - t0) / 60, 2), "losses": logged_losses(trainer),
            "dtype": start.dtype, "provenance": provenance(start.dtype)}
    final = save_weights(trainer, start)
    if final is not None:
        write_adapter_folder(final, start, start_prompt_spec(start.model_dir, cfg.wire_format), lambda merged: meta,
                             merge=cfg.merge,
                             records=training_tasks_record(zip(pairs["task_id"], pairs["question"]), start.model_dir),
                             card=True)
    say(f"train dpo: {meta['steps']} steps, loss {meta['final_loss']:.4f}; adapter in {start.out}")
    return meta
