"""The fault bench's own logic (bench/faults.py): kill points, counting lost and duplicated work, the
process-leak check, and one whole fault (kill, check, rerun, compare) on a stand-in stage: a small Python
script that appends records as a stage does. No server, no model: each test runs in about a second."""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from pathlib import Path

import pytest
from bench_script import load

faults = load("faults")

# A stand-in stage: appends one record a task every 0.05 s to the store, skipping the tasks already
# there (a torn last line cut first), as bootstrap resumes. Modes: "redo" forgets what is stored (a broken
# resume: duplicates), "orphan" starts a child in its own session that outlives it (a leaked server),
# "child" starts one that ends when its parent does (as the server's guard does), "fail" exits 3 at once.
FAKE_STAGE = r'''
import json, os, subprocess, sys, time
store, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if mode == "fail":
    sys.exit(3)
data = open(store, "rb").read() if os.path.exists(store) else b""
data = data[: data.rfind(b"\n") + 1]
open(store, "wb").write(data)
done = set() if mode == "redo" else {json.loads(line)["task"]["id"] for line in data.decode().splitlines()}
if mode == "orphan":
    subprocess.Popen(["sleep", "30"], start_new_session=True)
if mode == "child":
    watch = "import os, sys, time\nwhile os.getppid() == int(sys.argv[1]): time.sleep(0.02)"
    subprocess.Popen([sys.executable, "-c", watch, str(os.getpid())])
with open(store, "a") as f:
    for i in range(n):
        if f"t{i}" in done:
            continue
        time.sleep(0.05)
        f.write(json.dumps({"task": {"id": f"t{i}"}, "method": "react", "attempt": 0, "finish_reason": "answered"}) + "\n")
        f.flush()
'''


def fake_stage(tmp_path: Path, mode: str = "ok", rerun_mode: str | None = None, n: int = 10):
    """A CollectStage running FAKE_STAGE; the rerun (its second command) may use another mode."""
    script = tmp_path / "fake_stage.py"
    script.write_text(FAKE_STAGE)
    store = tmp_path / "stage" / "trajectories.jsonl"
    modes = iter([mode, rerun_mode or mode] * 100)

    def command() -> list[str]:
        store.parent.mkdir(parents=True, exist_ok=True)
        return [sys.executable, str(script), str(store), str(n), next(modes)]

    return faults.CollectStage("fake", store, command, [store.parent])


def settings(tmp_path: Path) -> faults.Settings:
    return faults.Settings(tmp_path / "out", seed=0, points=2, grace_s=1.0, timeout_s=30.0)


# --- kill points --------------------------------------------------------------------------------------
def test_kill_points_are_seeded_and_fall_inside_the_run():
    points = faults.kill_points(3, "bootstrap", 5, total_units=16, total_s=100.0)
    assert points == faults.kill_points(3, "bootstrap", 5, total_units=16, total_s=100.0)
    assert points != faults.kill_points(4, "bootstrap", 5, total_units=16, total_s=100.0)
    assert points != faults.kill_points(3, "eval", 5, total_units=16, total_s=100.0)
    progress = [p.value for p in points if p.kind == "progress"]
    seconds = [p.value for p in points if p.kind == "seconds"]
    assert len(progress) == 4 and len(set(progress)) == 4 and all(1 <= v < 16 for v in progress)
    assert progress == sorted(progress)
    assert len(seconds) == 1 and 5.0 <= seconds[0] <= 95.0


def test_kill_points_when_the_run_has_few_units():
    assert [p.kind for p in faults.kill_points(0, "train", 1, total_units=8, total_s=10)] == ["progress"]
    # nothing strictly inside a one-record run: every kill is by time
    assert {p.kind for p in faults.kill_points(0, "eval", 3, total_units=1, total_s=10)} == {"seconds"}
    # more points than units inside: some repeat, all still inside
    few = faults.kill_points(0, "eval", 5, total_units=3, total_s=10)
    assert len(few) == 5 and all(1 <= p.value < 3 for p in few if p.kind == "progress")


def test_a_point_is_reached_by_progress_or_time():
    assert faults.Point("progress", 3).reached(3, 0.0) and not faults.Point("progress", 3).reached(2, 99.0)
    assert faults.Point("seconds", 1.5).reached(0, 1.5) and not faults.Point("seconds", 1.5).reached(99, 1.4)
    assert faults.Point("progress", 3).label("episodes") == "after 3 episodes"
    assert faults.Point("progress", 1).label("steps") == "after 1 step"
    assert faults.Point("seconds", 12.34).label("steps") == "at 12.3 s"


