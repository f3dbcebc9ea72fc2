"""Crash each resumable stage with SIGKILL at seeded points and count what the resume lost (issue #12).

    .venv/bin/python bench/faults.py                 # 5 points a stage, about 16 minutes on 2 cores
    .venv/bin/python bench/faults.py --quick         # 2 points a stage, fewer tasks: 8 minutes (measured)
    .venv/bin/python bench/faults.py --stages bootstrap --points 3 --seed 7 --json runs/faults.json

For each of ``actune bootstrap``, ``actune train`` (SFT, and as ``dpo`` on the bootstrap reference's preference
pairs and ``grpo`` with its rollouts on the bootstrap tasks, the objectives the quickstart's ``after_sft`` runs)
and ``actune eval`` (the real commands, in a child process, at a tiny scale: a generated world of a few dozen
pages, the embedded model ``smollm2-135m``, the server started by the stage itself):

1. a **reference** run, unfaulted, from nothing: what a finished stage holds (the (task, method, attempt)
   keys of its store; for train, the steps of the Trainer's ``log_history``, one loss logged each step),
   and when each record or step appeared;
2. per seeded **kill point** (``--seed``; a record count, an optimizer step, or one point per stage in
   seconds after the start, which can fall before the first record: the server or the model loading), from
   nothing again: the stage is started, and at the point ``SIGKILL`` goes to the actune process alone, as a
   crash would (not to its process group: the stage's server must notice by itself); every process the
   stage started must be gone within ``--grace`` seconds (the server's guard ends its group); then the
   command is **rerun** to completion and compared with the reference:

   - **lost**: reference keys (steps) missing; **duplicated**: keys stored (steps logged) more than once (GRPO: an
     episode stored twice in a step's rollout store is a problem too: it was played twice);
     **unexpected**: keys the reference does not have; a record that does not parse, a ``server_error``
     record or a rerun that fails is a problem too;
   - **retried**: episodes (steps) the rerun ran because the killed run had not stored them (steps: not
     in a complete checkpoint); for train, ``redone`` is the part of those the killed run had computed;
   - **leftover**: processes of the killed run still running after the grace (they are then killed);
   - **recovery s**: the rerun's wall time minus the time the reference took from the same point to its
     end: what the crash cost (a process and a server started again, work in flight run again). Runs
     vary by a few seconds, so a crash before the first record can read slightly negative.

The commands that write an output whole instead (``world`` generate and ``export``: ``--stages world export``,
``--output-points``) are :mod:`output_faults`'s: killed or given a full disk mid-write, the output must be the old
one or the new one whole, and a rerun must leave nothing beside it; their table follows the first.

Prints one table (stage, faults injected, lost, duplicated, retried, leftover processes, recovery) and
writes the figures as JSON (``--json``, default ``<out>/faults.json``). Exits 1 when anything is lost,
duplicated, unexpected or left over, when a point was never reached (nothing was tested), or a run failed.
Holds the server lock (actune.serve.lock) while it runs: one vLLM server at a time on a small machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml
from output_faults import bench as bench_outputs
from output_faults import format_table as format_output_table

from actune.records.atomic_write import fresh_work_folder
from actune.runtime.stop_signals import run_script

REPO = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m"


# --- kill points --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """Where a run is killed: once ``value`` records/steps are seen (``progress``) or seconds have passed."""

    kind: str  # "progress" | "seconds"
    value: float

    def reached(self, progress: int, elapsed_s: float) -> bool:
        return progress >= self.value if self.kind == "progress" else elapsed_s >= self.value

    def label(self, unit: str) -> str:
        if self.kind == "seconds":
            return f"at {self.value:.1f} s"
        return f"after {int(self.value)} {unit.removesuffix('s') if self.value == 1 else unit}"


def kill_points(seed: int, stage: str, n: int, total_units: int, total_s: float) -> list[Point]:
    """``n`` kill points for ``stage``, the same for the same seed: record counts (steps) strictly inside the
    reference's run, so each kill falls mid-run, and one point in seconds (5-75% of the reference's wall
    time), so a crash before the first record (server starting, model loading) is covered too."""
    rng = random.Random(f"faults:{seed}:{stage}")  # a string seed is hashed the same in every process
    units = list(range(1, total_units))
    n_time = n if not units else min(1, max(n - 1, 0))
    k = n - n_time
    picks = rng.sample(units, k) if len(units) >= k else [rng.choice(units) for _ in range(k)]
    # not later than 75%: a faulted run can be quicker than the reference (a warm cache) and end before a late point
    # (measured: train at 22.3 s of a 24 s reference ended first, so nothing was injected)
    times = [round(rng.uniform(0.05, 0.75) * total_s, 1) for _ in range(n_time)]
    return [Point("progress", v) for v in sorted(picks)] + [Point("seconds", t) for t in times]


# --- processes ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Proc:
    """A process the stage started, identified by pid and start time (a pid is reused)."""

    pid: int
    create_time: float
    pgid: int
    cmd: str


def _proc(pid: int) -> Proc | None:
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            cmd = " ".join(p.cmdline()) or p.name()
            return Proc(pid, p.create_time(), os.getpgid(pid), cmd[:160])
    except (psutil.Error, ProcessLookupError):
        return None


def descendants(pid: int) -> dict[int, Proc]:
    """Every live descendant of ``pid`` (the server's guard, vLLM's API server and engine...)."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return {}
    found = (_proc(c.pid) for c in children)
    return {p.pid: p for p in found if p is not None}


