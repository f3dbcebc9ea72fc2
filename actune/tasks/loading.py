"""``load_tasks(cfg)``: read the records, turn them into tasks, then subset, filter, offset, limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from actune.records.task_record import Task
from actune.tasks.alfworld_games import load_games
from actune.tasks.config import TaskConfig
from actune.tasks.custom import custom_task
from actune.tasks.fever import fever_task
from actune.tasks.formats import task_loader
from actune.tasks.hotpotqa import REACT_DEV_SIZE, hotpotqa_task, react_subset_indices
from actune.tasks.sources import TaskFileError, iter_hf_records, iter_json_records

__all__ = ["load_tasks", "TaskFileError"]


def _records(cfg: TaskConfig) -> Iterator[tuple[str, dict[str, Any]]]:
    if cfg.path is None and cfg.hf_dataset is None:
        raise TaskFileError("tasks: set 'path' (a file or folder) or 'hf_dataset' to say which tasks to load")
    if cfg.hf_dataset is not None:
        yield from iter_hf_records(cfg.hf_dataset, cfg.hf_config, cfg.split)
        return
    path = Path(cfg.path)  # type: ignore[arg-type]
    if path.is_dir():
        yield from iter_hf_records(str(path), cfg.hf_config, cfg.split)
    elif path.is_file():
        yield from iter_json_records(path)
    else:
        raise TaskFileError(f"{path}: task file or folder not found")


def _react_subset(tasks: list[Task], source: str) -> list[Task]:
    order = react_subset_indices()
    if tasks and all("dev_index" in t.meta for t in tasks):
        by_dev = {t.meta["dev_index"]: t for t in tasks}
        return [by_dev[i] for i in order if i in by_dev]
    if len(tasks) < REACT_DEV_SIZE:
        raise TaskFileError(
            f"{source}: react_subset needs the full {REACT_DEV_SIZE}-question dev set in official order "
            f"(or records with 'dev_index'); this source has {len(tasks)} records"
        )
    return [tasks[i] for i in order]


def _record_task(cfg: TaskConfig, where: str, index: int, rec: dict[str, Any]) -> Task:
    """One record of a built-in file format as a task."""
    if cfg.format == "hotpotqa":
        return hotpotqa_task(rec, where, index, cfg.split, cfg.env or "wiki", cfg.keep_context)
    if cfg.format == "fever":
        return fever_task(rec, where, index, cfg.split, cfg.env or "fever")
    return custom_task(rec, where, index, cfg.split, cfg.env)


def _custom_loader_tasks(cfg: TaskConfig) -> list[Task] | None:
    """The tasks of ``cfg.format``'s own loader (:mod:`actune.tasks.formats`); None for a built-in format."""
    loader = task_loader(cfg.format)
    if loader is None:
        return None
    tasks = list(loader(cfg) or [])
    wrong = next((t for t in tasks if not isinstance(t, Task)), None)
    if wrong is not None:
        raise TaskFileError(f"tasks.format {cfg.format!r}: the loader returned a {type(wrong).__name__}, not an "
                            "actune.records.task_record.Task")
    return tasks


def load_tasks(cfg: TaskConfig) -> list[Task]:
    """The tasks ``cfg`` describes; a malformed record raises :class:`TaskFileError` naming file and line."""
    if cfg.format == "alfworld":
        if cfg.path is None:
            raise TaskFileError("tasks: format 'alfworld' needs 'path', a folder of ALFWorld games")
        try:
            tasks = load_games(cfg.path, cfg.split)
        except FileNotFoundError as e:
            raise TaskFileError(str(e)) from None
        return _select(tasks, cfg)
    tasks = _custom_loader_tasks(cfg)
    if tasks is None:
        tasks = [_record_task(cfg, where, index, rec) for index, (where, rec) in enumerate(_records(cfg))]
    if cfg.react_subset:
        tasks = _react_subset(tasks, cfg.path or cfg.hf_dataset or "")
    elif cfg.exclude_react_subset:
        held_out = {id(t) for t in _react_subset(tasks, cfg.path or cfg.hf_dataset or "")}
        tasks = [t for t in tasks if id(t) not in held_out]
    return _select(tasks, cfg)


def _select(tasks: list[Task], cfg: TaskConfig) -> list[Task]:
    for key, value in cfg.where.items():
        tasks = [t for t in tasks if t.meta.get(key) == value]
    tasks = tasks[cfg.offset:]
    if cfg.limit is not None:
        tasks = tasks[: cfg.limit]
    return tasks
