"""``training_tasks.json``: the tasks a tuned model has seen, ``[{"id", "question"}, ...]``.

Training writes it into the adapter and merged model folders; eval's leakage check reads it (a model is never
scored on its training tasks), and so does a training whose base model is such a folder, which passes the
lineage on. One reader for both, here in the core, because neither stage may import the other.
"""

from __future__ import annotations

import json
from pathlib import Path

from actune.config import ConfigError

__all__ = ["TRAINING_TASKS_FILE", "read_training_tasks"]

TRAINING_TASKS_FILE = "training_tasks.json"


def read_training_tasks(path: Path) -> list[dict[str, str]]:
    """The records of one ``training_tasks.json``; a :class:`ConfigError` naming the file (and the item) when
    it is not a list of objects with string ``id`` and ``question``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list of {{\"id\", \"question\"}} objects")
    for j, item in enumerate(data):
        if not (isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("question"), str)):
            raise ConfigError(f"{path}: [{j}]: expected an object with string \"id\" and \"question\"")
    return data