def _same_and_alive(p: Proc) -> bool:
    try:
        q = psutil.Process(p.pid)
        return q.create_time() == p.create_time and q.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def still_running(procs: Iterable[Proc]) -> list[Proc]:
    """What is left of ``procs``: those still alive, and any process in their process groups (vLLM's
    engine can start after the last look at the tree; it is in its server's group). This process's own
    group is not searched: it holds the bench itself."""
    from actune.serve.server import group_members

    procs = list(procs)
    left = {p.pid: p for p in procs if _same_and_alive(p)}
    for pgid in {p.pgid for p in procs} - {os.getpgrp()}:
        for pid in group_members(pgid):
            if pid not in left and (p := _proc(pid)) is not None:
                left[pid] = p
    return sorted(left.values(), key=lambda p: p.pid)


def wait_gone(procs: Iterable[Proc], grace_s: float, poll_s: float = 0.25) -> tuple[list[Proc], float]:
    """Wait up to ``grace_s`` for ``procs`` to end; (what is still running then, seconds waited)."""
    procs, t0 = list(procs), time.monotonic()
    while (left := still_running(procs)) and time.monotonic() - t0 < grace_s:
        time.sleep(poll_s)
    return left, time.monotonic() - t0


def kill_left(procs: Iterable[Proc]) -> None:
    """SIGKILL what a killed run left (each checked again by start time), so the next run starts clean."""
    for p in procs:
        if _same_and_alive(p):
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --- one run ------------------------------------------------------------------------------------------
@dataclass
class Run:
    pid: int = 0
    """The stage process (also its process group: it runs in its own session)."""
    rc: int | None = None
    wall_s: float = 0.0
    killed: bool = False
    """The SIGKILL landed while the stage ran (it had not exited by itself first)."""
    progress_at_kill: int = 0
    timeline: dict[int, float] = field(default_factory=dict)
    """Records (steps) -> seconds after the start when they were first seen."""
    procs: dict[int, Proc] = field(default_factory=dict)
    """Every descendant seen while it ran."""


def _note_progress(timeline: dict[int, float], progress: int, elapsed_s: float) -> None:
    for k in range(1, progress + 1):
        timeline.setdefault(k, round(elapsed_s, 2))


