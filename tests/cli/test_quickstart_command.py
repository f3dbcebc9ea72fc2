"""``actune quickstart`` through its command line, as ``make demo`` calls it: the flags reach the run, the default
output folder, the printed report and the exit codes. The stages themselves run in the smoke tests; here
``FakeRun`` stands in for ``run_quickstart`` where a stage would start, and the error exits are real."""

from __future__ import annotations

from pathlib import Path

import pytest

import actune.quickstart.pipeline
from actune.cli import main


class FakeRun:
    """Records what ``run_quickstart`` was given and writes a one-line report where the real one would."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, cfg, out, *, show_progress, command):
        self.calls.append({"cfg": cfg, "out": Path(out), "progress": show_progress, "command": command})
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "report.md").write_text("# report\n")
        return Path(out) / "report.md"


@pytest.fixture
def fake_run(monkeypatch) -> FakeRun:
    fake = FakeRun()
    monkeypatch.setattr(actune.quickstart.pipeline, "run_quickstart", fake)
    return fake


def test_seed_rounds_out_and_overrides_reach_the_run(tmp_path: Path, fake_run: FakeRun, capsys) -> None:
    out = tmp_path / "run"
    assert main(["quickstart", "--preset", "smoke", "--seed", "5", "--rounds", "1", "--out", str(out),
                 "--no-progress", "train.num_train_epochs=1"]) == 0
    (call,) = fake_run.calls
    assert (call["cfg"].seed, call["cfg"].rounds, call["cfg"].train.num_train_epochs) == (5, 1, 1.0)
    assert (call["out"], call["progress"]) == (out, False)
    assert call["command"] == f"actune quickstart --preset smoke --seed 5 --rounds 1 --out {out} " \
        "train.num_train_epochs=1"
    assert capsys.readouterr().out == f"# report\n\nreport: {out / 'report.md'}\n"


def test_the_default_output_folder_names_preset_and_seed(tmp_path: Path, fake_run: FakeRun, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["quickstart", "--preset", "smoke"]) == 0
    assert fake_run.calls[0]["out"] == Path("runs") / "quickstart-smoke-seed0"
    assert fake_run.calls[0]["progress"] is True


def test_plan_prints_stages_and_eta_and_writes_nothing(tmp_path: Path, fake_run: FakeRun, capsys) -> None:
    out = tmp_path / "planned"
    assert main(["quickstart", "--preset", "hotpotqa", "--plan", "--out", str(out), "rounds=2"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"quickstart quickstart-hotpotqa (seed 0) -> {out}: 10 stages, 10 to run; estimated ")
    assert "   6. bootstrap round 2 " in text and "   8. train react round 2 " in text
    assert not out.exists() and not fake_run.calls  # nothing run, nothing written


def test_a_bad_override_is_a_config_error_and_nothing_runs(fake_run: FakeRun, capsys) -> None:
    assert main(["quickstart", "--preset", "smoke", "bogus.key=1"]) == 2
    assert "bogus: unknown key" in capsys.readouterr().err and fake_run.calls == []


def test_a_failing_stage_exits_with_the_way_to_continue(tmp_path: Path, capsys) -> None:
    # the real run: the tasks stage finds no HotpotQA files, before any server starts
    out = tmp_path / "run"
    assert main(["quickstart", "--preset", "hotpotqa", "--out", str(out), "--no-progress",
                 f"hotpotqa.data_dir={tmp_path / 'nodata'}", "imports=[]"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-2] == (f"actune quickstart: hotpotqa.data_dir: {tmp_path / 'nodata' / 'train_with_context.jsonl'} "
                       "not found (the module actune.sources.hotpotqa says where these files come from)")
    assert err[-1] == f"actune quickstart: rerun the same command to continue from {out}"
