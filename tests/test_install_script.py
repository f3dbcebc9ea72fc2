"""scripts/install.sh's stamps, run against a fake .venv whose pip and python only log their arguments
(fakes: the real install is what make demo and make test run)."""
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fake_checkout(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    for name in ("install.sh", "install_alfworld.sh"):
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("pip", "python"):
        fake = bin_dir / tool
        fake.write_text(f'#!/usr/bin/env bash\necho "{tool} $*" >> "$(dirname "$0")/../calls.log"\n')
        fake.chmod(0o755)
    return tmp_path


def _install(checkout: Path, **env: str) -> list[str]:
    log = checkout / ".venv" / "calls.log"
    log.unlink(missing_ok=True)
    subprocess.run(["bash", "scripts/install.sh"], cwd=checkout, check=True, capture_output=True,
                   env={**os.environ, **env})
    return log.read_text().splitlines() if log.exists() else []


def test_the_demo_install_leaves_alfworld_out_and_a_later_install_adds_only_alfworld(tmp_path):
    checkout = _fake_checkout(tmp_path)
    calls = _install(checkout, ACTUNE_NO_ALFWORLD="1")
    assert 'pip install -e .[cpu,dev]' in calls
    assert not [c for c in calls if "alfworld" in c]
    assert calls[-1] == "pip uninstall -y torchvision torchaudio torchcodec triton"

    calls = _install(checkout, ACTUNE_NO_ALFWORLD="0")
    assert 'pip install -e .[cpu,dev]' not in calls
    assert 'pip install -e .[alfworld]' in calls
    assert "pip install --no-deps alfworld==0.4.2" in calls
    assert calls[-1] == "pip uninstall -y torchvision torchaudio torchcodec triton"

    assert _install(checkout, ACTUNE_NO_ALFWORLD="0") == []  # both stamped: nothing runs
    assert _install(checkout, ACTUNE_NO_ALFWORLD="1") == []


def test_a_failed_alfworld_install_is_not_retried_by_every_install(tmp_path):
    checkout = _fake_checkout(tmp_path)
    pip = checkout / ".venv" / "bin" / "pip"
    pip.write_text(pip.read_text() + '[[ "$*" == *alfworld* ]] && exit 1\nexit 0\n')
    calls = _install(checkout, ACTUNE_NO_ALFWORLD="0")
    assert 'pip install -e .[alfworld]' in calls and "pip install --no-deps alfworld==0.4.2" not in calls
    assert _install(checkout, ACTUNE_NO_ALFWORLD="0") == []
