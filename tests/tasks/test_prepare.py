"""``actune data prepare hotpotqa``: HotpotQA's official JSON arrays -> the files the hotpotqa preset reads (issue #49
item 2). The official-format fixtures are made from tests/data/hotpotqa_small (records with their context, as the
release holds them); the prepared folder then feeds the preset's own task writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.cli import main
from actune.hotpotqa_source import HotpotQASource, write_hotpotqa_tasks
from actune.tasks.prepare import iter_json_array, prepare_hotpotqa
from actune.tasks.sources import TaskFileError

SMALL = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"


def _official(tmp_path: Path) -> tuple[Path, Path]:
    """The small set as the release writes it: a JSON array of records with their context paragraphs (here the
    supporting pages the small corpus holds) and without supporting_titles or our dev_index."""
    pages = {p["title"]: p["sentences"] for p in map(json.loads, (SMALL / "wiki_paragraphs.jsonl").open())}
    out = []
    for split in ("train", "dev"):
        records = [json.loads(x) for x in (SMALL / f"{split}_with_context.jsonl").read_text().splitlines()]
        for r in records:
            r["context"] = [[t, pages[t]] for t in r.pop("supporting_titles") if t in pages]
            r.pop("dev_index", None)
        path = tmp_path / f"hotpot_{split}.json"
        path.write_text(json.dumps(records, indent=1))  # spread over lines, as the release's dev file is not
        out.append(path)
    return out[0], out[1]


def test_the_release_becomes_the_presets_files_and_the_preset_reads_them(tmp_path: Path, capsys) -> None:
    train, dev = _official(tmp_path)
    out = tmp_path / "hotpotqa"
    assert main(["data", "prepare", "hotpotqa", "--train", str(train), "--dev", str(dev), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: train 5 and dev 8 questions, ")
    for split in ("train", "dev"):
        want = [json.loads(x) for x in (SMALL / f"{split}_with_context.jsonl").read_text().splitlines()]
        got = [json.loads(x) for x in (out / f"{split}_with_context.jsonl").read_text().splitlines()]
        def fields(r: dict) -> dict:  # the titles as a set: our shared copy orders them its own way
            return {**{k: v for k, v in r.items() if k not in ("context", "dev_index")},
                    "supporting_titles": sorted(r["supporting_titles"])}

        assert [fields(r) for r in got] == [fields(r) for r in want]
    pages = [json.loads(x) for x in (out / "wiki_paragraphs.jsonl").read_text().splitlines()]
    small = [json.loads(x) for x in (SMALL / "wiki_paragraphs.jsonl").read_text().splitlines()]
    assert sorted(pages, key=lambda p: p["title"]) == sorted(small, key=lambda p: p["title"])
    manifest = json.loads((out / "prepared.json").read_text())
    assert manifest["records"] == {"train": 5, "dev": 8} and manifest["pages"] == len(pages)
    assert len(manifest["inputs"]["train"]["sha256"]) == 64 and manifest["provenance"]["actune"]
    made = write_hotpotqa_tasks(HotpotQASource(data_dir=str(out), n_test=3, n_dev=1), tmp_path / "tasks")
    assert made["counts"]["test"] == 3 and made["counts"]["train"] > 0
    assert sorted(p.name for p in out.iterdir()) == ["dev_with_context.jsonl", "prepared.json",
                                                     "train_with_context.jsonl", "wiki_paragraphs.jsonl"]


@pytest.mark.parametrize("edit, message", [
    (lambda rs: rs[1].update(supporting_facts=[["X", "zero"]]), r"hotpot_dev.json: record 1: supporting_facts\[0\]"),
    (lambda rs: rs[2].pop("question"), r"hotpot_dev.json: record 2: question: must be a str, got NoneType"),
    (lambda rs: rs.append(7), r"hotpot_dev.json: record 8: a record must be an object, got int"),
])
def test_a_bad_record_names_file_index_and_key_and_nothing_is_written(tmp_path: Path, edit, message) -> None:
    train, dev = _official(tmp_path)
    records = json.loads(dev.read_text())
    edit(records)
    dev.write_text(json.dumps(records))
    out = tmp_path / "hotpotqa"
    with pytest.raises(TaskFileError, match=message):
        prepare_hotpotqa(train, dev, out)
    assert list(out.iterdir()) == []


def test_the_array_reader_streams_items_and_names_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    items = [{"i": i, "s": "x" * 3000} for i in range(1000)]  # more than one read of the file
    path.write_text(json.dumps(items))
    assert list(iter_json_array(path)) == items
    path.write_text(json.dumps(items)[:-2])
    with pytest.raises(TaskFileError, match=r"a.json: item 999: not valid JSON"):
        list(iter_json_array(path))
    path.write_text('{"not": "an array"}')
    with pytest.raises(TaskFileError, match="not a JSON array"):
        list(iter_json_array(path))
    path.write_text("[]")
    assert list(iter_json_array(path)) == []