# --- counting -----------------------------------------------------------------------------------------
def test_lost_duplicated_and_unexpected_keys_are_counted():
    ref = collections.Counter({("a", "react", 0): 1, ("b", "react", 0): 1, ("c", "react", 0): 1})
    got = collections.Counter({("a", "react", 0): 3, ("b", "react", 0): 1, ("z", "react", 0): 1})
    assert faults.compare(ref, got) == {"lost": 1, "duplicated": 2, "unexpected": 1}
    assert faults.compare(ref, ref) == {"lost": 0, "duplicated": 0, "unexpected": 0}


def test_store_outcome_reads_the_bytes_on_disk(tmp_path):
    store = tmp_path / "s.jsonl"
    rec = lambda t, a=0, fin="answered": json.dumps(  # noqa: E731
        {"task": {"id": t}, "method": "react", "attempt": a, "finish_reason": fin})
    store.write_text("\n".join([rec("a"), rec("a"), rec("b", 1), rec("c", fin="server_error"), '{"task": {"id"'])
                     + "\n")
    out = faults.store_outcome(store)
    assert out.keys == collections.Counter({("a", "react", 0): 2, ("b", "react", 1): 1, ("c", "react", 0): 1})
    assert any("1 unreadable lines" in p for p in out.problems)
    assert any("1 server_error records" in p for p in out.problems)
    assert faults.store_outcome(tmp_path / "none.jsonl").problems[-1].endswith("no store")


def test_steps_are_counted_from_the_log_history_or_the_training_meta():
    history = [{"loss": 1.0, "step": 1}, {"loss": 0.9, "step": 2}, {"loss": 0.9, "step": 2},
               {"train_runtime": 3.0, "step": 2}]
    assert faults.logged_steps(history) == collections.Counter({1: 1, 2: 2})
    assert faults.steps_from_meta({"steps": 4, "losses": [1, 1, 1, 1]}) == collections.Counter([1, 2, 3, 4])
    assert faults.steps_from_meta({"steps": 3, "losses": [1, 1, 1, 1, 1]}) == collections.Counter({1: 1, 2: 1, 3: 3})
    missing = faults.steps_from_meta({"steps": 4, "losses": [1, 1]})
    assert faults.compare(collections.Counter(range(1, 5)), missing)["lost"] == 2


