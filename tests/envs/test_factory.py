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
    # a missing or bad corpus or documents folder is the config's to mend: a named error, exit 2, no traceback
    with pytest.raises(ConfigError, match=r"^env \(wiki\): backend 'local' needs a corpus"):
        make_env(EnvConfig(name="wiki"))
    with pytest.raises(ConfigError, match=r"^env \(wiki\): .*nosuch.jsonl: corpus file not found"):
        make_env(EnvConfig(name="wiki", corpus=str(tmp_path / "nosuch.jsonl"), index_dir=str(tmp_path)))
    with pytest.raises(ConfigError, match=r"^env \(docqa\): .*nowhere: documents folder not found"):
        make_env(EnvConfig(name="docqa", docs_dir=str(tmp_path / "nowhere")))


PLUGIN = '''
import sys
from actune.envs.base import Environment, StepResult

class Fake(Environment):  # a FAKE plug-in environment
    name = "fake"
    action_names = ("go", "finish")
    finish_action = "finish"
    def reset(self, task, seed=None): return ""
    def step(self, action): return StepResult("ok")
    def describe_actions(self): raise RuntimeError("no description")

def exits(cfg): sys.exit(0)
def bad_description(cfg): return Fake()
'''


def test_a_plugin_that_exits_or_fails_is_a_named_error_not_success(tmp_path: Path, monkeypatch) -> None:
    # issue #47 finding 8: sys.exit(0) in a plug-in made actune exit 0 having done nothing
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="failed building its environment: SystemExit"):
        make_env(EnvConfig(name="my_plugin:exits"))
    with pytest.raises(ConfigError, match=r"describe_actions\(\) failed: RuntimeError: no description"):
        make_env(EnvConfig(name="my_plugin:bad_description"))
    # one that exits on import is refused when the config is read (load_config makes it a ConfigError)
    with pytest.raises(ValueError, match="cannot import 'exits_on_import'.*SystemExit"):
        EnvConfig(name="exits_on_import:build")
