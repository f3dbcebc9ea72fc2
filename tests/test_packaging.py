"""The wheel must ship every package and data file the editable install sees."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# top-level folders installed as actune.<folder>: the stages and the quickstart
SUBPACKAGE_FOLDERS = {"bootstrap", "train", "serve", "eval", "quickstart"}


def declared():
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def on_disk():
    found = set()
    for init in REPO.glob("*/**/__init__.py"):
        rel = init.parent.relative_to(REPO)
        top = rel.parts[0]
        if top == "actune":
            found.add(".".join(rel.parts))
        elif top in SUBPACKAGE_FOLDERS:
            found.add(".".join(("actune", *rel.parts)))
        elif rel == Path("configs/quickstart"):
            found.add("actune.presets")
    return found


def test_every_package_is_declared():
    assert on_disk() == declared()


@pytest.mark.slow
def test_wheel_contains_packages_and_prompts(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(REPO)],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    names = zipfile.ZipFile(next(tmp_path.glob("actune-*.whl"))).namelist()
    for pkg in declared():
        assert f"{pkg.replace('.', '/')}/__init__.py" in names
    assert "actune/serve/server.py" in names
    assert "actune/prompts/wiki.json" in names
    assert {"actune/presets/smoke.yaml", "actune/presets/full.yaml"} <= set(names)
