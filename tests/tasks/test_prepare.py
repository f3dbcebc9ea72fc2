"""``actune data prepare hotpotqa``: HotpotQA's official JSON arrays -> the files the hotpotqa preset reads (issue #49
item 2). The official-format fixtures are made from tests/data/hotpotqa_small (records with their context, as the
release holds them); the prepared folder then feeds the preset's own task writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.cli import main
from actune.sources.hotpotqa import HotpotQASource, write_hotpotqa_tasks
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


def _abstracts_tar(tmp_path: Path) -> Path:
    """A dump in the abstracts' form: a tar.bz2 of a folder of bz2 JSONL files, sentences with <a href> links; one
    of the small corpus's pages is in it with other text, two pages are not in the small corpus, one is missing."""
    import bz2
    import io
    import tarfile

    pages = [json.loads(x) for x in (SMALL / "wiki_paragraphs.jsonl").read_text().splitlines()]
    first = pages[0]
    lines = [{"id": "1", "url": "u", "title": first["title"],
              "text": ['<a href="X">' + first["title"] + "</a> is from the dump.", " A second   sentence."]},
             {"id": "2", "url": "u", "title": "Only In The Dump", "text": [["Paragraph form."], ["Kept too."]]},
             {"id": "3", "url": "u", "title": "Empty", "text": []}]
    tar_path = tmp_path / "abstracts.tar.bz2"
    with tarfile.open(tar_path, "w:bz2") as tar:
        for name, part in (("dump/AA/wiki_00.bz2", lines[:1]), ("dump/AB/wiki_00.bz2", lines[1:])):
            data = bz2.compress("".join(json.dumps(x) + "\n" for x in part).encode())
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return tar_path


def test_the_abstracts_dump_is_the_corpus_and_context_fills_what_it_lacks(tmp_path: Path, capsys) -> None:
    train, dev = _official(tmp_path)
    out = tmp_path / "hotpotqa"
    assert main(["data", "prepare", "hotpotqa", "--train", str(train), "--dev", str(dev), "--abstracts",
                 str(_abstracts_tar(tmp_path)), "--out", str(out)]) == 0
    small = [json.loads(x) for x in (SMALL / "wiki_paragraphs.jsonl").read_text().splitlines()]
    pages = [json.loads(x) for x in (out / "wiki_paragraphs.jsonl").read_text().splitlines()]
    assert pages[:2] == [{"title": small[0]["title"], "sentences": [f"{small[0]['title']} is from the dump.",
                                                                     "A second sentence."]},
                         {"title": "Only In The Dump", "sentences": ["Paragraph form.", "Kept too."]}]
    assert sorted(p["title"] for p in pages[2:]) == sorted(p["title"] for p in small[1:])  # the context fills in
    manifest = json.loads((out / "prepared.json").read_text())
    assert manifest["pages"] == len(small) + 1 and manifest["abstract_pages"] == 2
    assert len(manifest["inputs"]["abstracts"]["sha256"]) == 64
    assert f"{len(small) + 1} pages (2 from the abstracts dump;" in capsys.readouterr().out


def test_a_bad_abstracts_page_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    import bz2

    train, dev = _official(tmp_path)
    folder = tmp_path / "dump" / "AA"
    folder.mkdir(parents=True)
    (folder / "wiki_00.bz2").write_bytes(bz2.compress(b'{"title": "A", "text": ["x"]}\n{"title": "B", "text": 3}\n'))
    out = tmp_path / "hotpotqa"
    with pytest.raises(TaskFileError, match=r"AA/wiki_00.bz2:2: text: must be a list of sentences, got int"):
        prepare_hotpotqa(train, dev, out, abstracts=tmp_path / "dump")
    assert list(out.iterdir()) == []
    with pytest.raises(TaskFileError, match="nowhere: not found"):
        prepare_hotpotqa(train, dev, out, abstracts=tmp_path / "nowhere")
    (folder / "wiki_00.bz2").write_bytes(bz2.compress(b'{"title": "A", "text": ["x"]}\n{"title": "B\xfc", "text": []}\n'))
    with pytest.raises(TaskFileError, match=r"AA/wiki_00.bz2:2: not UTF-8 text \(byte 0xfc\)"):
        prepare_hotpotqa(train, dev, out, abstracts=tmp_path / "dump")
    assert list(out.iterdir()) == []


def test_an_official_file_that_is_not_utf8_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    train, dev = _official(tmp_path)
    dev.write_bytes(dev.read_bytes().replace(b'"question": "', b'"question": "\xfc', 1))
    out = tmp_path / "hotpotqa"
    with pytest.raises(TaskFileError, match=r"hotpot_dev.json: not UTF-8 text \(byte 0xfc\); save the file as UTF-8"):
        prepare_hotpotqa(train, dev, out)
    assert list(out.iterdir()) == []


def test_an_empty_split_writes_nothing_and_exits_3(tmp_path: Path, capsys) -> None:
    from actune.cli import main

    train, dev = _official(tmp_path)
    train.write_text("[]")
    out = tmp_path / "hotpotqa"
    assert main(["data", "prepare", "hotpotqa", "--train", str(train), "--dev", str(dev), "--out", str(out)]) == 3
    assert f"{train}: no records (HotpotQA's train file" in capsys.readouterr().err
    assert list(out.iterdir()) == []
