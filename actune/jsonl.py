"""Reading JSONL files whose every bad line is reported as ``file:line``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def iter_jsonl_objects(path: str | Path, error: type[Exception] = ValueError) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, record)`` for each non-blank line, ``where`` being ``file:line``.

    A line that is not valid JSON, or not a JSON object, raises ``error`` naming the file and line.
    """
    path = Path(path)
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise error(f"{where}: not valid JSON ({e.msg})") from None
            if not isinstance(record, dict):
                raise error(f"{where}: expected a JSON object, got {type(record).__name__}")
            yield where, record
