"""read_json: every way a JSON file can be bad names the file (and line) in the caller's error type."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.jsonl import read_json


class _Bad(ValueError):
    pass


def test_read_json_names_the_file_and_line_of_each_fault(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good, _Bad, "catalog") == {"a": [1, 2]}
    with pytest.raises(_Bad, match=r"missing.json: catalog not found$"):
        read_json(tmp_path / "missing.json", _Bad, "catalog")
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "a": 1,\n  "b": \n}')
    with pytest.raises(_Bad, match=r"broken.json:4: invalid JSON: Expecting value"):
        read_json(broken, _Bad, "catalog")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "caf\xe9"}')
    with pytest.raises(_Bad, match=r"latin.json:1: not UTF-8 text"):
        read_json(latin, _Bad, "catalog")
