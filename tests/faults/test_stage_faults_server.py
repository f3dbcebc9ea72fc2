"""Faults in the middle of a real run (issue #12), on the real vLLM server and model: a stage stopped by a
signal, and a model server that dies under a stage. Whatever happens, a rerun finishes the work with no
episode lost and none stored twice, and no server-failed episode is ever stored."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from actune.trajectory import Trajectory
from actune.world import WorldConfig, write_world

pytestmark = pytest.mark.server

N_TASKS = 8


def _config(tmp_path: Path, endpoint: str, model: str, **bootstrap) -> tuple[Path, Path]:
    world = tmp_path / "world"
    if not world.exists():
        write_world(WorldConfig(seed=3, n_people=20, n_companies=12, n_cities=8, n_train=N_TASKS, n_dev=2, n_test=2),
                    world)
    store = tmp_path / "out" / "trajectories.jsonl"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"name": "faults", "bootstrap": {
        "store": str(store), "endpoints": [endpoint], "model": model,
        "concurrency": 2, "attempts_per_task": 1, "target_correct": 100, "require_grounded": True,
        "env": {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "idx")},
        "tasks": {"format": "custom", "path": str(world / "train.jsonl"), "split": "train"},
        "agent": {"method": "react", "exemplar_set": "world", "num_exemplars": 2, "temperature": 0.4,
                  "max_tokens": 48, "episode_steps": 4},
        **bootstrap,
    }}))
    return cfg, store


def _start(cfg: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "actune", "bootstrap", str(cfg), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_records(store: Path, n: int, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if store.exists() and store.read_bytes().count(b"\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.05)
    pytest.fail(f"fewer than {n} records in {timeout_s} s")


def _records(store: Path) -> list[Trajectory]:
    return [Trajectory.from_json(line) for line in store.read_text(encoding="utf-8").splitlines()]


def _assert_complete_once(store: Path) -> None:
    records = _records(store)
    keys = collections.Counter((t.task.id, t.method, t.attempt) for t in records)
    assert len(keys) == N_TASKS and set(keys.values()) == {1}, keys
    assert not [t for t in records if t.finish_reason == "server_error"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_stage_stopped_mid_run_resumes_with_nothing_lost_or_doubled(vllm_server, tmp_path, sig):
    cfg, store = _config(tmp_path, vllm_server.base_url, vllm_server.model)
    proc = _start(cfg)
    try:
        _wait_for_records(store, 2, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL), err
    before = store.read_bytes()
    stopped_at = len(before.splitlines())
    assert 2 <= stopped_at < N_TASKS, "the stage finished before the signal: nothing was tested"

    rerun = _start(cfg)
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    after = store.read_bytes()
    # the records written before the signal are kept byte for byte (a torn last line is cut, not kept)
    whole = before if before.endswith(b"\n") else before[: before.rfind(b"\n") + 1]
    assert after.startswith(whole)
    _assert_complete_once(store)


def test_a_dying_model_server_stops_the_stage_and_a_rerun_finishes(vllm_server, tmp_path):
    from actune.serve.config import ServeConfig
    from actune.serve.server import free_port, group_members, start_server, wait_until_healthy

    # a second server of the same model, killed under the stage (the session's server finishes the work)
    doomed = start_server(ServeConfig(model=str(vllm_server.model_path), served_model_name=vllm_server.model,
                                      port=free_port(), log_dir=tmp_path, cpu_kv_cache_gib=1))
    try:
        wait_until_healthy(doomed, 600)
        cfg, store = _config(tmp_path, doomed.base_url, vllm_server.model, max_failed_episodes=2)
        proc = _start(cfg)
        try:
            _wait_for_records(store, 2, proc)
            os.killpg(doomed.pid, signal.SIGKILL)  # the whole server: API process and engine
            t0 = time.monotonic()
            _, err = proc.communicate(timeout=300)
            stopped_s = time.monotonic() - t0
        finally:
            proc.kill()
    finally:
        if group_members(doomed.pid):
            os.killpg(doomed.pid, signal.SIGKILL)
    assert proc.returncode == 2, err
    assert "failed" in err and "rerun" in err.lower(), err
    assert stopped_s < 240, f"the stage took {stopped_s:.0f} s to give up on a dead server"
    stored = _records(store)
    assert len(stored) < N_TASKS
    assert not [t for t in stored if t.finish_reason == "server_error"]

    cfg, _ = _config(tmp_path, vllm_server.base_url, vllm_server.model)
    rerun = _start(cfg)
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    _assert_complete_once(store)
