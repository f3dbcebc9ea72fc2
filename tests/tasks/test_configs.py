from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import load_config
from actune.envs.config import EnvConfig
from actune.tasks.config import TaskConfig

CONFIGS = Path(__file__).parents[2] / "configs"


@pytest.mark.parametrize("path", sorted((CONFIGS / "envs").glob("*.yaml")), ids=lambda p: p.name)
def test_env_configs_validate(path: Path) -> None:
    cfg = load_config(EnvConfig, path)
    assert cfg.name in ("wiki", "fever")


@pytest.mark.parametrize("path", sorted((CONFIGS / "tasks").glob("*.yaml")), ids=lambda p: p.name)
def test_task_configs_validate(path: Path) -> None:
    cfg = load_config(TaskConfig, path)
    assert (cfg.path is None) != (cfg.hf_dataset is None)


def test_fever_wiki_command_writes_a_corpus(tmp_path: Path, capsys) -> None:
    from actune.tasks.fever import main

    cache = Path(__file__).parents[1] / "data" / "wiki" / "fever_observation_cache_sample.json"
    assert main([str(cache), str(tmp_path / "w.jsonl")]) == 0
    assert capsys.readouterr().out.strip() == f"{tmp_path / 'w.jsonl'}: 2 pages"
