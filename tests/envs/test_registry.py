"""``env.name`` beyond the built-ins: a factory by import path, an ``actune.envs`` entry point, and the error that
lists both when a name is neither."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from actune.config import ConfigError, load_config
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.registry import env_factory
from actune.runtime.plugins import PluginError

INVENTORY = "examples.inventory.inventory_env:make_env"
REPO = Path(__file__).resolve().parents[2]


def entry_points_of(group_points: dict[str, list[tuple[str, str]]]):
    """A stand-in for ``importlib.metadata.entry_points(group=...)`` holding ``group -> [(name, value)]``."""
    def entry_points(group: str | None = None, **_):
        return [importlib.metadata.EntryPoint(name, value, group) for name, value in group_points.get(group, [])]

    return entry_points


def test_a_factory_by_import_path_builds_the_env_from_the_whole_config() -> None:
    cfg = EnvConfig(name=INVENTORY, options={"data": "examples/inventory/inventory.jsonl"},
                    max_observation_chars=60)
    env = make_env(cfg)
    assert (type(env).__name__, env.name, env.action_names) == ("InventoryEnv", "inventory",
                                                                 ("lookup", "shelf", "finish"))
    assert env.max_observation_chars == 60  # the factory got the whole config, not only its options


def test_an_entry_point_names_an_env(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points_of({"actune.envs": [("stock", INVENTORY)]}))
    env = make_env(load_config(EnvConfig, None, ["name=stock"]))
    assert env.name == "inventory"
    with pytest.raises(ConfigError, match=r"env.name: unknown environment 'webshop'.*actune.envs \(stock\)"):
        make_env(EnvConfig.model_construct(name="webshop", options={}))


def test_an_entry_point_that_does_not_load_says_which(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        entry_points_of({"actune.envs": [("broken", "no_such_module_xyz:make")]}))
    with pytest.raises(ConfigError, match=r"  name: Value error, environment 'broken': entry point 'no_such_module_xyz:make' of group "
                                          r"actune.envs does not load: ModuleNotFoundError"):
        load_config(EnvConfig, None, ["name=broken"])


def test_an_unknown_name_lists_the_builtins_the_entry_points_and_the_import_form(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points_of({}))
    with pytest.raises(ConfigError) as e:
        load_config(EnvConfig, None, ["name=webshop"])
    assert str(e.value) == (
        "command-line overrides: invalid config\n"
        "  name: Value error, unknown environment 'webshop': not a built-in (wiki, fever, docqa, alfworld), nor an "
        "entry point of group actune.envs (none installed), nor a callable by import path, module:function (e.g. "
        "examples.inventory.inventory_env:make_env) (got 'webshop')")
    with pytest.raises(ConfigError, match=r"^env.name: unknown environment 'webshop': not a built-in"):
        make_env(EnvConfig.model_construct(name="webshop", options={}))


def test_a_run_config_names_the_full_key(tmp_path: Path) -> None:
    from actune.cli.run_config import RunConfig

    f = tmp_path / "run.yaml"
    f.write_text("bootstrap:\n  env:\n    name: examples.inventory.inventory_env:no_such_factory\n")
    with pytest.raises(ConfigError, match=r"bootstrap.env.name: Value error, module 'examples.inventory.inventory_env'"
                                          r" has no 'no_such_factory'"):
        load_config(RunConfig, f)


@pytest.mark.parametrize(("name", "message"), [
    ("no_such_pkg_xyz.envs:make", r"cannot import 'no_such_pkg_xyz.envs' \(of 'no_such_pkg_xyz.envs:make'\): no "
                                  r"module 'no_such_pkg_xyz' is installed or in the current directory"),
    ("examples.inventory.inventory_env:", r"is not of the form module:function"),
    ("examples.inventory.inventory_env:DEFAULT_DATA", r"names a PosixPath, not a function to call"),
])
def test_import_paths_that_name_no_factory(name: str, message: str) -> None:
    with pytest.raises(PluginError, match=message):
        env_factory(name)


def test_a_module_not_installed_is_imported_from_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "my_tools_7f3a").mkdir()
    (tmp_path / "my_tools_7f3a" / "envs.py").write_text(
        "from examples.inventory.inventory_env import make_env as inventory\n\n"
        "def make_env(cfg):\n    return inventory(cfg)\n")
    # as the console script runs: the current directory is not on the path (the repository root is, for examples.*)
    monkeypatch.setattr(sys, "path", [*(p for p in sys.path if p not in ("", ".")), str(REPO)])
    monkeypatch.chdir(tmp_path)
    assert make_env(EnvConfig(name="my_tools_7f3a.envs:make_env")).name == "inventory"
    assert str(tmp_path) in sys.path


def test_a_factory_must_return_an_environment(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points_of({"actune.envs": [("dict", "builtins:dict")]}))
    with pytest.raises(ConfigError, match=r"env.name: 'dict' returned a dict without name, action_names, finish_action"
                                          r", reset, step, astep, describe_actions: an environment subclasses"):
        make_env(EnvConfig(name="dict"))


def test_options_belong_to_a_custom_env() -> None:
    with pytest.raises(ConfigError, match=r"options: are a custom environment's settings; the built-in 'wiki'"):
        load_config(EnvConfig, None, ["name=wiki", "options={corpus: x}"])
    with pytest.raises(ConfigError, match=r"env.options: unknown key\(s\) \['rows'\]; the inventory takes data"):
        make_env(EnvConfig(name=INVENTORY, options={"rows": 3}))
    with pytest.raises(ConfigError, match=r"env.options.data: nowhere.jsonl: file not found"):
        make_env(EnvConfig(name=INVENTORY, options={"data": "nowhere.jsonl"}))
