"""Every command's input readers, driven with generated malformed input (issue #47): the command ends with a named
error or succeeds (an exit status, never an exception out of ``main``, never a traceback printed), prints at most
64 KB, and leaves its input file byte for byte as it was.

The inputs are a valid seed of each kind (a run config, an import source, a trajectory store, a training meta file,
a task file) with random edits, random bytes, and the shapes the probes of issue #47 found: integers of thousands of
digits, thousands of levels of nesting, lone surrogates, NUL bytes, YAML aliases, a byte-order mark. 40 examples a
reader by default; ``ACTUNE_FUZZ_EXAMPLES=2000`` for a longer hunt.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actune.cli import main
from actune.tasks.config import TaskConfig
from actune.tasks.loading import TaskFileError, load_tasks

IMPORT_SOURCE = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_hotpotqa.jsonl"
MAX_OUTPUT = 64 * 1024
EXIT_CODES = {0, 1, 2, 3}

NASTY = [b"9" * 5000, b"[" * 6000, b"{\"a\":" * 3000, b"\xed\xa0\x80", b"\"\\ud800\"", b"\x00", b"\xff\xfe",
         b"&a [*a, *a, *a]", b"*a", b"- ", b"{", b"}", b"\n", b"\"", b"\\", b": ", b"!!python/object:os.system",
         b"1e999999", b"-0", b"NaN", b"null", b"\xef\xbb\xbf"]


def _apply(seed: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    out = seed
    for pos, cut, piece in edits:
        pos = min(pos, len(out))
        out = out[:pos] + piece + out[pos + cut:]
    return out


def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """``seed`` with up to six edits (bytes cut, random or nasty bytes put in), or random bytes, or a nasty piece
    alone or repeated."""
    piece = st.one_of(st.binary(max_size=16), st.sampled_from(NASTY))
    edits = st.lists(st.tuples(st.integers(0, len(seed)), st.integers(0, 40), piece), min_size=1, max_size=6)
    return st.one_of(edits.map(lambda e: _apply(seed, e)), st.binary(max_size=400),
                     st.sampled_from(NASTY), st.sampled_from(NASTY).map(lambda b: b * 50))


def _run(argv: list[str], watched: Path) -> str:
    """Run the CLI in process on ``argv``; assert the contract of the module docstring; what it printed."""
    before = watched.read_bytes()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse's own exit on a bad command line
            rc = e.code if isinstance(e.code, int) else 2
    printed = out.getvalue() + err.getvalue()
    assert rc in EXIT_CODES, printed[-2000:]
    assert "Traceback (most recent call last)" not in printed
    assert len(printed.encode("utf-8", "surrogatepass")) <= MAX_OUTPUT
    assert watched.read_bytes() == before
    return printed


FUZZ = settings(max_examples=int(os.environ.get("ACTUNE_FUZZ_EXAMPLES", "40")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])


def _case(tmp_path: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=tmp_path))


@FUZZ
@given(data=mutated(b"name: fz\nseed: 3\ntrain:\n  learning_rate: 1.0e-4\n  lora: {r: 8, alpha: 16}\n"
                    b"bootstrap:\n  concurrency: 4\n  agent: {method: react, temperature: 0.2}\n"))
def test_config_show_reads_any_yaml(tmp_path: Path, data: bytes) -> None:
    path = _case(tmp_path) / "run.yaml"
    path.write_bytes(data)
    _run(["config", "show", str(path)], path)


@FUZZ
@given(value=st.one_of(st.text(max_size=60), st.sampled_from([b.decode("utf-8", "surrogateescape") for b in NASTY])))
def test_config_show_reads_any_override(tmp_path: Path, value: str) -> None:
    path = _case(tmp_path) / "run.yaml"
    path.write_text("name: fz\n")
    for key in ("train.learning_rate", "bootstrap.agent", "name"):
        _run(["config", "show", str(path), f"{key}={value}"], path)
    secret = f"SeCrEt{value}"  # whatever it is, a secret's value is never printed back
    assert secret not in _run(["config", "show", str(path), f"serve.api_key={secret}"], path)


@FUZZ
@given(data=mutated(IMPORT_SOURCE.read_bytes()[:3000]))
def test_import_reads_any_jsonl_source(tmp_path: Path, data: bytes) -> None:
    case = _case(tmp_path)
    src = case / "src.jsonl"
    src.write_bytes(data)
    _run(["import", str(src), "--format", "openai", "--store", str(case / "store.jsonl")], src)


@FUZZ
@given(data=mutated(b'[{"instruction": "Where is Paris?", "input": "", "output": "Thought 1: I need to search '
                    b'Paris.\\nAction 1: finish[France]"}]'))
def test_import_reads_any_json_array_source(tmp_path: Path, data: bytes) -> None:
    case = _case(tmp_path)
    src = case / "src.json"
    src.write_bytes(data)
    _run(["import", str(src), "--format", "alpaca", "--store", str(case / "store.jsonl")], src)


@pytest.fixture(scope="module")
def store_seed(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A real store: the import of the FireAct sample."""
    folder = tmp_path_factory.mktemp("seed")
    assert main(["import", str(IMPORT_SOURCE), "--format", "openai", "--store", str(folder / "s.jsonl")]) == 0
    return (folder / "s.jsonl").read_bytes()


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 40),
                                st.one_of(st.binary(max_size=16), st.sampled_from(NASTY))), min_size=1, max_size=4))
