"""Every command on bad input, through ``actune.cli.main`` as the console script calls it: the documented exit
code (:mod:`actune.cli.exit_codes`) and one line naming the key, the file and line, or the path. No case starts a
server or a model: each is refused before anything runs, or fails on its input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actune.cli import exit_codes, main

TYPO = "concurency"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    broken = tmp_path / "broken.yaml"
    broken.write_text("bootstrap:\n  store: a.jsonl\n  concurrency: [1, 2\n")  # the list never closes
    agent = tmp_path / "agent.yaml"
    agent.write_text("temperature: 0.2\n")
    world = tmp_path / "world.yaml"
    world.write_text("seed: 1\n")
    not_json = tmp_path / "store.jsonl"
    not_json.write_text('{"task": 1}\nnot json\n')
    return {"broken": broken, "agent": agent, "world": world, "store": not_json, "dir": tmp_path}


# (argv, code, what stderr must name) for a wrong key: every command with a config takes [CONFIG] [key=value ...]
def bad_key_cases(f: dict[str, Path]) -> list[tuple[list[str], int, str]]:
    out = str(f["dir"] / "out")
    return [
        (["config", "show", f"bootstrap.{TYPO}=3"], exit_codes.USAGE, f"bootstrap.{TYPO}: unknown key"),
        *[([stage, str(f["world"]), f"bootstrap.{TYPO}=3"], exit_codes.USAGE, "seed: unknown key")
          for stage in ("bootstrap", "export", "train", "eval")],  # a world config is not a run config
        (["serve", f"{TYPO}=3"], exit_codes.USAGE, f"{TYPO}: unknown key"),
        (["quickstart", "--preset", "smoke", f"bootstrap.{TYPO}=3", "--out", out], exit_codes.USAGE,
         f"bootstrap.{TYPO}: unknown key"),
        (["world", "generate", str(f["world"]), "n_peple=3", "--out", out], exit_codes.USAGE, "n_peple: unknown key"),
        (["run", str(f["agent"]), f"{TYPO}=3", "--question", "q", "--endpoint", "http://127.0.0.1:9/v1"],
         exit_codes.USAGE, f"{TYPO}: unknown key"),
    ]


def test_a_wrong_key_is_a_usage_error_naming_it(files, capsys):
    for argv, code, named in bad_key_cases(files):
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert named in err, (argv, err)
    assert not (files["dir"] / "out").exists()  # nothing ran


def test_a_broken_yaml_is_a_usage_error_naming_file_and_line(files, capsys):
    for argv in (["config", "show", str(files["broken"])], ["bootstrap", str(files["broken"])],
                 ["eval", str(files["broken"])], ["serve", str(files["broken"])]):
        assert main(argv) == exit_codes.USAGE, argv
        err = capsys.readouterr().err
        assert re.search(re.escape(str(files["broken"])) + r":\d+: invalid YAML", err), (argv, err)


def test_a_bad_input_file_fails_naming_it(files, capsys):
    missing = str(files["dir"] / "missing")
    cases = [
        (["import", str(files["store"]), "--format", "openai", "--store", str(files["dir"] / "s.jsonl")],
         exit_codes.NOTHING_DONE, "none of the 2 records"),  # read, every record rejected: nothing done
        (["import", missing, "--format", "openai"], exit_codes.FAILED, missing),
        (["distill-errors", str(files["store"]), "--out", str(files["dir"] / "c.json"), "--diagnoser", "rules"],
         exit_codes.FAILED, f"{files['store']}:"),
        (["card", missing], exit_codes.FAILED, missing),
        (["push", missing, "--repo", "org/name"], exit_codes.FAILED, missing),
        (["model", "prepare", "gpt-9"], exit_codes.FAILED, "gpt-9"),
        # the environment's files, before any episode: no corpus, or one that is not there
        (["run", "--question", "q", "--endpoint", "http://127.0.0.1:9/v1"], exit_codes.USAGE,
         "needs a corpus, a JSONL file of pages (env.corpus; actune run: --corpus)"),
        (["run", "--question", "q", "--endpoint", "http://127.0.0.1:9/v1", "--corpus", missing], exit_codes.USAGE,
         f"{missing}: corpus file not found"),
    ]
    for argv, code, named in cases:
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert named in err, (argv, err)


def test_a_bad_command_line_is_a_usage_error():
    with pytest.raises(SystemExit) as e:
        main(["export"])  # no config
    assert e.value.code == exit_codes.USAGE
    assert main([]) == exit_codes.USAGE  # no command: the help, and usage's code


def test_a_file_that_is_not_utf8_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"temperature: 0.\xfc\n")
    for argv, code, named in [
        (["presets", str(bad)], exit_codes.USAGE, f"{bad}: not UTF-8 text, not a preset"),
        (["run", "--config", str(bad), "--question", "q", "--endpoint", "http://127.0.0.1:9/v1"], exit_codes.USAGE,
         f"{bad}:1: not UTF-8 text (byte 0xfc at column 16"),
    ]:
        assert main(argv) == code, argv
        assert named in capsys.readouterr().err, argv