def run_command(cmd: list[str], log_path: Path, watch: Any, point: Point | None = None,
                timeout_s: float = 900.0, poll_s: float = 0.1) -> Run:
    """Run ``cmd`` to its end, or SIGKILL it at ``point``; ``watch`` is the stage (``progress()``,
    ``observe()``). Output goes to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    run = Run()
    with open(log_path, "wb") as log:
        # its own session: what is left of the stage after the kill is found by its process group too. The
        # kill still goes to the stage process alone (a crash does not signal the children)
        proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        run.pid, t0 = proc.pid, time.monotonic()
        try:
            while True:
                elapsed, progress = time.monotonic() - t0, watch.progress()
                watch.observe()
                _note_progress(run.timeline, progress, elapsed)
                run.procs.update(descendants(proc.pid))
                if proc.poll() is not None:
                    break
                if point is not None and point.reached(progress, elapsed):
                    os.kill(proc.pid, signal.SIGKILL)
                    run.killed, run.progress_at_kill = True, progress
                    break
                if elapsed > timeout_s:
                    raise TimeoutError(f"{' '.join(cmd[:4])}... still running after {timeout_s:.0f} s "
                                       f"(log: {log_path})")
                time.sleep(poll_s)
            run.rc = proc.wait()
        finally:
            if proc.poll() is None:  # the bench itself failed or was interrupted: leave nothing running
                proc.kill()
                proc.wait()
                kill_left(still_running(run.procs.values()))
    run.wall_s = round(time.monotonic() - t0, 2)
    # a stage that exited between the last look and the kill was not killed: its own exit status says so
    run.killed = run.killed and run.rc == -signal.SIGKILL
    return run


# --- what a stage holds -------------------------------------------------------------------------------
@dataclass
class Outcome:
    keys: collections.Counter
    """Episodes (task id, method, attempt), or logged steps, each with how often it is there."""
    problems: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


def _whole_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def store_outcome(path: Path) -> Outcome:
    """The episodes in a store (raw JSON: the bench reads what is on disk, not what a reader forgives)."""
    keys: collections.Counter = collections.Counter()
    bad = server_errors = 0
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    for line in text.splitlines():
        try:
            d = json.loads(line)
            keys[(d["task"]["id"], d["method"], d["attempt"])] += 1
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        server_errors += d.get("finish_reason") == "server_error"
    problems = [f"{path}: {bad} unreadable lines"] if bad else []
    problems += [f"{path}: {server_errors} server_error records"] if server_errors else []
    if not path.exists():
        problems.append(f"{path}: no store")
    return Outcome(keys, problems, {"records": sum(keys.values())})


@dataclass
class CollectStage:
    """bootstrap or eval: episodes appended to one store, one line each."""

    name: str
    store: Path
    command: Callable[[], list[str]]
    clean: list[Path]
    unit: str = "episodes"

    def reset(self) -> None:
        for path in self.clean:
            shutil.rmtree(path, ignore_errors=True)

    def progress(self) -> int:
        return _whole_lines(self.store)

    def observe(self) -> None:
        pass

    def preserved(self) -> int:
        """Records a rerun keeps: whole lines (a torn last line is cut when the store opens)."""
        return _whole_lines(self.store)

    def outcome(self) -> Outcome:
        return store_outcome(self.store)

    def snapshot(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(self.store, folder / self.store.name))


def _checkpoint_step(path: Path) -> int | None:
    tail = path.name.removeprefix("checkpoint-")
    return int(tail) if path.name.startswith("checkpoint-") and tail.isdigit() else None


def logged_steps(history: list[dict[str, Any]]) -> collections.Counter:
    """Steps of a Trainer ``log_history`` that logged a training loss (logging_steps=1: every step once)."""
    return collections.Counter(int(h["step"]) for h in history if "loss" in h)


def steps_from_meta(meta: dict[str, Any]) -> collections.Counter:
    """When no checkpoint's log was caught: ``training_meta.json``'s final step and losses (one a step),
    as steps 1..n; losses beyond the final step count as that step logged again, missing ones as lost."""
    steps, n_losses = int(meta["steps"]), len(meta["losses"])
    keys = collections.Counter(range(1, min(steps, n_losses) + 1))
    if n_losses > steps and steps:
        keys[steps] += n_losses - steps
    return keys


def rollout_duplicates(folder: Path) -> list[str]:
    """GRPO's rollout stores (one a step, ``step-NNNNN.jsonl``): an episode stored twice was played twice."""
    problems = []
    for store in sorted(folder.glob("step-*.jsonl")):
        got = store_outcome(store)
        dup = duplicates(got.keys)
        problems += got.problems + ([f"{store}: {dup} episodes stored twice"] if dup else [])
    return problems


