"""The `actune` command: config show and model commands, run as a user would (subprocess)."""

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def actune(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "actune", *args], capture_output=True, text=True, cwd=cwd)


def test_help_lists_every_command():
    out = actune("--help")
    assert out.returncode == 0
    for cmd in ("config", "model", "serve", "run", "world", "bootstrap", "export", "train", "eval", "quickstart"):
        assert cmd in out.stdout


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    out = actune("--version")
    assert out.returncode == 0 and out.stdout == f"actune {version('actune')}\n"


def test_help_is_plain_text_without_the_docstrings_rest_markup():
    from actune.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, child in sub.choices.items():
        text = child.format_help()
        assert "``" not in text and ":mod:`" not in text and ":class:`" not in text, name
    assert sub.choices["quickstart"].format_help().count("actune quickstart [--preset NAME|FILE]") == 1


def test_config_show_resolves_file_and_overrides():
    out = actune("config", "show", "configs/smollm2-cpu.yaml", "bootstrap.concurrency=7", "train.lora.r=8")
    assert out.returncode == 0, out.stderr
    cfg = yaml.safe_load(out.stdout)
    assert cfg["bootstrap"]["concurrency"] == 7
    assert cfg["train"]["lora"]["r"] == 8
    assert cfg["serve"]["model"] == "smollm2-135m"


def test_every_shipped_config_is_valid_and_recognised(capsys):
    from actune.cli import main

    expected = {"world.yaml": "world", "envs": "env", "tasks": "tasks", "quickstart": "quickstart"}
    # configs/accelerate/ holds accelerate's own launcher files, not actune configs
    files = sorted(f for f in (REPO / "configs").rglob("*.yaml") if f.parent.name != "accelerate")
    assert len(files) >= 6
    for f in files:  # in this process: the command's own process is run by the tests above (1 s a start)
        code = main(["config", "show", str(f)])
        out = capsys.readouterr()
        assert code == 0, f"{f}: {out.err}"
        kind = expected.get(f.name, expected.get(f.parent.name, "run"))
        assert out.out.startswith(f"# {kind} config"), (f, out.out[:80])


def test_config_kind_can_be_named():
    out = actune("config", "show", "--kind", "train", "lora.r=4")
    assert out.returncode == 0, out.stderr
    assert yaml.safe_load(out.stdout)["lora"]["r"] == 4


def test_explain_prints_a_keys_type_default_documentation_and_value_and_presets_go_by_name(capsys):
    from actune.cli import main

    assert main(["config", "show", "--kind", "quickstart", "hotpotqa", "--explain", "gold_path_misses"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gold_path_misses: bool, default False" and lines[1].startswith("Gold paths that search")
    assert lines[2].endswith("hotpotqa.yaml: True")  # the preset, found by its name as --preset finds it
    assert main(["config", "show", "--explain", "train.lora.r", "train.lora.r=8"]) == 0
    assert capsys.readouterr().out.splitlines()[::2] == ["train.lora.r: int, default 16",
                                                         "value in the defaults with the overrides: 8"]
    assert main(["config", "show", "--explain", "serve.api_key", "serve.api_key=abc123"]) == 0
    assert "abc123" not in capsys.readouterr().out
    assert main(["config", "show", "--explain", "train.lora.rank"]) == 2
    assert "train.lora.rank is not a key (keys here: alpha, dropout, r, target_modules)" in capsys.readouterr().err


def test_config_errors_name_key_path_and_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("bootstrap:\n  concurency: 3\ntrain:\n  lora:\n    r: many\n")
    out = actune("config", "show", str(bad))
    assert out.returncode == 2
    assert str(bad) in out.stderr
    assert "bootstrap.concurency: unknown key" in out.stderr
    assert "train.lora.r:" in out.stderr


def test_model_prepare_unknown_name_fails_listing_known():
    out = actune("model", "prepare", "gpt-9")
    assert out.returncode == 1
    assert "smollm2-135m" in out.stderr


def test_model_prepare_prints_ready_folder(embedded_model):
    out = actune("model", "prepare", "smollm2-135m")
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == embedded_model


def test_each_exit_code_means_one_thing(tmp_path, capsys):
    """A config error, a stage that failed and a run that did nothing exit differently (actune.cli.exit_codes)."""
    from actune.cli import exit_codes, main

    codes = [exit_codes.OK, exit_codes.FAILED, exit_codes.USAGE, exit_codes.NOTHING_DONE, exit_codes.INTERRUPTED]
    assert len(set(codes)) == len(codes)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {tmp_path / 'none.jsonl'}\ntrain:\n  dataset: {tmp_path / 'ds'}\n")
    assert main(["export", str(cfg), "bootstrap.concurency=3"]) == exit_codes.USAGE  # found before anything ran
    assert main(["export", str(cfg)]) == exit_codes.FAILED  # ran: its store is missing
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["import", str(empty), "--format", "openai", "--store", str(tmp_path / "s.jsonl")]) \
        == exit_codes.NOTHING_DONE
    err = capsys.readouterr().err
    assert "concurency" in err and "store not found" in err and "holds no records" in err


def test_config_show_takes_the_stages_short_keys_and_checks_across_sections(capsys):
    """Issue #49 item 5: `config show concurrency=3` was refused though `actune bootstrap` takes it, and a rank the
    server cannot load passed until eval's server start, after the training."""
    from actune.cli import main

    assert main(["config", "show", "target_correct=7", "lora.r=8"]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert (cfg["bootstrap"]["target_correct"], cfg["train"]["lora"]["r"]) == (7, 8)
    assert main(["config", "show", "concurrency=3"]) == 2
    assert "a key of several sections (bootstrap.concurrency, eval.concurrency)" in capsys.readouterr().err
    assert main(["config", "show", "train.lora.r=64"]) == 2
    assert "train.lora.r (64) is above serve.max_lora_rank (16)" in capsys.readouterr().err
    assert main(["config", "show", "train.lora.r=64", "serve.max_lora_rank=64"]) == 0
    assert main(["quickstart", "--preset", "smoke", "--plan", "train.lora.r=32"]) == 2
    assert "train.lora.r (32) is above serve.max_lora_rank" in capsys.readouterr().err
