"""``tasks.format`` beyond the built-ins: a loader by import path or by an ``actune.tasks`` entry point, whose tasks
are then filtered like any others; anything else is an error listing what would work."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from actune.config import ConfigError, load_config
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks
from actune.tasks.sources import TaskFileError

LOADER = '''
from actune.records.task_record import Task


def load(cfg):
    n = cfg.options.get("n", 3)
    return [Task(id=f"sku-{i}", question=f"How many of item {i}?", answer=str(i), env=cfg.env or "inventory",
                 split=cfg.split, meta={"kind": "even" if i % 2 == 0 else "odd"}) for i in range(n)]


def not_tasks(cfg):
    return [{"question": "q"}]
'''


@pytest.fixture
def loader_module(tmp_path: Path, monkeypatch) -> str:
    (tmp_path / "my_task_loader_91c.py").write_text(LOADER)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_task_loader_91c"


def test_a_loader_by_import_path_gets_the_config_and_its_tasks_are_filtered(loader_module: str) -> None:
    cfg = load_config(TaskConfig, None, [f"format={loader_module}:load", "options={n: 5}", "split=train",
                                         "where={kind: even}", "offset=1"])
    tasks = load_tasks(cfg)
    assert [(t.id, t.env, t.split) for t in tasks] == [("sku-2", "inventory", "train"), ("sku-4", "inventory", "train")]


def test_a_loader_by_entry_point(loader_module: str, monkeypatch) -> None:
    def entry_points(group=None, **_):
        points = {"actune.tasks": [("skus", f"{loader_module}:load")]}
        return [importlib.metadata.EntryPoint(n, v, group) for n, v in points.get(group, [])]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert [t.id for t in load_tasks(TaskConfig(format="skus", limit=2))] == ["sku-0", "sku-1"]


def test_a_loader_must_return_tasks(loader_module: str) -> None:
    with pytest.raises(TaskFileError, match=rf"tasks.format '{loader_module}:not_tasks': the loader returned a dict, "
                                            r"not an actune.records.task_record.Task"):
        load_tasks(TaskConfig(format=f"{loader_module}:not_tasks"))


def test_an_unknown_format_lists_what_would_work(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None, **_: [])
    (tmp_path / "run.yaml").write_text("tasks:\n  format: csv\n")
    with pytest.raises(ConfigError, match=r"tasks.format: Value error, unknown task format 'csv': not a built-in "
                                          r"\(hotpotqa, fever, custom, alfworld\), nor an entry point of group "
                                          r"actune.tasks \(none installed\), nor a callable by import path, "
                                          r"module:function \(e.g. mypkg.tasks:load\)"):
        load_config(TaskConfig, tmp_path / "run.yaml", section="tasks")
    with pytest.raises(ConfigError, match=r"options: are a custom task loader's settings; the built-in format "
                                          r"'custom' takes none"):
        load_config(TaskConfig, None, ["format=custom", "options={n: 1}"])