@dataclass
class TrainStage:
    """train (SFT, DPO or GRPO): checkpoints in ``<output_dir>.checkpoints`` (one a step), the adapter in
    ``output_dir``; GRPO's rollout stores in ``<output_dir>.rollouts``."""

    output_dir: Path
    command: Callable[[], list[str]]
    name: str = "train"
    unit: str = "steps"
    history: list[dict[str, Any]] = field(default_factory=list)
    history_step: int = 0

    @property
    def checkpoints(self) -> Path:
        return self.output_dir.parent / f"{self.output_dir.name}.checkpoints"

    @property
    def rollouts(self) -> Path:
        return self.output_dir.parent / f"{self.output_dir.name}.rollouts"

    def reset(self) -> None:
        for path in (self.output_dir, self.checkpoints, self.rollouts):
            shutil.rmtree(path, ignore_errors=True)
        self.history, self.history_step = [], 0

    def _steps(self) -> list[tuple[int, Path]]:
        if not self.checkpoints.is_dir():
            return []
        found = ((_checkpoint_step(p), p) for p in self.checkpoints.iterdir())
        return sorted(((s, p) for s, p in found if s is not None), reverse=True)

    def progress(self) -> int:
        """The newest checkpoint folder, complete or being written: the step the Trainer has reached."""
        steps = self._steps()
        return steps[0][0] if steps else 0

    def observe(self) -> None:
        """Keep the newest checkpoint's log_history: the checkpoints are deleted once the adapter is saved,
        and the last one (saved at the final step) holds the log of every step, resumed ones included."""
        for step, path in self._steps():
            if step <= self.history_step:
                return
            try:
                state = json.loads((path / "trainer_state.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):  # not written yet, or half written: the next look reads it
                continue
            self.history, self.history_step = state.get("log_history", []), int(state.get("global_step", step))
            return

    def preserved(self) -> int:
        """The step a rerun resumes from, by the trainer's own rule (the newest complete checkpoint)."""
        from actune.train.checkpoints import last_checkpoint

        last = last_checkpoint(self.checkpoints)
        return (_checkpoint_step(Path(last)) or 0) if last else 0

    def outcome(self) -> Outcome:
        meta_path = self.output_dir / "training_meta.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            return Outcome(collections.Counter(), [f"{meta_path}: {e}"])
        from_log = self.history_step == int(meta["steps"]) and bool(self.history)
        keys = logged_steps(self.history) if from_log else steps_from_meta(meta)
        problems = [] if len(meta["losses"]) == sum(keys.values()) else [
            f"{meta_path}: {len(meta['losses'])} losses for {sum(keys.values())} logged steps"]
        problems += rollout_duplicates(self.rollouts)
        return Outcome(keys, problems, {"steps": int(meta["steps"]), "losses": meta["losses"],
                                        "source": "checkpoint log_history" if from_log else "training_meta.json"})

    def snapshot(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(self.output_dir / "training_meta.json", folder / "training_meta.json"))


# --- comparing with the reference ---------------------------------------------------------------------
def duplicates(keys: collections.Counter) -> int:
    """Extra copies: a key stored three times is two duplicates."""
    return sum(n - 1 for n in keys.values() if n > 1)


def compare(ref: collections.Counter, got: collections.Counter) -> dict[str, int]:
    return {"lost": len(set(ref) - set(got)), "duplicated": duplicates(got),
            "unexpected": len(set(got) - set(ref))}


def time_at(timeline: dict[int, float], units: int) -> float | None:
    """When the reference had ``units`` records (steps); 0 for none, None when it never had that many."""
    return 0.0 if units <= 0 else timeline.get(units)


def recovery_s(ref: Run, preserved: int, rerun_wall_s: float) -> float | None:
    """The rerun's wall time minus what the reference took from the same point to its end."""
    reached = time_at(ref.timeline, preserved)
    return None if reached is None else round(rerun_wall_s - (ref.wall_s - reached), 1)


def max_loss_drift(ref: Outcome, got: Outcome) -> float | None:
    """Largest difference between the reference's losses and the resumed run's, step by step (a resume
    that restores the data order and RNG states trains the same steps: about 0)."""
    a, b = ref.detail.get("losses"), got.detail.get("losses")
    if not a or not b or len(a) != len(b):
        return None
    return round(max(abs(x - y) for x, y in zip(a, b)), 6)


# --- one stage ----------------------------------------------------------------------------------------
@dataclass
class Settings:
    out: Path
    seed: int = 0
    points: int = 5
    grace_s: float = 45.0
    timeout_s: float = 900.0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _check_clean_end(stage: Any, run: Run, label: str, grace_s: float) -> tuple[list[Proc], float]:
    """After a run (killed or not): wait for its processes to end; kill and return what outlived the grace."""
    left, waited = wait_gone(run.procs.values(), grace_s)
    if left:
        _say(f"{stage.name} {label}: {len(left)} processes left after {grace_s:.0f} s: "
             + "; ".join(f"{p.pid} {p.cmd[:60]}" for p in left))
        kill_left(left)
    return left, waited


def reference(stage: Any, s: Settings) -> tuple[Run, Outcome, dict[str, Any]]:
    """The unfaulted run, from nothing."""
    stage.reset()
    run = run_command(stage.command(), s.out / "logs" / f"{stage.name}-reference.log", stage, timeout_s=s.timeout_s)
    left, _ = _check_clean_end(stage, run, "reference", s.grace_s)
    got = stage.outcome()
    problems = got.problems + ([f"reference exited {run.rc}"] if run.rc != 0 else [])
    problems += [f"reference: {len(left)} processes left"] if left else []
    dup = duplicates(got.keys)
    problems += [f"reference: {dup} {stage.unit} twice"] if dup else []
    record = {"wall_s": run.wall_s, "rc": run.rc, stage.unit: sum(got.keys.values()), "problems": problems,
              "timeline_s": run.timeline, **{k: v for k, v in got.detail.items() if k != "losses"}}
    _say(f"{stage.name} reference: {record[stage.unit]} {stage.unit} in {run.wall_s:.0f} s")
    return run, got, record


def _run_problems(point: str, killed: Run, rerun: Run, rerun_left: list[Proc], rerun_log: Path) -> list[str]:
    problems = [] if killed.killed else [f"{point}: the run ended first (exit {killed.rc}): nothing was injected"]
    problems += [] if rerun.rc == 0 else [f"rerun exited {rerun.rc} (log: {rerun_log})"]
    return problems + ([f"rerun: {len(rerun_left)} processes left"] if rerun_left else [])


def inject(stage: Any, i: int, point: Point, ref_run: Run, ref: Outcome, s: Settings) -> dict[str, Any]:
    """One fault: start from nothing, SIGKILL at ``point``, check nothing is left running, rerun, compare."""
    stage.reset()
    logs = s.out / "logs"
    killed = run_command(stage.command(), logs / f"{stage.name}-{i}-killed.log", stage, point, s.timeout_s)
    left, waited = _check_clean_end(stage, killed, f"fault {i}", s.grace_s)
    preserved = stage.preserved()
    rerun = run_command(stage.command(), logs / f"{stage.name}-{i}-rerun.log", stage, timeout_s=s.timeout_s)
    rerun_left, _ = _check_clean_end(stage, rerun, f"rerun {i}", s.grace_s)
    got = stage.outcome()
    total = sum(ref.keys.values())
    problems = got.problems + _run_problems(point.label(stage.unit), killed, rerun, rerun_left,
                                            logs / f"{stage.name}-{i}-rerun.log")
    fault = {
        "point": point.label(stage.unit), "injected": killed.killed, "killed_at_s": killed.wall_s,
        "reached": killed.progress_at_kill, "preserved": preserved, **compare(ref.keys, got.keys),
        "retried": max(total - preserved, 0), "leftover": len(left), "leftover_cmds": [p.cmd for p in left],
        # the stage leads its own group; a server's processes are in its guard's group
        "server_processes_seen": sum(p.pgid != killed.pid for p in killed.procs.values()),
        "processes_gone_s": round(waited, 1), "rerun_wall_s": rerun.wall_s,
        "recovery_s": recovery_s(ref_run, preserved, rerun.wall_s), "problems": problems,
    }
    if stage.unit == "steps":
        fault["redone"] = max(killed.progress_at_kill - preserved, 0)
        fault["max_loss_drift"] = max_loss_drift(ref, got)
    _say(f"{stage.name} fault {i} ({fault['point']}): lost {fault['lost']}, duplicated {fault['duplicated']}, "
         f"retried {fault['retried']}, leftover {fault['leftover']}, recovery {fault['recovery_s']} s"
         + (f"; problems: {problems}" if problems else ""))
    return fault


def bench_stage(stage: Any, s: Settings) -> dict[str, Any]:
    ref_run, ref, ref_record = reference(stage, s)
    stage.snapshot(s.out / "reference" / stage.name)
    points = kill_points(s.seed, stage.name, s.points, sum(ref.keys.values()), ref_run.wall_s)
    faults = [inject(stage, i, p, ref_run, ref, s) for i, p in enumerate(points, 1)]
    return {"unit": stage.unit, "reference": ref_record, "faults": faults, "totals": totals(faults, ref_record)}


# --- the figures --------------------------------------------------------------------------------------
def totals(faults: list[dict[str, Any]], ref_record: dict[str, Any]) -> dict[str, Any]:
    recoveries = [f["recovery_s"] for f in faults if f["recovery_s"] is not None]
    return {
        "planned": len(faults), "injected": sum(f["injected"] for f in faults),
        **{k: sum(f[k] for f in faults) for k in ("lost", "duplicated", "unexpected", "retried", "leftover")},
        "recovery_s_mean": round(sum(recoveries) / len(recoveries), 1) if recoveries else None,
        "recovery_s_max": max(recoveries) if recoveries else None,
        "problems": ref_record["problems"] + [p for f in faults for p in f["problems"]],
    }


def stage_failed(t: dict[str, Any]) -> bool:
    return bool(t["lost"] or t["duplicated"] or t["unexpected"] or t["leftover"] or t["problems"]
                or t["injected"] < t["planned"])


def format_table(stages: dict[str, dict[str, Any]]) -> str:
    """One Markdown table, a row per stage."""
    lines = ["| stage | faults injected | lost | duplicated | retried | leftover processes | recovery s, mean (max) |",
             "|---|---|---|---|---|---|---|"]
    for name, st in stages.items():
        t, unit = st["totals"], st["unit"]
        recovery = "–" if t["recovery_s_mean"] is None else f"{t['recovery_s_mean']} ({t['recovery_s_max']})"
        lost = f"{t['lost']} {unit}" + (f" (+{t['unexpected']} unexpected)" if t["unexpected"] else "")
        lines.append(f"| {name} | {t['injected']}/{t['planned']} | {lost} | {t['duplicated']} | "
                     f"{t['retried']} {unit} | {t['leftover']} | {recovery} |")
    return "\n".join(lines)


# --- the tiny run ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scale:
    tasks: int
    attempts: int
    train_steps: int
    points: int


STAGES = ("bootstrap", "train", "dpo", "grpo", "eval")
FULL = Scale(tasks=8, attempts=2, train_steps=8, points=5)
QUICK = Scale(tasks=6, attempts=2, train_steps=6, points=2)


def run_config(out: Path, world: Path, scale: Scale, seed: int, dataset: Path) -> dict[str, Any]:
    """One run config for the three stages: tiny tasks and episodes, a checkpoint and a logged loss every
    step (so every step can be counted), no dev slice and no merge (nothing the faults need)."""
    env = {"name": "wiki", "corpus": str(world / "corpus.jsonl"), "index_dir": str(out / "index")}
    agent = {"method": "react", "exemplar_set": "world", "num_exemplars": 2, "max_tokens": 64, "episode_steps": 4,
             "seed": seed}
    return {
        "name": "faults", "model": MODEL,
        "serve": {"cpu_kv_cache_gib": 1, "max_model_len": 4096, "log_dir": str(out / "logs" / "vllm")},
        "bootstrap": {
            "store": str(out / "bootstrap" / "trajectories.jsonl"), "concurrency": 8,
            "attempts_per_task": scale.attempts, "target_correct": 10_000, "require_grounded": True,
            "env": env, "agent": {**agent, "temperature": 0.4},
            "tasks": {"format": "custom", "path": str(world / "train.jsonl"), "split": "train"},
        },
        "train": {
            "dataset": str(dataset), "output_dir": str(out / "train" / "adapter"), "max_steps": scale.train_steps,
            "per_device_train_batch_size": 1, "max_length": 768, "lora": {"r": 8, "alpha": 16},
            "eval_fraction": 0.0, "save_steps": 1, "logging_steps": 1, "merge": False, "seed": seed,
        },
        "eval": {
            "out_dir": str(out / "eval"), "models": [{"label": "prompted"}], "concurrency": 8, "env": env,
            "agent": {**agent, "temperature": 0.0},
            "tasks": {"format": "custom", "path": str(world / "test.jsonl"), "split": "test"},
        },
    }


def stage_command(stage: str, config: Path, overrides: Iterable[str] = ()) -> Callable[[], list[str]]:
    """The stage's real command; each run gets a free port (a server left by a killed run must not make the
    rerun fail on a busy port: the leftover is counted, not tripped over)."""
    def command() -> list[str]:
        from actune.serve.server import free_port

        extra = ["--no-progress"] if stage in ("bootstrap", "eval") else []
        return [sys.executable, "-m", "actune", stage, str(config), *overrides, f"serve.port={free_port()}", *extra]

    return command


def objective_overrides(out: Path, objective: str) -> list[str]:
    """``actune train`` as DPO (on the reference store's pairs) or GRPO (rollouts on the bootstrap section's
    tasks, one rollout batch an optimizer step, so a checkpoint a step holds every rollout before it)."""
    ours = [f"train.objective={objective}", f"train.output_dir={out / objective / 'adapter'}"]
    if objective == "dpo":
        return [*ours, f"train.dataset={out / 'pairs'}"]
    return [*ours, "train.per_device_train_batch_size=4", "train.grpo.tasks_per_step=2",
            "train.grpo.num_generations=2", "train.grpo.concurrency=4"]


def make_stages(config: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    boot_store = Path(cfg["bootstrap"]["store"])
    eval_out = Path(cfg["eval"]["out_dir"])
    out = config.parent
    objectives = {name: TrainStage(out / name / "adapter", stage_command("train", config,
                                                                           objective_overrides(out, name)), name)
                  for name in ("dpo", "grpo")}
    return {
        "bootstrap": CollectStage("bootstrap", boot_store, stage_command("bootstrap", config), [boot_store.parent]),
        "train": TrainStage(Path(cfg["train"]["output_dir"]), stage_command("train", config)),
        "eval": CollectStage("eval", eval_out / "prompted" / "trajectories.jsonl", stage_command("eval", config),
                             [eval_out]),
        **objectives,
    }


def export_training_set(out: Path, config: Path, store: Path, overrides: Iterable[str] = (),
                        what: str = "training set") -> bool:
    """The training set (with ``train.objective=dpo``: the preference pairs) of the bootstrap reference's
    records, exported by ``actune export``."""
    log = out / "logs" / f"export {what}.log"
    with open(log, "wb") as f:
        rc = subprocess.run([sys.executable, "-m", "actune", "export", str(config), f"store={store}", *overrides],
                            cwd=REPO, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        _say(f"export failed (exit {rc}, log {log}): no {what}")
    return rc == 0


def reference_store(out: Path, stages: dict[str, Any], s: Settings) -> Path:
    """The bootstrap reference's store, run now when the bootstrap stage is not benched."""
    path = out / "reference" / "bootstrap" / "trajectories.jsonl"
    if not path.exists():
        stage = stages["bootstrap"]
        stage.reset()
        run = run_command(stage.command(), out / "logs" / "bootstrap-for-train.log", stage, timeout_s=s.timeout_s)
        _check_clean_end(stage, run, "for train", s.grace_s)
        stage.snapshot(path.parent)
    return path


def _missing_training_set(name: str, out: Path, config: Path, stages: dict[str, Any], s: Settings,
                          given: bool) -> str | None:
    """Why ``name`` has nothing to train on (None: it has, or it trains on nothing exported: GRPO's rollouts)."""
    if name == "train" and not given and not export_training_set(out, config, reference_store(out, stages, s)):
        return "no training set: the bootstrap reference kept nothing to export"
    if name == "dpo" and not export_training_set(out, config, reference_store(out, stages, s),
                                                 ["train.objective=dpo", f"train.dataset={out / 'pairs'}"], "pairs"):
        return "no preference pairs: no task of the bootstrap reference has a kept and a failed episode"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench-faults",
                    help="working folder (emptied when an earlier bench made it; any other is refused)")
    ap.add_argument("--seed", type=int, default=0, help="kill points, world and sampling seed")
    ap.add_argument("--points", type=_positive, help="kill points per stage (default 5; --quick 2)")
    ap.add_argument("--quick", action="store_true", help="2 points a stage and fewer tasks and steps")
    ap.add_argument("--stages", nargs="+", default=[*STAGES, *OUTPUT_STAGES], choices=[*STAGES, *OUTPUT_STAGES],
                    help="world and export: bench/output_faults.py's rows (kill -9 and a full disk mid-write)")
    ap.add_argument("--output-points", type=_positive, default=20,
                    help="kill points and disk caps, each, for the world and export rows")
    ap.add_argument("--dataset", help="a training set for the train stage (default: the bootstrap reference, "
                                      "exported)")
    ap.add_argument("--grace", type=float, default=45.0,
                    help="seconds the killed run's processes get to end (the server's guard gives vLLM 20 s)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take")
    ap.add_argument("--json", help="write the figures here (default <out>/faults.json)")
    args = ap.parse_args(argv)

    from actune.serve.lock import exclusive_server_lock
    from actune.world import WorldConfig, write_world

    scale = QUICK if args.quick else FULL
    out = fresh_work_folder(Path(args.out).resolve())
    (out / "logs").mkdir()
    s = Settings(out, args.seed, args.points or scale.points, args.grace, args.timeout)
    world = out / "world"
    write_world(WorldConfig(seed=args.seed, n_people=20, n_companies=12, n_cities=8, n_train=scale.tasks, n_dev=2,
                            n_test=scale.tasks), world)
    dataset = Path(args.dataset).resolve() if args.dataset else out / "dataset"
    cfg = run_config(out, world, scale, args.seed, dataset)
    config = out / "faults.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    stages = make_stages(config, cfg)

    results: dict[str, Any] = {}
    order = [name for name in STAGES if name in args.stages]
    with exclusive_server_lock():
        for name in order:
            missing = _missing_training_set(name, out, config, stages, s, bool(args.dataset))
            results[name] = _skipped("steps", missing) if missing else bench_stage(stages[name], s)
    outputs = _output_rows(args.stages, out / "outputs", args.seed, args.output_points)

    from actune.runtime.cpu_features import describe_cpu

    figures = {"machine": describe_cpu(), "seed": args.seed, "points": s.points, "scale": asdict(scale),
               "stages": results, "outputs": outputs}
    json_path = Path(args.json) if args.json else out / "faults.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if results:
        print(format_table(results))
    if outputs:
        print("\n" + format_output_table(outputs))
    failed = [name for name, st in results.items() if stage_failed(st["totals"])]
    for name in failed:
        print(f"{name}: FAILED: " + "; ".join(results[name]["totals"]["problems"][:5] or ["see the table"]))
    for name, r in outputs.items():
        if r["problems"]:
            failed.append(name)
            print(f"{name}: FAILED: " + "; ".join(r["problems"][:5]))
    print(f"\nfigures: {json_path}")
    return 1 if failed else 0


OUTPUT_STAGES = ("world", "export")


def _output_rows(stages: list[str], work: Path, seed: int, points: int) -> dict[str, Any]:
    """bench/output_faults.py's figures of the outputs of ``stages`` that are world or export."""
    chosen = [name for name in OUTPUT_STAGES if name in stages]
    if not chosen:
        return {}
    return bench_outputs(work, seed, points, lambda name: name.split()[0] in chosen)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of 1 or more, not {text!r}")
    return int(text)


def _skipped(unit: str, why: str) -> dict[str, Any]:
    t = {"planned": 0, "injected": 0, "lost": 0, "duplicated": 0, "unexpected": 0, "retried": 0, "leftover": 0,
         "recovery_s_mean": None, "recovery_s_max": None, "problems": [why]}
    return {"unit": unit, "reference": {}, "faults": [], "totals": t}


if __name__ == "__main__":
    run_script(main)
