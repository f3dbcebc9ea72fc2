"""Bytes that are not UTF-8 in each input kind (issue #12): an error of the reader's own type naming the
file and the line of the bad bytes, never a bare ``UnicodeDecodeError``, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import ConfigError, StrictModel, load_config
from actune.envs.corpus import CorpusError, LocalCorpus, read_corpus
from actune.envs.documents import DocumentError, read_documents
from actune.judge import judge, record_verdict
from actune.records.store import StoreError, TrajectoryStore, read_state
from actune.records.trajectory import TaskRecord, Trajectory, TrajectoryFormatError, read_trajectories
from actune.tasks.config import TaskConfig
from actune.tasks.fever import write_wiki_from_observation_cache
from actune.tasks.loading import TaskFileError, load_tasks

LATIN1 = "Zürich".encode("latin-1")  # b"Z\xfcrich": the commonest way a file stops being UTF-8


def _line(i: int) -> bytes:
    return f'{{"id": "t{i}", "question": "Where is café {i}?", "answer": "here"}}\n'.encode()


def test_task_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(_line(1) + _line(2) + b'{"question": "Where is ' + LATIN1 + b'?", "answer": "x"}\n' + _line(4))
    with pytest.raises(TaskFileError, match=r"tasks\.jsonl:3: not UTF-8 text \(byte 0xfc at column 25;"):
        load_tasks(TaskConfig(path=str(path), format="custom"))


def test_task_json_list(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_bytes(b'[\n  {"question": "a?", "answer": "b"},\n  {"question": "' + LATIN1 + b'?", "answer": "c"}\n]\n')
    with pytest.raises(TaskFileError, match=r"dev\.json:3: not UTF-8 text \(byte 0xfc at column 18;"):
        load_tasks(TaskConfig(path=str(path), format="hotpotqa"))


def test_fever_observation_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache.json"
    cache.write_bytes(b'{\n"search::A": "A is a page.",\n"search::B": "' + LATIN1 + b'"\n}\n')
    with pytest.raises(TaskFileError, match=r"cache\.json:3: not UTF-8 text"):
        write_wiki_from_observation_cache(cache, tmp_path / "wiki.jsonl")
    assert not (tmp_path / "wiki.jsonl").exists()


def test_corpus(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"title": "A", "text": "A is first."}\n{"title": "' + LATIN1 + b'", "text": "Z."}\n')
    with pytest.raises(CorpusError, match=r"corpus\.jsonl:2: not UTF-8 text \(byte 0xfc at column 13;"):
        list(read_corpus(path))
    with pytest.raises(CorpusError, match=r"corpus\.jsonl:2: not UTF-8 text"):
        LocalCorpus.open(path, tmp_path / "index")
    assert not any((tmp_path / "index").iterdir())  # no index half built


def _record(task_id: str) -> bytes:
    t = Trajectory(task=TaskRecord(task_id, "q?", "x"), method="react", prediction="x", correct=True)
    return (record_verdict(t, judge(t)).to_json() + "\n").encode()


def test_store_and_its_readers(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    data = _record("a") + _record("b").replace(b'"q?"', b'"' + LATIN1 + b'"') + _record("c")
    path.write_bytes(data)
    with pytest.raises(StoreError, match=r"store\.jsonl:2: corrupt store record: not UTF-8 text \(byte 0xfc"):
        TrajectoryStore.open(path)
    with pytest.raises(StoreError, match=r"store\.jsonl:2: corrupt store record: not UTF-8 text"):
        read_state(path)
    with pytest.raises(TrajectoryFormatError, match=r"store\.jsonl:2: not UTF-8 text \(byte 0xfc"):
        list(read_trajectories(path))
    assert path.read_bytes() == data  # nothing cut or rewritten


def test_bad_bytes_on_a_last_line_without_newline_are_still_an_error_in_task_and_corpus_files(tmp_path: Path) -> None:
    # Only an append-only store has torn lines; a task file's last line is often written without newline.
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(_line(1) + b'{"question": "' + LATIN1 + b'?", "answer": "x"}')
    with pytest.raises(TaskFileError, match=r"tasks\.jsonl:2: not UTF-8 text"):
        load_tasks(TaskConfig(path=str(path), format="custom"))


class _Cfg(StrictModel):
    name: str = ""
    steps: int = 1


def test_yaml_config(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_bytes(b"# run config\nsteps: 3\nname: " + LATIN1 + b"\n")
    with pytest.raises(ConfigError, match=r"run\.yaml:3: not UTF-8 text \(byte 0xfc at column 8;"):
        load_config(_Cfg, path)
    path.write_bytes("steps: 3\nname: Zürich\n".encode())  # UTF-8 whatever the locale says
    assert load_config(_Cfg, path).name == "Zürich"


def test_documents(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"# Title\n\nFirst line.\n" + LATIN1 + b" is a city.\n")
    with pytest.raises(DocumentError, match=r"a\.md:4: not UTF-8 text \(byte 0xfc at column 2;"):
        read_documents(tmp_path)
