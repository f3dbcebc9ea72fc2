"""Write a trained adapter's folder whole: weights, the prompt it answers to, the merged model, the metadata.

    save_adapter_folder(trainer, out, model_dir, tokenizer, start_prompt_spec(model_dir, "text"), meta,
                        merge=True, dtype="bfloat16")

The preference and reward objectives (DPO, GRPO) start from a model that may itself be tuned and end the same
way; the folder is built beside ``out`` and swapped in only once complete, so a crash leaves the old one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from actune.agent.prompt_spec import PromptSpec, find_prompt_spec, load_prompt_spec, save_prompt_spec
from actune.atomic_write import replace_folder

__all__ = ["save_adapter_folder", "start_prompt_spec"]


def start_prompt_spec(model_dir: Path, wire: str, method: str = "react") -> PromptSpec:
    """The prompt the start model answers to: a tuned model's own spec; a base model: ``method``, zero-shot, as
    trained."""
    found = find_prompt_spec(model_dir)
    return load_prompt_spec(found) if found else PromptSpec(method=method, regime="zero_shot", wire=wire)


def save_adapter_folder(trainer: Any, out: Path, model_dir: Path, tokenizer: Any, spec: PromptSpec,
                        meta: dict[str, Any], *, merge: bool, dtype: str) -> None:
    from actune.train.run import MERGED_DIR, merge_adapter

    tmp = out.parent / f".{out.name}.new"
    trainer.save_model(str(tmp))
    (tmp / "training_args.bin").unlink(missing_ok=True)
    save_prompt_spec(spec, tmp)
    if merge:
        merge_adapter(model_dir, tmp, tmp / MERGED_DIR, dtype)
        tokenizer.save_pretrained(str(tmp / MERGED_DIR))
        save_prompt_spec(spec, tmp / MERGED_DIR)
    (tmp / "training_meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    replace_folder(tmp, out)
