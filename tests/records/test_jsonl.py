"""read_json: every way a JSON file can be bad names the file (and line) in the caller's error type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.records.jsonl import read_json


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


def test_a_line_past_the_limit_is_a_named_error_not_held_in_memory(tmp_path, monkeypatch):
    """Issue #47's bounded input: a record size limit (here lowered to 1 KB; 64 MB in use)."""
    import actune.records.jsonl as jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 1024)
    path = tmp_path / "big.jsonl"
    path.write_text('{"a": 1}\n' + '{"b": "' + "x" * 5000 + '"}\n')
    with pytest.raises(ValueError, match=r"big.jsonl:2: a line longer than 1,024 bytes; no record is that large"):
        list(jsonl.iter_jsonl_objects(path))
    with pytest.raises(ValueError, match=r"big.jsonl:2: a line longer than"):
        list(jsonl.iter_appended(path, json.loads))
