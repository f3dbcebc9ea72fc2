from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import ConfigError, load_config
from actune.envs.config import EnvConfig
from actune.envs.factory import ENV_MODULES, make_env
from actune.envs.fever_env import FeverEnv
from actune.envs.wiki_env import WikiEnv

DATA = Path(__file__).parents[1] / "data" / "wiki" / "hotpotqa_pages.jsonl"


def test_env_config_loads_from_yaml_with_overrides(tmp_path: Path) -> None:
    f = tmp_path / "env.yaml"
    f.write_text(f"name: fever\ncorpus: {DATA}\nmax_observation_chars: 500\n")
    cfg = load_config(EnvConfig, f, ["page_sentences=3", f"index_dir={tmp_path}"])
    assert (cfg.name, cfg.backend, cfg.page_sentences, cfg.max_observation_chars) == ("fever", "local", 3, 500)
    env = make_env(cfg)
    assert isinstance(env, FeverEnv) and env.page_sentences == 3


def test_env_config_rejects_unknown_names_and_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="name"):
        load_config(EnvConfig, None, ["name=webshop"])
    with pytest.raises(ConfigError, match="corpus_path: unknown key"):
        load_config(EnvConfig, None, ["corpus_path=x"])
    assert EnvConfig().name == "wiki"  # a default config is valid; make_env checks the corpus


def test_make_env_builds_the_named_env_and_explains_a_missing_corpus(tmp_path: Path) -> None:
    assert ENV_MODULES == {"wiki": "wiki_env", "fever": "fever_env", "docqa": "docqa_env",
                           "alfworld": "alfworld_env"}
    env = make_env(EnvConfig(name="wiki", corpus=str(DATA), index_dir=str(tmp_path)))
    assert type(env) is WikiEnv and env.name == "wiki"
    with pytest.raises(ValueError, match="needs 'corpus'"):
        make_env(EnvConfig(name="wiki"))
