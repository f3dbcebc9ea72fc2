"""``actune presets``: every preset by name with its description, one printed whole, a wrong name refused."""

from __future__ import annotations

from actune.cli import main
from actune.quickstart.config import PRESETS, preset_path


def test_presets_lists_every_preset_and_prints_one(capsys) -> None:
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:len(PRESETS)]] == list(PRESETS)
    assert lines[3].startswith("hotpotqa ") and "real HotpotQA questions over a local Wikipedia corpus" in lines[3]
    assert main(["presets", "hotpotqa"]) == 0
    assert capsys.readouterr().out == preset_path("hotpotqa").read_text(encoding="utf-8")
    assert main(["presets", "nope"]) == 2
    assert "preset 'nope': not one of smoke" in capsys.readouterr().err
