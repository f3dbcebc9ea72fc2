"""Reading raw records: JSON lists, JSONL (with line numbers for errors) and ``datasets`` data."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Iterator

from actune.records.jsonl import JSON_ERRORS, iter_jsonl_objects, json_problem, read_text

__all__ = ["TaskFileError", "iter_json_records", "iter_hf_records", "hf_split_names", "require_files"]


class TaskFileError(ValueError):
    """A task file is malformed; the message names the file and line (or item)."""


def require_files(paths: Iterable[Path], key: str, module: str) -> None:
    """A :class:`TaskFileError` for the first of ``paths`` that is not a file, naming the config ``key`` that
    points there and the ``module`` whose docstring says where the data come from."""
    for path in paths:
        if not path.is_file():
            raise TaskFileError(f"{key}: {path} not found (the module {module} says where these files come from)")


def iter_json_records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, record)``: ``where`` is ``file:line`` for JSONL, ``file: item i`` for a JSON list."""
    if path.suffix == ".jsonl":
        yield from iter_jsonl_objects(path, TaskFileError)
        return
    text = read_text(path, TaskFileError)  # its own named errors (TaskFileError is a ValueError: kept apart)
    try:
        data = json.loads(text)
    except JSON_ERRORS as e:
        line, problem = json_problem(e)
        raise TaskFileError(f"{path}{f':{line}' if line else ''}: not valid JSON ({problem})") from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise TaskFileError(f"{path}: expected a JSON list of records (or .jsonl), got {type(data).__name__}")
    for i, rec in enumerate(data):
        where = f"{path}: item {i}"
        if not isinstance(rec, dict):
            raise TaskFileError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        yield where, rec


def hf_split_names(split: str) -> list[str]:
    """Split names to try: ``dev`` is ``validation`` on the Hub, and the other way round."""
    aliases = {"dev": ["dev", "validation"], "validation": ["validation", "dev"]}
    return aliases.get(split, [split])


def _pick_split(dd: Any, split: str, source: str) -> Any:
    for name in hf_split_names(split):
        if name in dd:
            return dd[name]
    raise TaskFileError(f"{source}: no split {split!r}; it has {sorted(dd.keys())}")


def iter_hf_records(source: str, config: str | None, split: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows of a Hugging Face dataset: a Hub id, a ``save_to_disk`` folder, or a folder of data files."""
    import datasets  # heavy: only when used

    path = Path(source)
    if path.is_dir() and ((path / "dataset_dict.json").exists() or (path / "state.json").exists()):
        loaded = datasets.load_from_disk(str(path))
        ds = loaded if isinstance(loaded, datasets.Dataset) else _pick_split(loaded, split, source)
    else:
        ds = None
        for name in hf_split_names(split):
            try:
                ds = datasets.load_dataset(source, config, split=name)
                break
            except FileNotFoundError as e:  # a folder without data files, a Hub id that is none
                raise TaskFileError(f"{source}: no task data there ({e})") from None
            except ValueError as e:  # "Unknown split": try the alias
                if "split" not in str(e).lower():
                    raise
                last = e
        if ds is None:
            raise TaskFileError(f"{source}: no split {split!r} ({last})")
    for i, row in enumerate(ds):
        yield f"{source} [{split}] row {i}", row
