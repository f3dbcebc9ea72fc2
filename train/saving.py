"""How every objective ends (SFT, DPO, GRPO): the one save path of an adapter folder.

    final = save_weights(trainer, start)       # every process: the adapter into <output_dir>.checkpoints/final
    if final is not None:                      # the one process that writes
        write_adapter_folder(final, start, start_prompt_spec(start.model_dir, "text"), lambda merged: meta,
                             merge=cfg.merge)

:func:`save_weights` needs every process (under FSDP and ZeRO-3 the weights are gathered from all of them); the
folder is a sibling of the output (so the swap is a rename) whose path every process knows.
:func:`write_adapter_folder` completes it: the prompt the model answers to (``actune_prompt.json``), with ``merge``
the merged model (``merged/``: base + adapter, its tokenizer and prompt), the meta file (``training_meta.json``)
and the objective's other records in the folder and in ``merged/``, the model cards (SFT's); then swaps it in whole
for the output folder (complete or absent: a crash leaves the old one) and deletes the checkpoints. Between the two
steps SFT lets go of its trainer, so the training copy is freed before the merge loads the base again.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable

from actune.agent.prompt_spec import PromptSpec, find_prompt_spec, load_prompt_spec, save_prompt_spec
from actune.config import ConfigError
from actune.records.atomic_write import atomic_write_text, replace_folder
from actune.records.training_tasks import TRAINING_TASKS_FILE, read_training_tasks
from actune.train.common import MERGED_DIR, TRAINING_META_FILE, Start, TrainError, merge_adapter
from actune.train.model_card import write_model_card

__all__ = ["FINAL_DIR", "meta_text", "save_weights", "start_prompt_spec", "training_tasks_record",
           "write_adapter_folder"]

FINAL_DIR = "final"
"""The folder of ``<output_dir>.checkpoints`` where the adapter is assembled before it becomes ``output_dir``."""


def start_prompt_spec(model_dir: Path, wire: str, method: str = "react") -> PromptSpec:
    """The prompt the start model answers to: a tuned model's own spec; a base model: ``method``, zero-shot, as
    trained."""
    found = find_prompt_spec(model_dir)
    return load_prompt_spec(found) if found else PromptSpec(method=method, regime="zero_shot", wire=wire)


def meta_text(meta: dict[str, Any]) -> str:
    """The meta file's text: ``meta`` as indented JSON."""
    return json.dumps(meta, indent=2) + "\n"


def training_tasks_record(seen: Iterable[tuple[Any, str]], model_dir: Path) -> dict[str, str]:
    """``{training_tasks.json: its text}`` for :func:`write_adapter_folder`'s ``records``: every task the tuned model
    has seen (``seen``: id and question of each example, its dev slice included), and those of its start model when
    that is a local fine-tune recording its own (a DPO or GRPO run from the SFT model, a later expert-iteration
    round from the previous round's merged model), so eval's leakage check sees the whole lineage, not the last
    objective only."""
    first: dict[str, str] = {}
    inherited = model_dir / TRAINING_TASKS_FILE
    if inherited.is_file():
        try:
            for item in read_training_tasks(inherited):
                first.setdefault(item["id"], item["question"])
        except (OSError, UnicodeDecodeError, ConfigError) as e:
            raise TrainError(f"{inherited}: unreadable training tasks of the base model ({e})") from None
    for task_id, question in seen:
        first.setdefault(str(task_id), question)
    tasks = [{"id": k, "question": first[k]} for k in sorted(first)]
    return {TRAINING_TASKS_FILE: json.dumps(tasks, indent=2, ensure_ascii=False) + "\n"}


def save_weights(trainer: Any, start: Start) -> Path | None:
    """The adapter ``trainer`` holds, saved into ``<output_dir>.checkpoints/final`` by every process; returns that
    folder to the process that writes the output (by the rule the Trainer saves its checkpoints by), None to the
    others. On failure the folder is removed."""
    final = start.ckpt_dir / FINAL_DIR
    state, writer = trainer.args.distributed_state, bool(trainer.args.should_save)
    if writer:
        shutil.rmtree(final, ignore_errors=True)  # what a run killed while saving left
    state.wait_for_everyone()
    try:
        trainer.save_model(str(final))
        # every process is past save_model (ZeRO-3 writes a file per process) and done with the checkpoints
        # before one process completes the folder, moves it and deletes them
        state.wait_for_everyone()
    except BaseException:
        if writer:
            shutil.rmtree(final, ignore_errors=True)
        raise
    return final if writer else None


def write_adapter_folder(final: Path, start: Start, spec: PromptSpec, meta: Callable[[str | None], dict[str, Any]],
                         *, merge: bool, records: dict[str, str] | None = None, card: bool = False,
                         extras: Callable[[Path], None] | None = None) -> None:
    """Complete the adapter :func:`save_weights` wrote into ``final`` (module docstring), swap it in as the output
    folder and delete the checkpoints. ``meta(merged dtype or None)``: the meta file's content; ``records``: other
    files (name -> text) written beside it; ``card``: the model cards, from the meta file; ``extras(final)``: what
    the objective adds to the adapter folder alone. On failure ``final`` is removed."""
    try:
        # a pickle of the trainer settings (no secret: trl_args keeps hub_token out); the meta file records the config
        (final / "training_args.bin").unlink(missing_ok=True)
        save_prompt_spec(spec, final)
        merged_dtype = _merge(final, start, spec) if merge else None
        texts = {TRAINING_META_FILE: meta_text(meta(merged_dtype)), **(records or {})}
        for folder in (final, final / MERGED_DIR) if merge else (final,):
            for name, text in texts.items():
                atomic_write_text(folder / name, text)
            if card:
                # replaces PEFT's template card (whose base_model is the local folder)
                write_model_card(folder, merged=folder != final)
        if extras is not None:
            extras(final)
        replace_folder(final, start.out)
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)
        raise
    shutil.rmtree(start.ckpt_dir, ignore_errors=True)


def _merge(final: Path, start: Start, spec: PromptSpec) -> str:
    """``final/merged``: the start model with the adapter merged in, its tokenizer and prompt; returns its dtype."""
    merged_dtype = merge_adapter(start.model_dir, final, final / MERGED_DIR, start.dtype)
    start.tokenizer.save_pretrained(str(final / MERGED_DIR))
    save_prompt_spec(spec, final / MERGED_DIR)
    return merged_dtype
