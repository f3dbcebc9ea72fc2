"""Faults in the middle of a real run (issue #12), on the real vLLM server and model: a stage stopped by a
signal, and a model server that dies under a stage. A server the stage started is restarted in place and the
stage finishes; endpoints it was handed stop it, and a rerun finishes. Whatever happens, no episode is lost or
stored twice, and no server-failed episode is ever stored. The same with a stand-in server:
tests/faults/test_server_restart.py."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from actune.records.trajectory import Trajectory
from actune.world import WorldConfig, write_world

pytestmark = pytest.mark.server

N_TASKS = 8


def _run_section(tmp_path: Path) -> dict:
    """What both stages' sections share: the world's wiki, its 8 training tasks, a short ReAct loop."""
    world = tmp_path / "world"
    if not world.exists():
        write_world(WorldConfig(seed=3, n_people=20, n_companies=12, n_cities=8, n_train=N_TASKS, n_dev=2, n_test=2),
                    world)
    return {"concurrency": 2,
            "env": {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(tmp_path / "idx")},
            "tasks": {"format": "custom", "path": str(world / "train.jsonl"), "split": "train"},
            "agent": {"method": "react", "exemplar_set": "world", "num_exemplars": 2, "temperature": 0.4,
                      "max_tokens": 48, "episode_steps": 4}}


def _config(tmp_path: Path, endpoint: str, model: str, **bootstrap) -> tuple[Path, Path]:
    store = tmp_path / "out" / "trajectories.jsonl"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"name": "faults", "bootstrap": {
        **_run_section(tmp_path), "store": str(store), "endpoints": [endpoint], "model": model,
        "attempts_per_task": 1, "target_correct": 100, "require_grounded": True, **bootstrap,
    }}))
    return cfg, store


def _start(cfg: Path, stage: str = "bootstrap") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "actune", stage, str(cfg), "--no-progress"],
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


def _stop_at(cfg: Path, store: Path, n: int, sig: signal.Signals) -> bytes:
    """Run the stage until the store holds ``n`` records, send ``sig``; return the store's bytes then."""
    proc = _start(cfg)
    try:
        _wait_for_records(store, n, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == (130 if sig == signal.SIGTERM else -signal.SIGKILL), err
    return store.read_bytes()


def _whole_lines(data: bytes) -> bytes:
    """``data`` up to its last newline (a torn last line is cut by the next run, not kept)."""
    return data if data.endswith(b"\n") else data[: data.rfind(b"\n") + 1]


def test_a_stage_stopped_mid_run_resumes_with_nothing_lost_or_doubled(vllm_server, tmp_path):
    # one run stopped twice, by SIGTERM and then (its rerun) by SIGKILL, and a last rerun to the end
    cfg, store = _config(tmp_path, vllm_server.base_url, vllm_server.model)
    first = _stop_at(cfg, store, 2, signal.SIGTERM)
    stopped_at = len(_whole_lines(first).splitlines())
    assert stopped_at + 2 < N_TASKS, "the first run went too far to stop its rerun mid-way: nothing was tested"
    second = _stop_at(cfg, store, stopped_at + 2, signal.SIGKILL)
    assert second.startswith(_whole_lines(first))  # kept byte for byte
    assert len(_whole_lines(second).splitlines()) < N_TASKS, "the stage finished before the signal: nothing was tested"

    rerun = _start(cfg)
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    assert store.read_bytes().startswith(_whole_lines(second))
    _assert_complete_once(store)


# long: a stage handed an endpoint that dies stops after max_failed_episodes server errors, a rerun finishing the
# rest (tests/test_collect.py: ..._a_server_error_is_retried_and_never_stored); a real vLLM killed under a
# stage runs in the restart test below
@pytest.mark.long
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
    assert proc.returncode == 1, err  # a stage failure (actune.cli.exit_codes)
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


def _guard_of(proc: subprocess.Popen) -> int:
    """The pid (and process group) of the vLLM server guard the stage ``proc`` started."""
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == proc.pid
                    and b"actune: vLLM server guard" in (entry / "cmdline").read_bytes()):
                return int(entry.name)
        except OSError:
            continue
    pytest.fail("the stage runs no server of its own")


def _vllm_on(port: int) -> list[int]:
    """Live processes whose command line serves ``port`` (the guard's and vLLM's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and f"--port\0{port}\0".encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


# eval long: eval restarts through the same collect() and StageServer as bootstrap (its own counting and report:
# tests/faults/test_server_restart.py, on a stand-in server that dies for real)
@pytest.mark.own_servers
@pytest.mark.parametrize("stage", ["bootstrap", pytest.param("eval", marks=pytest.mark.long)])
def test_a_server_the_stage_started_is_restarted_when_killed_and_the_stage_finishes(embedded_model, tmp_path, stage):
    from actune.serve.server import free_port, group_members
    from actune.tasks.config import TaskConfig
    from actune.tasks.loading import load_tasks

    port = free_port()
    # 4 at once: the episodes left after the restart run in two waves
    section = {**_run_section(tmp_path), "concurrency": 4, "retries": {"max_retries": 1, "backoff_s": 0.2}}
    if stage == "bootstrap":
        store = tmp_path / "out" / "trajectories.jsonl"
        counted = store.parent / "summary.json"
        section.update(store=str(store), attempts_per_task=1, target_correct=100)
    else:
        store = tmp_path / "eval" / "prompted" / "trajectories.jsonl"
        counted = tmp_path / "eval" / "report.json"
        section.update(out_dir=str(tmp_path / "eval"), bootstrap_samples=100,
                       models=[{"label": "prompted", "model": str(embedded_model)}])
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({"name": "faults", stage: section, "serve": {
        "model": str(embedded_model), "served_model_name": "smollm2-135m", "port": port,
        "log_dir": str(tmp_path), "cpu_kv_cache_gib": 1, "max_restarts": 2}}))

    proc = _start(cfg, stage)
    try:
        _wait_for_records(store, 2, proc, timeout_s=400)
        guard = _guard_of(proc)
        os.killpg(guard, signal.SIGKILL)  # the whole server the stage started: guard, API process and engine
        _, err = proc.communicate(timeout=500)
    finally:
        proc.kill()
        for pid in _vllm_on(port):  # clean-up after a failed assertion: only what serves this test's port
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert f"{stage}" in err and "the model server died; restarting it" in err, err
    assert "restarted 1 time(s) during this run" in err, err
    assert json.loads(counted.read_text())["server_restarts"] == 1
    # the task set of an unfaulted run: every task once, none failed by the server
    _assert_complete_once(store)
    tasks = load_tasks(TaskConfig(format="custom", path=str(tmp_path / "world" / "train.jsonl"), split="train"))
    assert {t.task.id for t in _records(store)} == {t.id for t in tasks}
    assert group_members(guard) == [] and _vllm_on(port) == [], "a vLLM process outlived the stage"
