"""One rule tells a config path from a key=value override on every command (actune.cli.config_items)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.cli.config_items import config_and_overrides, is_override, optional_config
from actune.config import ConfigError


@pytest.mark.parametrize("item, override", [("seed=3", True), ("a=b.yaml", False), ("run.yaml", False),
                                            ("x=y.yml", False), ("bootstrap.store=runs/a.jsonl", True)])
def test_a_yaml_path_holding_an_equals_sign_is_a_config_for_every_command(tmp_path: Path, item, override) -> None:
    assert is_override(item) is override
    assert (optional_config(item, ["k=v"])[0] is None) is override
    if override:
        assert config_and_overrides([item, "k=v"], "a run config") == (None, [item, "k=v"])
    else:  # the same file reaches both as the config
        path = tmp_path / item
        path.write_text("name: x\n")
        assert config_and_overrides([str(path), "k=v"], "a run config") == (str(path), ["k=v"])
        assert optional_config(str(path), ["k=v"]) == (str(path), ["k=v"])


def test_a_missing_config_file_is_named() -> None:
    with pytest.raises(ConfigError, match="nowhere.yaml: no such config file"):
        config_and_overrides(["nowhere.yaml"], "a run config")