def _checkpoint(folder: Path, step: int, complete: bool = True, history_steps: int | None = None) -> None:
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    if complete:  # weights that open: resume checks them (actune.train.checkpoints)
        import torch
        from safetensors.torch import save_file

        save_file({"lora_A": torch.zeros(1)}, str(path / "adapter_model.safetensors"))
        log = [{"loss": 1.0 / s, "step": s} for s in range(1, (history_steps or step) + 1)]
        (path / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": log}))


def test_train_stage_reads_progress_resume_point_and_steps(tmp_path):
    stage = faults.TrainStage(tmp_path / "adapter", lambda: [])
    assert stage.progress() == stage.preserved() == 0
    _checkpoint(stage.checkpoints, 2)
    _checkpoint(stage.checkpoints, 3)
    _checkpoint(stage.checkpoints, 4, complete=False)  # killed while saving
    assert stage.progress() == 4  # the Trainer had reached step 4
    assert stage.preserved() == 3  # a rerun resumes from the newest complete checkpoint
    stage.observe()
    assert stage.history_step == 3 and len(stage.history) == 3

    stage.output_dir.mkdir()
    (stage.output_dir / "training_meta.json").write_text(json.dumps({"steps": 3, "losses": [1, 0.5, 0.3]}))
    out = stage.outcome()
    assert out.detail["source"] == "checkpoint log_history"
    assert out.keys == collections.Counter([1, 2, 3]) and not out.problems
    # the last checkpoint was not caught: the meta's count stands in
    (stage.output_dir / "training_meta.json").write_text(json.dumps({"steps": 5, "losses": [1] * 5}))
    out = stage.outcome()
    assert out.detail["source"] == "training_meta.json" and out.keys == collections.Counter(range(1, 6))

    stage.reset()
    assert not stage.checkpoints.exists() and not stage.output_dir.exists() and stage.history == []
    assert stage.outcome().problems  # no adapter: a problem, not a crash


def test_recovery_is_the_rerun_beyond_the_reference_remainder():
    ref = faults.Run(rc=0, wall_s=60.0, timeline={1: 30.0, 2: 40.0, 3: 50.0})
    assert faults.recovery_s(ref, 2, rerun_wall_s=45.0) == 25.0  # 20 s were left; the rerun took 45
    assert faults.recovery_s(ref, 0, rerun_wall_s=61.0) == 1.0  # killed before any record: all of it
    assert faults.recovery_s(ref, 7, rerun_wall_s=5.0) is None  # more than the reference ever had


def test_loss_drift_compares_step_by_step():
    a = faults.Outcome(collections.Counter(), detail={"losses": [1.0, 0.5]})
    b = faults.Outcome(collections.Counter(), detail={"losses": [1.0, 0.4]})
    assert faults.max_loss_drift(a, b) == pytest.approx(0.1)
    assert faults.max_loss_drift(a, faults.Outcome(collections.Counter(), detail={"losses": [1.0]})) is None


# --- processes ----------------------------------------------------------------------------------------
def test_an_orphan_of_a_killed_run_is_found_and_ended(tmp_path):
    stage = fake_stage(tmp_path, "orphan")
    run = faults.run_command(stage.command(), tmp_path / "log", stage, faults.Point("progress", 2))
    assert run.killed and run.rc == -9 and run.progress_at_kill >= 2
    orphans = [p for p in run.procs.values() if p.cmd.startswith("sleep")]
    assert orphans and orphans[0].pgid != run.pid  # its own group, as a server's
    left, _ = faults.wait_gone(run.procs.values(), grace_s=0.5)
    assert [p.pid for p in left] == [orphans[0].pid]
    faults.kill_left(left)
    deadline = time.monotonic() + 5
    while faults.still_running(left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert faults.still_running(left) == []


def test_a_child_that_ends_with_its_parent_is_not_left(tmp_path):
    stage = fake_stage(tmp_path, "child")
    run = faults.run_command(stage.command(), tmp_path / "log", stage, faults.Point("progress", 2))
    assert run.killed and run.procs
    left, waited = faults.wait_gone(run.procs.values(), grace_s=5.0)
    faults.kill_left(left)
    assert left == [] and waited < 5.0


def test_a_pid_reused_by_another_process_is_not_counted():
    me = faults._proc(os.getpid())
    assert me is not None and faults.still_running([me]) != []
    impostor = faults.Proc(me.pid, me.create_time - 100.0, os.getpgrp(), me.cmd)
    assert faults.still_running([impostor]) == []  # same pid, other start time; our own group is not searched


def test_a_run_that_ends_before_its_point_is_not_killed(tmp_path):
    stage = fake_stage(tmp_path, n=2)
    run = faults.run_command(stage.command(), tmp_path / "log", stage, faults.Point("progress", 50))
    assert run.rc == 0 and not run.killed
    assert run.timeline.keys() <= {1, 2}


def test_a_hung_run_is_killed_with_everything_it_started(tmp_path):
    import psutil

    started = time.time() - 1
    stage = fake_stage(tmp_path, "orphan", n=1000)
    with pytest.raises(TimeoutError):
        faults.run_command(stage.command(), tmp_path / "log", stage, timeout_s=0.5)
    time.sleep(0.2)
    ours = [p for p in psutil.process_iter(["cmdline", "create_time", "status"])
            if p.info["cmdline"] == ["sleep", "30"] and p.info["create_time"] >= started
            and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert ours == []


# --- one whole fault on the stand-in stage ------------------------------------------------------------
def test_a_sound_resume_loses_and_duplicates_nothing(tmp_path):
    stage, s = fake_stage(tmp_path), settings(tmp_path)
    ref_run, ref, record = faults.reference(stage, s)
    assert record["episodes"] == 10 and record["problems"] == [] and ref_run.timeline[10] > 0
    fault = faults.inject(stage, 1, faults.Point("progress", 4), ref_run, ref, s)
    assert fault["injected"] and fault["problems"] == []
    assert (fault["lost"], fault["duplicated"], fault["unexpected"], fault["leftover"]) == (0, 0, 0, 0)
    assert fault["preserved"] >= 4 and fault["retried"] == 10 - fault["preserved"]
    assert fault["recovery_s"] is not None
    assert (s.out / "logs" / "fake-1-killed.log").exists() and (s.out / "logs" / "fake-1-rerun.log").exists()


def test_a_broken_resume_and_a_leaked_process_fail_the_stage(tmp_path):
    s = settings(tmp_path)
    stage = fake_stage(tmp_path, "ok")
    ref_run, ref, record = faults.reference(stage, s)
    broken = fake_stage(tmp_path, "orphan", rerun_mode="redo")
    fault = faults.inject(broken, 1, faults.Point("progress", 3), ref_run, ref, s)
    assert fault["duplicated"] >= 3 and fault["lost"] == 0
    assert fault["leftover"] == 1 and fault["leftover_cmds"] == ["sleep 30"]
    assert fault["server_processes_seen"] == 1
    t = faults.totals([fault], record)
    assert faults.stage_failed(t)
    assert not faults.stage_failed(faults.totals([{**fault, "duplicated": 0, "leftover": 0}], record))


def test_a_failing_rerun_and_a_point_never_reached_are_problems(tmp_path):
    s = settings(tmp_path)
    stage = fake_stage(tmp_path, n=3)
    ref_run, ref, record = faults.reference(stage, s)
    fault = faults.inject(fake_stage(tmp_path, "ok", rerun_mode="fail", n=3), 1, faults.Point("progress", 99),
                          ref_run, ref, s)
    assert not fault["injected"]
    assert any("nothing was injected" in p for p in fault["problems"])
    assert any("rerun exited 3" in p for p in fault["problems"])
    assert faults.stage_failed(faults.totals([fault], record))


# --- the table and the config -------------------------------------------------------------------------
def test_the_table_has_a_row_per_stage():
    fault = {"injected": True, "lost": 0, "duplicated": 0, "unexpected": 0, "retried": 7, "leftover": 0,
             "recovery_s": 20.0, "problems": []}
    stages = {"bootstrap": {"unit": "episodes", "totals": faults.totals([fault, {**fault, "recovery_s": 30.0}],
                                                                         {"problems": []})},
              "train": {"unit": "steps", "totals": faults.totals([{**fault, "injected": False, "unexpected": 1,
                                                                    "recovery_s": None}], {"problems": []})}}
    lines = faults.format_table(stages).splitlines()
    assert lines[0].startswith("| stage | faults injected | lost | duplicated | retried | leftover processes")
    assert lines[2] == "| bootstrap | 2/2 | 0 episodes | 0 | 14 episodes | 0 | 25.0 (30.0) |"
    assert lines[3] == "| train | 0/1 | 0 steps (+1 unexpected) | 0 | 7 steps | 0 | – |"


def test_the_run_config_is_a_valid_run_config(tmp_path):
    from actune.cli.run_config import RunConfig
    from actune.config import load_config

    cfg = faults.run_config(tmp_path, tmp_path / "world", faults.QUICK, 3, tmp_path / "ds")
    path = tmp_path / "faults.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    run = load_config(RunConfig, path, ["serve.port=8123"])
    assert run.serve.model == run.train.base_model == faults.MODEL and run.serve.port == 8123
    assert run.bootstrap.endpoints == [] and run.eval.endpoints == []  # each stage starts its own server
    assert (run.train.save_steps, run.train.logging_steps, run.train.eval_fraction) == (1, 1, 0.0)
    assert [m.label for m in run.eval.models] == ["prompted"]
    stages = faults.make_stages(path, cfg)
    argv = stages["bootstrap"].command()
    assert argv[1:5] == ["-m", "actune", "bootstrap", str(path)] and argv[-1] == "--no-progress"
    assert argv[5].startswith("serve.port=")
    assert "--no-progress" not in stages["train"].command()
    dpo, grpo = stages["dpo"].command(), stages["grpo"].command()
    assert dpo[3] == grpo[3] == "train" and stages["dpo"].output_dir == tmp_path / "dpo" / "adapter"
    assert f"train.dataset={tmp_path / 'pairs'}" in dpo and "train.objective=dpo" in dpo
    # GRPO's overrides make a valid run config: one rollout batch (2 tasks x 2 episodes) an optimizer step of 4
    grpo_run = load_config(RunConfig, path, grpo[5:-1])
    assert grpo_run.train.objective == "grpo" and grpo_run.train.output_dir == tmp_path / "grpo" / "adapter"
    assert (grpo_run.train.grpo.tasks_per_step * grpo_run.train.grpo.num_generations
            == grpo_run.train.per_device_train_batch_size)


def test_an_episode_stored_twice_in_a_rollout_store_is_a_problem(tmp_path):
    stage = faults.TrainStage(tmp_path / "grpo", lambda: [], "grpo")
    stage.rollouts.mkdir()
    line = lambda task, attempt: json.dumps({"task": {"id": task}, "method": "react", "attempt": attempt}) + "\n"
    (stage.rollouts / "step-00001.jsonl").write_text(line("t1", 0) + line("t1", 1))
    (stage.rollouts / "step-00002.jsonl").write_text(line("t1", 0) + line("t2", 0) + line("t2", 0))
    assert faults.rollout_duplicates(stage.rollouts) == [f"{stage.rollouts / 'step-00002.jsonl'}: 1 episodes stored "
                                                         "twice"]
    stage.reset()
    assert not stage.rollouts.exists()
