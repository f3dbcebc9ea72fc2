"""The quickstart's run config and script agree: every override the script passes validates, and the
stages read the world the script generates."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from actune.config import load_config
from actune.run_config import RunConfig

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "quickstart.sh"
CONFIG = ROOT / "configs" / "quickstart-cpu.yaml"


def test_script_is_valid_bash() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_per_kind_bootstrap_overrides_validate() -> None:
    text = SCRIPT.read_text()
    runs = re.search(r"for kind_share_limit in ([^;]+);", text).group(1).split()
    assert [r.split(":")[0] for r in runs] == ["single", "bridge", "comparison"]
    base = load_config(RunConfig, CONFIG)
    for run in runs:
        kind, share, limit = run.split(":")
        cfg = load_config(RunConfig, CONFIG, [f"bootstrap.tasks.where.kind={kind}", f"bootstrap.tasks.limit={limit}",
                                              f"bootstrap.agent.exemplar_kinds=[{kind}]",
                                              f"bootstrap.target_correct={base.bootstrap.target_correct * int(share) // 100}"])
        assert cfg.bootstrap.tasks.where == {"kind": kind}
        assert cfg.bootstrap.agent.exemplar_kinds == [kind]
        assert cfg.bootstrap.tasks.limit == (None if limit == "null" else int(limit))
    assert int(runs[-1].split(":")[1]) == 100  # the last run aims at the config's whole target


def test_stages_read_what_the_script_writes() -> None:
    cfg = load_config(RunConfig, CONFIG)
    world = re.search(r"^OUT=(\S+)$", SCRIPT.read_text(), re.M).group(1) + "/world"
    assert str(cfg.bootstrap.env.corpus) == str(cfg.eval.env.corpus) == f"{world}/corpus.jsonl"
    assert str(cfg.bootstrap.tasks.path) == f"{world}/train.jsonl"
    assert str(cfg.eval.tasks.path) == f"{world}/test.jsonl"
    assert [str(m.adapter) for m in cfg.eval.models if m.adapter] == [str(cfg.train.output_dir)]
    assert cfg.eval.agent.temperature == 0.0
