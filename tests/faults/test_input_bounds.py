"""Issue #47 finding 4: an integer past Python's 4,300 digits or thousands of nested brackets, in an override, a YAML
config, a JSONL or JSON file or one import line, is a named error (file, line, key) with its exit code, never a
traceback; a bad import line is rejected alone, as any other bad record."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.cli import main
from actune.config import ConfigError, load_config
from actune.records.jsonl import iter_jsonl_objects
from actune.tasks.config import TaskConfig
from actune.tasks.loading import load_tasks
from actune.tasks.sources import TaskFileError

BIG = "9" * 5000
DEEP = "[" * 6000 + "]" * 6000
IMPORTS = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_hotpotqa.jsonl"


def test_configs_and_overrides(tmp_path: Path, capsys) -> None:
    from actune.bootstrap.config import BootstrapConfig

    assert main(["config", "show", f"bootstrap.concurrency={BIG}"]) == 2
    err = capsys.readouterr().err
    assert "override bootstrap.concurrency: Exceeds the limit (4300 digits)" in err and "Traceback" not in err
    for name, text in (("big.yaml", f"concurrency: {BIG}\n"), ("deep.yaml", DEEP + "\n")):
        (tmp_path / name).write_text(text)
        with pytest.raises(ConfigError, match=f"{name}: invalid YAML: "):
            load_config(BootstrapConfig, tmp_path / name)


def test_json_files_name_file_and_line(tmp_path: Path) -> None:
    lines = tmp_path / "t.jsonl"
    lines.write_text('{"question": "q", "answer": "a"}\n{"question": "q2", "answer": ' + BIG + "}\n")
    with pytest.raises(TaskFileError, match=r"t.jsonl:2: not valid JSON \(Exceeds the limit"):
        list(iter_jsonl_objects(lines, TaskFileError))
    whole = tmp_path / "t.json"
    whole.write_text(DEEP)
    with pytest.raises(TaskFileError, match=r"t.json: not valid JSON \(nested too deeply\)"):
        load_tasks(TaskConfig(format="custom", path=str(whole)))


def test_one_bad_import_line_is_rejected_alone(tmp_path: Path, capsys) -> None:
    good = IMPORTS.read_text(encoding="utf-8").splitlines()[0]
    src = tmp_path / "src.jsonl"
    src.write_text('{"messages": [{"role": "user", "content": ' + BIG + "}]}\n" + DEEP + "\n" + good + "\n")
    assert main(["import", str(src), "--format", "openai", "--store", str(tmp_path / "s.jsonl")]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert "3 records, 1 imported, 2 rejected" in out.out and "src.jsonl:2: not valid JSON (nested too deeply)" in out.out
