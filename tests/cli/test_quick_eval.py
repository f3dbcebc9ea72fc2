"""``actune eval --model M [--adapter DIR] [--tasks FILE]``: a quick score without writing a config (issue #49 item
7). The flags become overrides of the run config, the command line's own overrides on top; ``run_eval`` is
replaced by a fake that records the config it was given (the real eval on a server: tests/eval/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.cli import main


@pytest.fixture
def fake_run_eval(monkeypatch: pytest.MonkeyPatch) -> list:
    import actune.eval.run as eval_run

    seen: list = []
    monkeypatch.setattr(eval_run, "run_eval", lambda cfg, serve, **kw: seen.append((cfg, serve, kw)))
    return seen


def test_model_adapter_and_tasks_flags_make_the_eval_config(fake_run_eval: list, tmp_path: Path) -> None:
    tasks = tmp_path / "t.jsonl"
    tasks.write_text('{"question": "q", "answer": "a"}\n')
    assert main(["eval", "--model", "smollm2-135m", "--adapter", str(tmp_path / "ad"), "--tasks", str(tasks),
                 "eval.tasks.limit=3", "--no-progress"]) == 0
    (cfg, serve, kw), = fake_run_eval
    assert [(m.label, m.model, m.adapter) for m in cfg.models] == [("prompted", "smollm2-135m", None),
                                                                   ("tuned", "smollm2-135m", tmp_path / "ad")]
    assert (cfg.tasks.path, cfg.tasks.format, cfg.tasks.limit) == (str(tasks), "custom", 3)
    assert serve.model == "smollm2-135m" and kw["show_progress"] is False
    # the command line's overrides win over the flags'; a config file still works, with the flags on top
    assert main(["eval", "--model", "smollm2-135m", "--tasks", str(tasks), "eval.tasks.format=hotpotqa"]) == 0
    assert fake_run_eval[-1][0].tasks.format == "hotpotqa" and len(fake_run_eval[-1][0].models) == 1
    assert main(["eval", "configs/smollm2-cpu.yaml", "--model", "smollm2-135m"]) == 0
    assert [m.label for m in fake_run_eval[-1][0].models] == ["prompted"]


def test_an_adapter_without_its_base_is_a_config_error(fake_run_eval: list, capsys: pytest.CaptureFixture) -> None:
    assert main(["eval", "--adapter", "runs/adapter"]) == 2
    assert "--adapter: give --model too" in capsys.readouterr().err and fake_run_eval == []
