"""The server lock: a private folder, never a symlink followed or a file of someone else's truncated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actune.serve import lock
from actune.serve.lock import default_lock, exclusive_server_lock


def test_the_lock_lives_in_a_folder_only_this_user_can_write(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(lock.tempfile, "gettempdir", lambda: str(tmp_path))
    path = default_lock()
    assert path == tmp_path / f"actune-{os.getuid()}" / "vllm.lock"
    assert path.parent.stat().st_mode & 0o777 == 0o700
    path.parent.chmod(0o777)  # a folder others can write is not trusted
    with pytest.raises(PermissionError, match="not a private folder"):
        default_lock()


def test_a_symlink_at_the_lock_path_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("do not truncate me\n")
    link = tmp_path / "vllm.lock"
    link.symlink_to(target)
    with pytest.raises(OSError), exclusive_server_lock(link, log=lambda m: None):
        pass
    assert target.read_text() == "do not truncate me\n"


def test_the_holder_is_written_while_held_and_cleared_after(tmp_path: Path) -> None:
    path = tmp_path / "vllm.lock"
    with exclusive_server_lock(path, log=lambda m: None):
        assert path.read_text().startswith(f"pid {os.getpid()}: ")
    assert path.read_text() == "" and path.stat().st_mode & 0o777 == 0o600
