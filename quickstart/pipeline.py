"""The quickstart pipeline: world -> bootstrap -> export -> train -> (expert iteration) -> eval -> report.

    run_quickstart(load_quickstart("smoke"), out=Path("runs/quickstart-smoke"))

Every file lands under ``out`` (:mod:`actune.quickstart.layout`). The run is a list of stages: the task source's
(:mod:`~actune.quickstart.sources`), each round's (:mod:`~actune.quickstart.rounds`), the ``after_sft`` objectives'
(:mod:`~actune.quickstart.objectives`), each method's eval (:mod:`~actune.quickstart.evaluation`), the Figure 3
formats' (:mod:`~actune.quickstart.formats`), the report (:mod:`~actune.quickstart.report`).

Resuming: a stage recorded as done in ``quickstart-state.json`` (:mod:`~actune.quickstart.state`) is skipped; the
stage that was running resumes through its own files (bootstrap and eval stores are append-only and skip finished
episodes, training resumes from its last complete checkpoint).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actune.quickstart.config import QuickstartConfig, hardware_kind
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import estimate_stages
from actune.quickstart.evaluation import run_method_eval
from actune.quickstart.formats import format_stages
from actune.quickstart.layout import Layout
from actune.quickstart.objectives import objective_stages
from actune.quickstart.report import write_quickstart_report
from actune.quickstart.rounds import rounds_of
from actune.quickstart.sources import check_import_paths, source_stages
from actune.quickstart.stage import Stage
from actune.quickstart.state import load_state, save_state
from actune.runtime.cpu_features import describe_cpu
from actune.runtime.stop_signals import stop_signals_as_interrupt

__all__ = ["PACE_MIN_S", "plan_stages", "plan_text", "time_left", "run_stage", "run_quickstart"]


def plan_stages(run: RunContext, kind: str) -> list[Stage]:
    """Every stage in order, with its share of the estimated time."""
    est = estimate_stages(run.cfg, kind)
    stages = source_stages(run)
    for r, round_plan in enumerate(rounds_of(run.cfg), 1):
        stages += round_plan(run, r, est)
    stages += objective_stages(run, est)
    n_methods = len(run.cfg.methods)
    stages += [Stage(f"eval {m}", est.eval / n_methods, lambda m=m: run_method_eval(run, m)) for m in run.cfg.methods]
    stages += format_stages(run, est)  # after the run's own result: Figure 3 reuses round 1's ReAct store
    stages.append(Stage("report", 5, lambda: _report(run)))
    return stages


def _report(run: RunContext) -> None:
    paths = write_quickstart_report(run.cfg, run.layout)
    run.log(f"report: {paths['md']}")


PACE_MIN_S = 120.0
"""Only stages estimated at two minutes or more set a run's pace: world, export and report are too short for
their measured-to-estimated ratio to say anything."""


def time_left(stages: list[Stage], done: dict[str, Any], start: int) -> tuple[float, float | None]:
    """The estimated seconds of ``stages[start:]`` not yet done, and this run's pace so far: the measured wall
    time of the finished stages (:data:`PACE_MIN_S` or more estimated) over their estimates, None until one has
    finished. The estimate's rates come from one CPU of each kind (a faster or slower one of the same kind, or
    a busy machine, shifts every stage alike), so the remaining estimate times the pace is the better guess.
    A stage killed outright (SIGKILL, power loss) never saved the time it ran, so its rerun reads short and the
    pace low; a stopped one (a signal, a crash) did save it (:func:`run_stage`)."""
    left = sum(s.estimate_s for s in stages[start:] if s.name not in done)
    timed = [(done[s.name]["wall_s"], s.estimate_s) for s in stages
             if s.name in done and s.estimate_s >= PACE_MIN_S and "wall_s" in done[s.name]]
    if not timed:
        return left, None
    return left, sum(w for w, _ in timed) / sum(e for _, e in timed)


def run_stage(stage: Stage, state: dict[str, Any], layout: Layout) -> None:
    """Run one stage and record its wall time in ``state["done"]``. A stage stopped part-way (a signal, a
    crash, a dead server) keeps the time it ran in ``state["partial"]``, and the rerun that finishes it adds
    that in: a run resumed across sessions still reports what each stage cost (``runs`` says in how many)."""
    partial: dict[str, Any] = state.setdefault("partial", {})
    before = partial.get(stage.name, {"wall_s": 0.0, "runs": 0})
    s0 = time.monotonic()
    try:
        stage.run()
    except BaseException:
        partial[stage.name] = {"wall_s": round(before["wall_s"] + time.monotonic() - s0, 1),
                               "runs": before["runs"] + 1}
        save_state(layout, state)
        raise
    partial.pop(stage.name, None)
    state["done"][stage.name] = {"wall_s": round(before["wall_s"] + time.monotonic() - s0, 1),
                                 "runs": before["runs"] + 1,
                                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    save_state(layout, state)


def _fmt(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def plan_text(cfg: QuickstartConfig, out: Path) -> str:
    """What ``run_quickstart`` would do in ``out``, nothing run and nothing written: each stage with its estimated
    minutes (or that an earlier run of the folder did it), the estimated total left, the machine kind it is
    estimated for. A folder holding a run with other settings is the same :class:`ConfigError` the run gives."""
    layout = Layout(Path(out), cfg.source)
    done = load_state(layout, cfg)["done"]
    kind = hardware_kind()
    stages = plan_stages(RunContext(cfg, layout, False, lambda m: None), kind)

    lines = [f"quickstart {cfg.name} (seed {cfg.seed}) -> {layout.out}: {len(stages)} stages, "
             f"{sum(s.name not in done for s in stages)} to run; estimated {_fmt(time_left(stages, done, 0)[0])} on "
             f"{kind} ({describe_cpu()})", ""]
    lines += [f"  {i:>2}. {s.name:<28} " + ("done" if s.name in done else f"~{_fmt(s.estimate_s)}")
              for i, s in enumerate(stages, 1)]
    return "\n".join(lines)


def run_quickstart(cfg: QuickstartConfig, out: Path, *, show_progress: bool = True,
                   log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
                   command: str | None = None) -> Path:
    """Run (or resume) every stage; return the path of ``report.md``. ``command``: the command line that
    reruns it, kept in the state for the report."""
    layout = Layout(Path(out), cfg.source)
    layout.out.mkdir(parents=True, exist_ok=True)
    state = load_state(layout, cfg)
    kind = hardware_kind()
    stages = plan_stages(RunContext(cfg, layout, show_progress, log), kind)
    done: dict[str, Any] = state["done"]
    to_run = [s for s in stages if s.name not in done]

    log(f"quickstart {cfg.name} (seed {cfg.seed}) -> {layout.out}: {len(stages)} stages, {len(to_run)} to run; "
        f"estimated {_fmt(time_left(stages, done, 0)[0])} on {kind} ({describe_cpu()})")
    check_import_paths(cfg)  # before any stage: a missing set is found in seconds, not hours
    t0 = time.monotonic()
    if command:
        state["command"] = command
    save_state(layout, state)
    with stop_signals_as_interrupt():
        for i, stage in enumerate(stages, 1):
            if stage.name in done:
                continue
            left, pace = time_left(stages, done, i - 1)
            eta = (f"about {_fmt(left)} left (estimated)" if pace is None else
                   f"about {_fmt(left * pace)} left at this run's pace ({pace:.2f}x the estimated {_fmt(left)})")
            log(f"\n=== [{i}/{len(stages)}] {stage.name} · elapsed {_fmt(time.monotonic() - t0)} · {eta}")
            run_stage(stage, state, layout)
    total = sum(s.get("wall_s", 0.0) for s in done.values())
    log(f"quickstart: done in {_fmt(time.monotonic() - t0)} (stages in all, across resumes: {_fmt(total)})")
    return layout.out / "report.md"