def test_export_and_a_second_import_read_any_store(tmp_path: Path, store_seed: bytes,
                                                    edits: list[tuple[int, int, bytes]]) -> None:
    case = _case(tmp_path)
    store = case / "store.jsonl"
    store.write_bytes(_apply(store_seed, edits))
    config = case / "run.yaml"
    config.write_text("name: fz\n")
    _run(["export", str(config), f"store={store}", f"dataset={case / 'ds'}"], store)
    _run(["distill-errors", str(store), "--out", str(case / "catalog.json"), "--diagnoser", "rules"], store)


META = json.dumps({"config": {"base_model": "smollm2-135m", "dataset": "", "max_length": 1024,
                              "lora": {"r": 8, "alpha": 16}, "learning_rate": 5e-4, "seed": 2},
                   "method": "react", "dtype": "bfloat16", "examples": 2, "train_examples": 2, "dev_examples": 0,
                   "task_ids": 2, "steps": 1, "final_loss": 0.5, "tokens": 10, "trained_tokens": 5,
                   "masked_fraction": 0.5}).encode()


@FUZZ
@given(data=mutated(META))
def test_card_reads_any_training_meta(tmp_path: Path, data: bytes) -> None:
    folder = _case(tmp_path)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "actune_prompt.json").write_text(json.dumps({"method": "react", "wire": "text"}))
    (folder / "training_meta.json").write_bytes(data)
    _run(["card", str(folder)], folder / "training_meta.json")


def _reader_contract(read: Callable[[], object], error: type[Exception]) -> None:
    """A reader with no command of its own that runs without a server: it returns, or raises its named error."""
    try:
        read()
    except error as e:
        assert "Traceback" not in str(e) and len(str(e)) <= MAX_OUTPUT


@FUZZ
@given(data=mutated(b'{"id": "t1", "question": "Where is Paris?", "answer": "France"}\n'
                    b'{"id": "t2", "question": "Who wrote Hamlet?", "answer": "Shakespeare", "aliases": ["WS"]}\n'))
def test_task_files_read_any_bytes(tmp_path: Path, data: bytes) -> None:
    path = _case(tmp_path) / "tasks.jsonl"
    path.write_bytes(data)
    _reader_contract(lambda: load_tasks(TaskConfig(path=str(path))), TaskFileError)
    assert path.read_bytes() == data
