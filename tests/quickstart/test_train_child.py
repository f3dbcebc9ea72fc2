"""The quickstart trains each adapter in a child process: the adapter lands, the parent never loads the
training stack, errors come back as themselves, and a stopped parent leaves no child behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actune.quickstart.train_child import train_in_child_process
from actune.train.checkpoints import complete_checkpoint
from actune.train.common import TrainError
from actune.train.config import TrainConfig

TRAIN_DIR = Path(__file__).resolve().parents[1] / "train"


def _script(tmp: Path, model: Path, steps: int) -> str:
    # a fresh interpreter, so "the parent never imported trl" is checked on a process no other test touched
    return f"""
import sys
sys.path.insert(0, {str(TRAIN_DIR)!r})
from pathlib import Path
from training_records import tiny_config, write_store
from actune.bootstrap.export import export_dataset
from actune.quickstart.train_child import train_in_child_process
from actune.runtime.stop_signals import stop_signals_as_interrupt
tmp = Path({str(tmp)!r})
if not (tmp / "ds").exists():  # a rerun trains on the same dataset
    export_dataset(write_store(tmp / "store.jsonl"), tmp / "ds", "text")
cfg = tiny_config(tmp, Path({str(model)!r}), max_steps={steps}, save_steps=1)
with stop_signals_as_interrupt():  # as run_quickstart does
    train_in_child_process(cfg)
print("trl" in sys.modules, "torch" in sys.modules, flush=True)
"""


def _children(pid: int) -> dict[int, str]:
    """pid -> command line of each child of ``pid``."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return {int(c): Path(f"/proc/{c}/cmdline").read_bytes().replace(b"\0", b" ").decode() for c in out.split()}


def _complete_checkpoints(tmp: Path) -> list[int]:
    """Steps of the checkpoints a rerun can resume from, by actune train's own rule."""
    return sorted(int(p.name.split("-")[1]) for p in (tmp / "adapter.checkpoints").glob("checkpoint-*")
                  if complete_checkpoint(p))


def _wait_for_a_checkpoint(proc: subprocess.Popen, tmp: Path, log: Path, after: int = 0) -> None:
    """Until a complete checkpoint past step ``after`` exists (a stop while the first folder is still being
    written leaves nothing to resume from)."""
    deadline = time.monotonic() + 600
    while not [step for step in _complete_checkpoints(tmp) if step > after]:  # training is under way
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


def _stop_mid_training(script: str, tmp: Path, log: Path, sig: signal.Signals, after: int) -> int:
    """Run ``script``, send ``sig`` once training has saved a checkpoint past step ``after``, check that the
    training child is gone with its parent and nothing was finished; return the parent's exit status."""
    with log.open("w") as out:  # a file, not a pipe: an unread pipe could block the orphaned child
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=out, stderr=out)
    try:
        _wait_for_a_checkpoint(proc, tmp, log, after)
        children = _children(proc.pid)
        # the training child (and multiprocessing's resource tracker, which leaves with its parent)
        assert [args for args in children.values() if "spawn_main" in args]
        proc.send_signal(sig)
        proc.wait(timeout=180)
        # SIGTERM: the parent stops the child and waits; SIGKILL: the orphaned child sees it and stops itself
        for pid, args in children.items():
            assert _gone(pid, within_s=60), args
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (tmp / "adapter" / "adapter_model.safetensors").exists(), log.read_text()[-3000:]
    return proc.returncode


@pytest.mark.slow
def test_a_stopped_parent_leaves_no_training_behind_and_a_rerun_finishes_in_a_child(tmp_path, embedded_model):
    # one training stopped twice, SIGTERM then SIGKILL (each rerun resumes), then run to the end
    script = _script(tmp_path, embedded_model, 12)
    log = tmp_path / "run.log"
    assert _stop_mid_training(script, tmp_path, log, signal.SIGTERM, after=0) != 0, log.read_text()[-3000:]
    first = _complete_checkpoints(tmp_path)
    assert first  # a rerun resumes from the last complete one (train's own resume tests check how)
    rc = _stop_mid_training(script, tmp_path, log, signal.SIGKILL, after=first[-1])
    assert rc == -signal.SIGKILL, log.read_text()[-3000:]
    resumed = [line for line in log.read_text().splitlines() if "train: resuming from" in line]
    assert resumed and resumed[0].endswith(f"checkpoint-{first[-1]}"), log.read_text()[-3000:]
    second = _complete_checkpoints(tmp_path)
    assert second[-1] > first[-1]
    rerun = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resumed = [line for line in rerun.stderr.splitlines() if "train: resuming from" in line]
    assert resumed and resumed[0].endswith(f"checkpoint-{second[-1]}"), rerun.stderr[-3000:]
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    assert rerun.stdout.splitlines()[-1] == "False False"  # trl and torch were loaded by the child only
    # stopped after the adapter was saved, before its stage was noted done: the next run keeps it, trains nothing
    before = (tmp_path / "adapter" / "adapter_model.safetensors").read_bytes()
    again = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "holds this training's adapter already" in again.stderr, again.stderr[-3000:]
    assert (tmp_path / "adapter" / "adapter_model.safetensors").read_bytes() == before


def test_an_error_in_the_child_is_raised_as_itself(tmp_path):
    cfg = TrainConfig(dataset=tmp_path / "nothing", output_dir=tmp_path / "adapter", max_steps=2)
    with pytest.raises(TrainError, match="dataset not found"):
        train_in_child_process(cfg)
    assert not (tmp_path / "adapter").exists()


def test_grpo_rollout_settings_reach_the_child_as_they_were() -> None:
    from actune.agent.config import AgentConfig
    from actune.envs.config import EnvConfig
    from actune.quickstart.train_child import _rollout_settings
    from actune.serve.config import ServeConfig
    from actune.tasks.config import TaskConfig
    from actune.train.grpo import RolloutSpec

    spec = RolloutSpec(tasks=TaskConfig(format="custom", path="t.jsonl", split="train", limit=4),
                       env=EnvConfig(name="wiki", corpus="c.jsonl"), agent=AgentConfig(method="reflact", seed=3))
    serve = ServeConfig(port=8123, cpu_kv_cache_gib=2)
    sent = {"tasks": spec.tasks.model_dump_json(), "env": spec.env.model_dump_json(),
            "agent": spec.agent.model_dump_json()}
    got, got_serve = _rollout_settings(sent, serve.model_dump_json())
    assert got == spec and got_serve == serve
    assert _rollout_settings(None, None) == (None, None)
