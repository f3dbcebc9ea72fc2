"""A hostile config stays small in memory and in what an error echoes."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.config import MAX_CONFIG_BYTES, MAX_CONFIG_VALUES, ConfigError, load_config
from actune.serve.config import ServeConfig


def _aliases(tmp_path: Path, levels: int) -> Path:
    """A few hundred bytes of nested YAML aliases that expand to 9**(levels + 1) strings."""
    names = "abcdefghij"
    lines = [f"{names[0]}: &{names[0]} [" + ",".join(['"x"'] * 9) + "]"]
    lines += [f"{names[i]}: &{names[i]} [" + ",".join([f"*{names[i - 1]}"] * 9) + "]" for i in range(1, levels)]
    lines.append("extra_args: [" + ",".join([f"*{names[levels - 1]}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    path = _aliases(tmp_path, 8)  # 9**9: a billion strings from 339 bytes
    assert path.stat().st_size < 400
    with pytest.raises(ConfigError) as e:
        load_config(ServeConfig, path)
    assert str(e.value) == (f"{path}: expands to more than {MAX_CONFIG_VALUES:,} values (nested YAML aliases?); "
                            "a config is read whole, so it must stay small")


def test_an_error_echoes_a_bounded_part_of_a_large_bad_value(tmp_path: Path) -> None:
    path = _aliases(tmp_path, 3)  # 9**4 strings: under the limit, each extra_args item a nested list
    with pytest.raises(ConfigError) as e:
        load_config(ServeConfig, path)
    message = str(e.value)
    assert "extra_args.0: Input should be a valid string (got [[...], [...], [...], [...], ...])" in message
    assert len(message) < 2_000
    assert message.count("\n") <= 21  # the first 20 errors, then a count of the rest


def test_more_than_twenty_errors_end_with_a_count(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("".join(f"k{i}: 1\n" for i in range(25)))
    with pytest.raises(ConfigError) as e:
        load_config(ServeConfig, path)
    assert str(e.value).splitlines()[-1] == "  ... and 5 more"


def test_a_long_string_behind_many_aliases_is_refused_by_its_bytes(tmp_path: Path) -> None:
    """Few values (a list of 50,000 aliases of one string) but 5 GB once printed: refused by size."""
    path = tmp_path / "bytes.yaml"
    path.write_text(f"s: &s \"{'x' * 100_000}\"\nextra_args: [" + ",".join(["*s"] * 50_000) + "]\n")
    with pytest.raises(ConfigError) as e:
        load_config(ServeConfig, path)
    assert str(e.value) == (f"{path}: expands to more than {MAX_CONFIG_BYTES:,} bytes of text (a long string "
                            "behind YAML aliases?); a config is read whole and printed whole, so it must stay small")
