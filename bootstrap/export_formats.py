"""Write actune's exported examples for other trainers: one JSON object a line (``actune export --format``).

    summary, trained_anyway = export_file(stores, "runs/dataset.openai.jsonl", "openai", config)

The examples are exactly those :func:`actune.bootstrap.export.export_dataset` keeps and hold the same text; only
the layout changes, so another trainer learns from what actune's own training would: ``openai`` (chat messages
with a per-turn ``weight``), ``trl`` (TRL's prompt-completion form in the run's wire, loss on trained turns only:
prefer it for TRL), ``sharegpt`` (LLaMA-Factory) and ``alpaca`` (observations inside ``output``, so trained on).
A file is written whole or not at all (temp file + rename), then its dataset card beside it
(:func:`actune.runtime.hub_push.file_card_path`: ``X.jsonl`` -> ``X.README.md``), which marks the file as an
export's own: any other file is replaced only with ``overwrite``, a store never.

The rules in full: docs/modules.md, actune.bootstrap.export_formats.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import metadata_load

from actune.agent.config import Wire
from actune.bootstrap.config import ExportConfig
from actune.bootstrap.dataset_card import card_settings, dataset_card
from actune.bootstrap.export import (
    ExportError,
    ExportSummary,
    OutputRefused,
    export_rows,
    store_paths,
    text_turns_example,
)
from actune.records.atomic_write import atomic_write_text, atomic_writer, check_output, output_lock
from actune.runtime.hub_push import file_card_path

__all__ = ["EXPORT_FORMATS", "FILE_FORMATS", "alpaca_example", "export_file", "openai_example", "sharegpt_example",
           "trl_examples"]

#: ``actune``: the ``datasets`` folder ``actune train`` reads; the others: one JSONL file for another trainer.
EXPORT_FORMATS = ("actune", "trl", "openai", "sharegpt", "alpaca")
FILE_FORMATS = EXPORT_FORMATS[1:]


def openai_example(row: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A chat-format row -> (OpenAI messages with ``weight`` on assistant turns, 0: every flag is kept)."""
    messages = []
    for m in row["messages"]:
        out = {"role": m["role"], "content": m["content"]}
        if m["role"] == "assistant":
            out["weight"] = int(bool(m["train"]))
        messages.append(out)
    return {"messages": messages}, 0


def trl_examples(row: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """A row of any wire -> (one prompt-completion record per trained turn, 0: every flag is kept): text rows as
    strings (the text before the turn, the turn), chat and tools rows as messages (tools rows with ``tools``)."""
    if row["wire"] == "text":
        return [{"prompt": t["prompt"], "completion": t["completion"]} for t in row["turns"]], 0
    messages = [{k: v for k, v in m.items() if k != "train"} for m in row["messages"]]
    extra = {"tools": row["tools"]} if row["wire"] == "tools" else {}
    return [{"prompt": messages[:i], "completion": [messages[i]], **extra}
            for i, m in enumerate(row["messages"]) if m["role"] == "assistant" and m["train"]], 0


def sharegpt_example(row: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A chat-format row -> (ShareGPT record, assistant turns trained although actune would not train them)."""
    system = ""
    turns = []
    unmasked = 0
    for m in row["messages"]:
        if m["role"] == "system":
            system = m["content"]
            continue
        turns.append({"from": "gpt" if m["role"] == "assistant" else "human", "value": m["content"]})
        unmasked += int(m["role"] == "assistant" and not m["train"])
    return {"system": system, "conversations": turns}, unmasked


def alpaca_example(row: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A text-format row -> (Alpaca record, segments in ``output`` that actune would not train)."""
    head, *steps = row["segments"]
    output = "".join(s["text"] for s in steps)
    return {"instruction": head["text"].rstrip("\n"), "input": "", "output": output}, sum(not s["train"] for s in steps)


_CONVERT: dict[str, tuple[str, Callable[[dict[str, Any]], tuple[Any, int]]]] = {
    "trl": ("chat", trl_examples), "openai": ("chat", openai_example), "sharegpt": ("chat", sharegpt_example),
    "alpaca": ("text", alpaca_example)}


def _is_own_file(out: Path) -> bool:
    """Whether the file ``out`` (or only its card) was written by an export: its card beside it is actune's (its
    front matter's ``pretty_name`` begins "actune ", as :func:`actune.bootstrap.dataset_card.dataset_card` writes
    it) and names ``out`` as its data (``train.json`` and ``train.jsonl`` share the card name ``train.README.md``:
    one export's card must not make the other file look like an export's)."""
    card = file_card_path(out)
    if out.is_symlink() or (out.exists() and not out.is_file()) or not card.is_file():
        return False
    try:
        meta = metadata_load(card)
        files = [f.get("path") for c in meta.get("configs") or [] for f in c.get("data_files") or []]
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, TypeError, yaml.YAMLError):  # someone else's
        return False
    # a card of an older actune names no data file: its pretty_name alone says it is an export's
    return str(meta.get("pretty_name") or "").startswith("actune ") and files in ([], [out.name])


def _json_line(record: dict[str, Any]) -> str:
    text = json.dumps(record, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (from a task file) has no UTF-8 form; \u escapes do
        text = json.dumps(record)
    return text + "\n"


def export_file(
    stores: str | Path | Sequence[str | Path],
    out_path: str | Path,
    fmt: str,
    config: ExportConfig | None = None,
    *,
    actions: Mapping[str, str] | Callable[[str], str] | None = None,
    overwrite: bool = False,
    wire: Wire = "chat",
) -> tuple[ExportSummary, int]:
    """Write the examples of ``stores`` to ``out_path`` in ``fmt`` (one of :data:`FILE_FORMATS`), atomically;
    ``trl`` in ``wire`` (the others have their wire fixed: chat, or text for Alpaca).

    Returns the export summary and how many turns or segments the format makes a trainer train on although
    actune would not (observations in Alpaca outputs, unreadable actions in ShareGPT): the caller says so.
    """
    if fmt not in _CONVERT:
        raise ValueError(f"format {fmt!r}: a file is written in one of {', '.join(FILE_FORMATS)}")
    out = Path(out_path)
    card = file_card_path(out)
    with output_lock(out, ExportError):
        check_output(out, store_paths(stores), OutputRefused, own=_is_own_file(out), overwrite=overwrite,
                     mine=f"an export file has actune's card {card.name} beside it", also=[card])
        text_turns = text_turns_example if (fmt, wire) == ("trl", "text") else None  # a row per turn, not per step
        rows, summary = export_rows(stores, wire if fmt == "trl" else _CONVERT[fmt][0], config, actions=actions,
                                    example=text_turns)
        return _write_file(rows, summary, out, fmt, config)


def _write_file(rows: list[dict[str, Any]], summary: ExportSummary, out: Path, fmt: str,
                config: ExportConfig | None) -> tuple[ExportSummary, int]:
    """The card, then the examples in ``fmt`` beside it, each written whole: the card first, so that a run killed
    between the two finds its card on the rerun and takes the file for its own (:func:`_is_own_file`)."""
    convert = _CONVERT[fmt][1]
    unmasked, lines = 0, []
    for row in rows:
        records, n = convert(row)
        unmasked += n
        lines += [_json_line(r) for r in (records if isinstance(records, list) else [records])]  # trl: one a turn
    atomic_write_text(file_card_path(out), dataset_card(summary, rows, fmt=fmt, data_files=out.name,
                                                        settings=card_settings(config), unmasked=unmasked))
    with atomic_writer(out) as f:
        f.writelines(lines)
    return summary, unmasked
