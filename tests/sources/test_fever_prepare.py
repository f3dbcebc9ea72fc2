"""``actune data prepare fever``: FEVER's claims and wiki-pages dump -> the files the fever preset reads (issue #49
item 2). The dump fixture is tests/data/fever_small's pages written as FEVER writes wiki-NNN.jsonl (page ids with
underscores and bracket tokens, tab-separated numbered lines), beside pages no claim needs; the prepared folder
then feeds the preset's own task writer, which must draw exactly the splits it draws from fever_small."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.cli import main
from actune.sources.fever import FeverSource, write_fever_tasks
from actune.sources.fever_prepare import prepare_fever
from actune.tasks.fever import write_wiki_from_observation_cache
from actune.tasks.sources import TaskFileError

SMALL = Path(__file__).resolve().parents[1] / "data" / "fever_small"
_TOKENS = {"(": "-LRB-", ")": "-RRB-", ":": "-COLON-"}


def _tokens(text: str) -> str:
    for char, token in _TOKENS.items():
        text = text.replace(char, token)
    return text


def _fever_id(title: str) -> str:
    return _tokens(title).replace(" ", "_")


def _dump(tmp_path: Path) -> tuple[Path, list[dict]]:
    """fever_small's pages as two wiki-pages files (an empty first record, as wiki-001 has, and two pages no claim
    needs); the pages as the cache gives them."""
    corpus = tmp_path / "cache_corpus.jsonl"
    write_wiki_from_observation_cache(SMALL / "observation_cache.json", corpus)
    pages = [json.loads(x) for x in corpus.read_text().splitlines()]
    lines = [{"id": "", "text": "", "lines": ""}]
    for p in pages + [{"title": "Unrelated page", "sentences": ["Not asked about."]},
                      {"title": "Zebra (film)", "sentences": ["A film."]}]:
        numbered = "\n".join(f"{i}\t{_tokens(s)}\tSome link" for i, s in enumerate(p["sentences"]))
        lines.append({"id": _fever_id(p["title"]), "text": " ".join(p["sentences"]), "lines": numbered + "\n9\t"})
    folder = tmp_path / "wiki-pages"
    folder.mkdir()
    half = len(lines) // 2
    for name, part in (("wiki-001.jsonl", lines[:half]), ("wiki-002.jsonl", lines[half:])):
        (folder / name).write_text("".join(json.dumps(x) + "\n" for x in part))
    return folder, pages


def test_the_release_becomes_the_presets_files_and_the_preset_draws_the_same_splits(tmp_path: Path, capsys) -> None:
    wiki, pages = _dump(tmp_path)
    out = tmp_path / "fever"
    assert main(["data", "prepare", "fever", "--claims", str(SMALL / "paper_dev.jsonl"), "--wiki-pages", str(wiki),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out}: 19 claims (6 NOT ENOUGH INFO, 7 REFUTES, 6 SUPPORTS), 4 pages ")
    assert (out / "paper_dev.jsonl").read_text().splitlines() == [
        json.dumps(json.loads(x)) for x in (SMALL / "paper_dev.jsonl").read_text().splitlines()]
    written = [json.loads(x) for x in (out / "wiki_pages.jsonl").read_text().splitlines()]
    assert written == pages  # titles and sentences back as the cache gives them; the unrelated pages left out
    manifest = json.loads((out / "prepared.json").read_text())
    assert manifest["pages"] == 4 and manifest["missing_evidence_pages"] == 2  # David Suchet, Sean Bean: not in it
    assert [Path(f["path"]).name for f in manifest["inputs"]["wiki_pages"]] == ["wiki-001.jsonl", "wiki-002.jsonl"]
    assert len(manifest["inputs"]["claims"]["sha256"]) == 64
    cfg = dict(n_test=6, n_dev=3, split_seed=3)
    from_dump = write_fever_tasks(FeverSource(data_dir=str(out), **cfg), tmp_path / "tasks-dump")
    from_cache = write_fever_tasks(FeverSource(data_dir=str(SMALL), **cfg), tmp_path / "tasks-cache")
    assert from_dump["counts"] == from_cache["counts"] and from_dump["labels"] == from_cache["labels"]
    for split in ("train", "dev", "test"):
        assert (tmp_path / "tasks-dump" / f"{split}.jsonl").read_text() == \
            (tmp_path / "tasks-cache" / f"{split}.jsonl").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["paper_dev.jsonl", "prepared.json", "wiki_pages.jsonl"]


@pytest.mark.parametrize("where, edit, message", [
    ("claims", lambda r: r.update(label="MAYBE"), r"paper_dev.jsonl:3: 'label' must be SUPPORTS"),
    ("claims", lambda r: r.update(evidence=[[["x"]]]), r"paper_dev.jsonl:3: evidence\[0\]: must be a list of"),
    ("claims", lambda r: r.update(evidence=5), r"paper_dev.jsonl:3: evidence: must be a list of evidence sets, got int"),
    ("wiki", lambda r: r.update(lines=7), r"wiki-001.jsonl:3: lines: must be a str, got int"),
])
def test_a_bad_record_names_file_line_and_key_and_nothing_is_written(tmp_path: Path, where, edit, message) -> None:
    wiki, _ = _dump(tmp_path)
    claims = tmp_path / "paper_dev.jsonl"
    claims.write_text((SMALL / "paper_dev.jsonl").read_text())
    path = claims if where == "claims" else wiki / "wiki-001.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines()]
    edit(records[2])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "fever"
    with pytest.raises(TaskFileError, match=message):
        prepare_fever(claims, wiki, out)
    assert list(out.iterdir()) == []


def test_a_missing_dump_is_named(tmp_path: Path, capsys) -> None:
    assert main(["data", "prepare", "fever", "--claims", str(SMALL / "paper_dev.jsonl"), "--wiki-pages",
                 str(tmp_path / "nowhere"), "--out", str(tmp_path / "fever")]) == 1
    assert "nowhere: no wiki-pages JSONL files" in capsys.readouterr().err


def test_a_file_it_did_not_write_is_never_replaced_and_its_own_earlier_output_is(tmp_path: Path, capsys) -> None:
    # the official dev claims already in --out, then the train claims prepared into the same folder: the preset's
    # fixed name (paper_dev.jsonl) would replace the user's file
    wiki, _ = _dump(tmp_path)
    out = tmp_path / "fever"
    out.mkdir()
    official = "the user's own paper_dev.jsonl\n"
    (out / "paper_dev.jsonl").write_text(official)
    argv = ["data", "prepare", "fever", "--claims", str(SMALL / "paper_dev.jsonl"), "--wiki-pages", str(wiki),
            "--out", str(out)]
    assert main(argv) == 1
    assert "paper_dev.jsonl: exists and is not an earlier output of actune data prepare" in capsys.readouterr().err
    assert (out / "paper_dev.jsonl").read_text() == official and sorted(p.name for p in out.iterdir()) == [
        "paper_dev.jsonl"]
    assert main(argv[:-1] + [str(tmp_path / "fresh")]) == 0
    assert main(argv[:-1] + [str(tmp_path / "fresh")]) == 0  # its own earlier output, prepared.json beside it
    # killed while it moved its files in: one moved, prepared.json not yet, its temporary folder still there
    killed = tmp_path / "killed"
    (killed / ".prepare.abcd1234").mkdir(parents=True)
    (killed / "paper_dev.jsonl").write_text("half a publish\n")
    assert main(argv[:-1] + [str(killed)]) == 0 and (killed / "prepared.json").is_file()
    assert sorted(p.name for p in killed.iterdir()) == ["paper_dev.jsonl", "prepared.json", "wiki_pages.jsonl"]
