"""Issue #47's data-loss probes, as a user types them: an output never replaces what its command did not write.

Export refused an output that is or holds its store, or a folder or file it did not write (exit 2, one line,
nothing changed; ``--overwrite`` for the user who means it); import opens only a store or a new file as
``--store`` and cuts no line of anything else; an import that kept nothing leaves no empty store; a second export
into one folder is refused naming the first.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actune.bootstrap.export import SUMMARY_FILE, ExportError
from actune.cli import main
from actune.cli.exit_codes import FAILED, NOTHING_DONE, OK, USAGE
from actune.records.atomic_write import output_lock

DATA = Path(__file__).resolve().parents[1] / "data" / "import"
SOURCE = DATA / "fireact_gpt_hotpotqa.jsonl"  # 3 OpenAI-format records, all imported
ARRAY = DATA / "fireact_alpaca_hotpotqa.json"  # a JSON array


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _store(path: Path) -> Path:
    assert main(["import", str(SOURCE), "--format", "openai", "--store", str(path)]) == OK
    return path


def _config(tmp_path: Path, store: Path, dataset: Path) -> Path:
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {store}\ntrain:\n  dataset: {dataset}\n")
    return cfg


def _one_line(err: str, *parts: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in err, err


def test_export_into_the_folder_holding_its_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "v" / "runs"
    store = _store(runs / "t.jsonl")
    (runs / "other.txt").write_text("a file of the user's")
    cfg = _config(tmp_path, store, tmp_path / "ds")
    capsys.readouterr()
    before = _tree(runs)
    # the command: exit 0 and v/runs deleted, the store with it
    assert main(["export", str(cfg), f"store={store}", f"dataset={runs}"]) == USAGE
    _one_line(capsys.readouterr().err, f"actune export: {runs}: the output contains the input {store}")
    assert main(["export", str(cfg), f"dataset={runs}", "--overwrite"]) == USAGE  # not even when told to
    capsys.readouterr()
    assert _tree(runs) == before
    assert sorted(p.name for p in runs.parent.iterdir()) == ["runs"]  # no .swap-old, no lock


def test_a_dpo_export_is_held_to_the_same_rules(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    runs = tmp_path / "runs"
    store = _store(runs / "t.jsonl")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    cfg = _config(tmp_path, store, runs)
    capsys.readouterr()
    before = _tree(runs)
    assert main(["export", str(cfg), "train.objective=dpo"]) == USAGE
    _one_line(capsys.readouterr().err, f"{runs}: the output contains the input {store}")
    assert main(["export", str(cfg), "train.objective=dpo", f"dataset={mine}"]) == USAGE
    _one_line(capsys.readouterr().err, f"{mine}: exists and is not", "--overwrite")
    assert _tree(runs) == before and _tree(mine) == {"thesis.tex": b"years of work"}


def test_a_file_export_onto_its_store_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    store = _store(tmp_path / "s.jsonl")
    kept = store.read_bytes()
    cfg = _config(tmp_path, store, tmp_path / "ds")
    capsys.readouterr()
    # the command: the store was replaced by the export
    assert main(["export", str(cfg), f"store={store}", "--format", "openai", "--out", str(store)]) == USAGE
    _one_line(capsys.readouterr().err, f"{store}: the output is the input {store}")
    assert store.read_bytes() == kept and not (tmp_path / "s.README.md").exists()


def test_export_over_what_it_did_not_write_needs_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    store = _store(tmp_path / "s.jsonl")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    notes = tmp_path / "notes.jsonl"
    notes.write_text("mine\n")
    cfg = _config(tmp_path, store, mine)
    capsys.readouterr()
    assert main(["export", str(cfg)]) == USAGE
    _one_line(capsys.readouterr().err, f"{mine}: exists and is not", "--overwrite")
    assert main(["export", str(cfg), "--format", "sharegpt", "--out", str(notes)]) == USAGE
    _one_line(capsys.readouterr().err, f"{notes}: exists and is not", "--overwrite")
    assert _tree(mine) == {"thesis.tex": b"years of work"} and notes.read_text() == "mine\n"
    assert main(["export", str(cfg), "--overwrite"]) == OK
    assert (mine / SUMMARY_FILE).is_file()
    assert main(["export", str(cfg), "wire_format=chat"]) == OK  # its own output now: replaced, as before


def test_a_second_export_into_one_folder_is_refused_naming_the_first(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    store = _store(tmp_path / "s.jsonl")
    ds = tmp_path / "ds"
    cfg = _config(tmp_path, store, ds)
    assert main(["export", str(cfg)]) == OK
    before = _tree(ds)
    capsys.readouterr()
    with output_lock(ds, ExportError):  # the first export, still writing (a lock is per open file, not per process)
        assert main(["export", str(cfg), "wire_format=chat"]) == FAILED
    _one_line(capsys.readouterr().err, f"{ds}: another process is writing it (pid {os.getpid()}")
    assert _tree(ds) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "run.yaml", "s.jsonl"]


@pytest.mark.parametrize("content", [b"a\nb", b"b", b"\n"], ids=["two-lines", "one-line", "blank-line"])
def test_import_into_a_file_that_is_no_store_is_refused_byte_identical(tmp_path: Path, content: bytes,
                                                                        capsys: pytest.CaptureFixture) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    code = main(["import", str(SOURCE), "--format", "openai", "--store", str(notes)])
    if content.strip():  # the notes.txt: exit 1 and the file cut to "a"
        assert code == USAGE
        _one_line(capsys.readouterr().err, f"actune import: {notes}:1: ", "not a trajectory store")
        assert notes.read_bytes() == content
    else:  # blank: nothing to lose, so it is a new store
        assert code == OK


@pytest.mark.parametrize("source", [SOURCE, ARRAY], ids=["jsonl", "json-array"])
def test_import_into_its_own_source_is_refused(tmp_path: Path, source: Path, capsys: pytest.CaptureFixture) -> None:
    src = tmp_path / source.name
    src.write_bytes(source.read_bytes())
    fmt = "openai" if source == SOURCE else "alpaca"
    assert main(["import", str(src), "--format", fmt, "--store", str(src)]) == USAGE  # it lost its closing "]"
    _one_line(capsys.readouterr().err, f"actune import: {src}: the store is the input {src}")
    assert src.read_bytes() == source.read_bytes()


def test_import_into_a_folder_is_a_named_refusal(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["import", str(SOURCE), "--format", "openai", "--store", str(tmp_path)]) == USAGE
    _one_line(capsys.readouterr().err, "is a folder, not a trajectory store")  # not a disk-full advice


def test_an_import_that_keeps_nothing_leaves_no_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    store = tmp_path / "new.jsonl"
    assert main(["import", str(SOURCE), "--format", "alpaca", "--store", str(store)]) == NOTHING_DONE  # all rejected
    assert not store.exists() and list(tmp_path.iterdir()) == []
