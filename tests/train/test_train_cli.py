"""``actune export`` and ``actune train`` commands: config sections, short overrides, clear errors."""

from __future__ import annotations

import argparse

from training_records import write_store

from actune.cli import stages
from actune.cli.stages import QUALIFY


def run_cli(module, argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="actune")
    module.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_export_command_reads_the_run_config(tmp_path, capsys):
    from datasets import load_from_disk

    store = write_store(tmp_path / "store.jsonl")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {store}\ntrain:\n  dataset: {tmp_path / 'ds'}\n")
    assert run_cli(stages, ["export", str(cfg)]) == 0
    assert "exported 4 kept trajectories (text)" in capsys.readouterr().out
    assert set(load_from_disk(str(tmp_path / "ds"))["wire"]) == {"text"}
    assert run_cli(stages, ["export", str(cfg), "wire_format=chat", f"dataset={tmp_path / 'chat'}"]) == 0
    assert set(load_from_disk(str(tmp_path / "chat"))["wire"]) == {"chat"}
    assert run_cli(stages, ["export", str(cfg), f"store={tmp_path / 'none.jsonl'}"]) == 1
    assert "none.jsonl: store not found" in capsys.readouterr().err


def test_overrides_are_qualified():
    assert QUALIFY["export"](["store=a", "wire_format=chat", "name=x"]) == \
        ["bootstrap.store=a", "train.wire_format=chat", "name=x"]
    assert QUALIFY["train"](["max_steps=3", "lora.r=4", "dtype=float32", "eval_fraction=0",
                                        "train.merge=true", "eval.out_dir=e"]) == \
        ["train.max_steps=3", "train.lora.r=4", "train.dtype=float32", "train.eval_fraction=0", "train.merge=true",
         "eval.out_dir=e"]


def test_train_command_reports_a_missing_dataset(tmp_path, capsys):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"train:\n  dataset: {tmp_path / 'nothing'}\n  output_dir: {tmp_path / 'adapter'}\n")
    assert run_cli(stages, ["train", str(cfg), "max_steps=2"]) == 1
    assert "dataset not found (run `actune export` first)" in capsys.readouterr().err
    assert not (tmp_path / "adapter").exists()


def test_train_command_never_replaces_a_folder_it_did_not_write(tmp_path, capsys):
    # training ends by swapping its adapter folder in whole: a user's folder at output_dir would be deleted
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"train:\n  dataset: {tmp_path / 'nothing'}\n  output_dir: {mine}\n")
    assert run_cli(stages, ["train", str(cfg), "max_steps=2"]) == 1
    err = capsys.readouterr().err
    assert f"{mine}: train.output_dir exists and is not an adapter folder actune trained" in err
    assert "Traceback" not in err
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_export_of_stores_named_only_in_export_stores(tmp_path, monkeypatch, capsys):
    # An imported set (actune import) exported alone: no bootstrap.store in the config, and none at its default
    # path; the export reads export.stores only instead of failing on the default store.
    from datasets import load_from_disk

    monkeypatch.chdir(tmp_path)
    imported = write_store(tmp_path / "imported.jsonl")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  export:\n    stores: [{imported}]\ntrain:\n  dataset: {tmp_path / 'ds'}\n")
    assert run_cli(stages, ["export", str(cfg)]) == 0
    assert f"from {imported} to" in capsys.readouterr().out
    assert len(load_from_disk(str(tmp_path / "ds"))) == 4
    # named explicitly, a missing bootstrap.store is still an error
    assert run_cli(stages, ["export", str(cfg), f"store={tmp_path / 'none.jsonl'}"]) == 1
    assert "none.jsonl: store not found" in capsys.readouterr().err
