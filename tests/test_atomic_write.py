from __future__ import annotations

import os
import stat

import pytest

from actune import atomic_write
from actune.atomic_write import atomic_write_bytes, atomic_write_text, atomic_writer


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_text_and_bytes_content(tmp_path):
    p = tmp_path / "a.txt"
    atomic_write_text(p, "héllo\nworld\n")
    assert p.read_bytes() == "héllo\nworld\n".encode()
    atomic_write_bytes(p, b"\x00\xffraw")
    assert p.read_bytes() == b"\x00\xffraw"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.txt"]


def test_streaming_writer(tmp_path):
    p = tmp_path / "lines.jsonl"
    with atomic_writer(p) as f:
        for i in range(3):
            f.write(f"{i}\n")
        assert not p.exists()  # nothing visible until the block ends
    assert p.read_text() == "0\n1\n2\n"


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_file_permissions_equal_a_normal_file(tmp_path, umask):
    old = os.umask(umask)
    try:
        normal = tmp_path / "normal.txt"
        normal.write_text("x")
        atomic = tmp_path / "atomic.txt"
        atomic_write_text(atomic, "x")
    finally:
        os.umask(old)
    assert _mode(atomic) == _mode(normal) == 0o666 & ~umask


def test_replaced_file_keeps_its_permissions(tmp_path):
    p = tmp_path / "script.sh"
    p.write_text("old")
    p.chmod(0o750)
    atomic_write_text(p, "new")
    assert p.read_text() == "new"
    assert _mode(p) == 0o750


def test_failed_replace_leaves_old_content_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "data.json"
    p.write_text("old")

    def broken_replace(src, dst):
        raise OSError("injected failure")

    monkeypatch.setattr(atomic_write.os, "replace", broken_replace)
    with pytest.raises(OSError, match="injected failure"):
        atomic_write_text(p, "new")
    assert p.read_text() == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["data.json"]


def test_error_mid_stream_leaves_no_file_and_no_temp(tmp_path):
    p = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with atomic_writer(p) as f:
            f.write("partial\n")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_failed_fsync_leaves_no_temp(tmp_path, monkeypatch):
    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(atomic_write.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(tmp_path / "x.bin", b"123")
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write_text(tmp_path / "nope" / "x.txt", "x")
