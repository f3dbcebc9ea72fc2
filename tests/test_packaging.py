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
    _the_installed_wheel_runs(next(tmp_path.glob("actune-*.whl")), tmp_path / "installed")


def _the_installed_wheel_runs(wheel: Path, target: Path) -> None:
    """The wheel installed into a folder of its own, run with no trace of the source tree: ``python -S`` reads no
    ``.pth`` file, so the editable install's finder cannot answer for ``actune``; the dependencies come from this
    environment's site-packages, behind the wheel's folder."""
    zipfile.ZipFile(wheel).extractall(target)
    deps = next(p for p in map(Path, sys.path) if p.name == "site-packages" and (p / "yaml").is_dir())
    code = ("import sys; sys.path[:0] = sys.argv[1:3]; del sys.argv[1:3]\n"
            "import actune, actune.quickstart.config as q\n"
            "assert actune.__file__.startswith(sys.path[0]), actune.__file__\n"
            "assert str(q.PRESET_DIR).startswith(sys.path[0]), q.PRESET_DIR\n"
            "print(q.load_quickstart('full').name)\n"
            "from actune.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-S", "-c", code, str(target), str(deps), *argv], capture_output=True,
                              text=True, cwd=target)

    version = run("--version")
    assert version.returncode == 0, version.stderr[-2000:]
    assert version.stdout.splitlines()[-1] == f"actune {version_of(wheel)}"
    assert version.stdout.splitlines()[0] == "quickstart-full"  # a preset read from the wheel's own files
    helped = run("quickstart", "--help")
    assert helped.returncode == 0 and "--preset" in helped.stdout, helped.stderr[-2000:]


def version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]
