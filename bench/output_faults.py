"""SIGKILL and a full disk in the middle of the commands that write an output whole (issue #47): ``actune world
generate`` (a folder of five files), ``actune export`` (a ``datasets`` folder) and ``actune export --format openai``
(a JSONL file and its card). ``bench/faults.py --stages world export`` runs it beside the resumable stages' rows.

    .venv/bin/python bench/output_faults.py                    # 20 kill points and 20 disk caps an output
    .venv/bin/python bench/output_faults.py --points 3 --json runs/output-faults.json

For each output, in a child process, at a scale where writing takes most of a second or more:

1. the **old** output: the same command with other settings (another world seed; half the store), saved;
2. the **reference**: the command under test, unfaulted, over the old output: the **new** output;
3. per seeded fault, from the old output again: the command is **killed** (SIGKILL at a seeded time between the
   moment the reference began to write, its lock or temp beside the output, and its end) or runs under a **full
   disk** (``RLIMIT_FSIZE`` at a seeded byte count: a write past it fails with "File too large", as on a full
   disk); then the output is read as every actune reader reads it
   (after ``recover_folder``, which puts back a folder a crashed swap left aside):

   - **old** or **new**: the whole old or the whole new output, byte for byte (a JSON file's ``provenance``
     aside: it names the time);
   - **lost**: no output where the old one was; **mixed**: anything else (files of both, a cut file);

   then the command is **rerun** to completion: its output must be the new one, and nothing may be left beside
   it (**leftover**: temp folders and files, a swapped-out folder, a lock).

Prints one table and writes the figures as JSON; exits 1 when anything is lost, mixed or left over, or a rerun
does not write the new output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.records.atomic_write import fresh_work_folder
from actune.runtime.stop_signals import run_script

REPO = Path(__file__).resolve().parents[1]
ACTUNE = [sys.executable, "-m", "actune"]


@dataclass
class Output:
    """An output written whole, the command that writes its old form and the command under test."""

    name: str
    path: Path
    old: list[str]
    new: list[str]
    companions: tuple[str, ...] = ()
    """Files written beside ``path`` as part of it (a JSONL export's card)."""

    def files(self) -> list[Path]:
        return [self.path, *(self.path.parent / c for c in self.companions)]


def fingerprint(out: Output) -> dict[str, str] | None:
    """{relative path: sha256} of the output's files (a JSON file without its ``provenance``); None when it is not
    there at all."""
    found: dict[str, str] = {}
    for top in out.files():
        if not top.exists():
            continue
        paths = sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else [top]
        for p in paths:
            data = p.read_bytes()
            if p.suffix == ".json":
                try:
                    doc = json.loads(data)
                    if isinstance(doc, dict):
                        doc.pop("provenance", None)
                    data = json.dumps(doc, sort_keys=True).encode()
                except ValueError:
                    pass
            found[str(p.relative_to(top.parent))] = hashlib.sha256(data).hexdigest()
    return found or None


def leftovers(out: Output, inputs: set[str]) -> list[str]:
    """Entries beside the output that are neither it, its companions nor an input."""
    mine = {p.name for p in out.files()}
    return sorted(e.name for e in out.path.parent.iterdir() if e.name not in mine | inputs)


def writing(out: Output) -> bool:
    """Whether the command has begun to write ``out``: its lock, temp folder or temp file is beside it."""
    prefix = f".{out.path.name}."
    return any(e.name.startswith(prefix) for e in out.path.parent.iterdir()) if out.path.parent.is_dir() else False


def _run(cmd: list[str], log: Path, *, kill_after: float | None = None, fsize: int | None = None,
         watch: Callable[[], bool] | None = None, timeout: float = 600) -> tuple[int, float, float | None]:
    """(exit status, wall seconds, seconds until ``watch()`` first held) of ``cmd``; killed with SIGKILL after
    ``kill_after`` s; with a file-size cap."""
    def cap() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails (EFBIG) instead of killing

    start, seen = time.monotonic(), None
    with log.open("ab") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO, preexec_fn=cap)
        try:
            while proc.poll() is None:
                now = time.monotonic() - start
                if seen is None and watch is not None and watch():
                    seen = now
                if kill_after is not None and now >= kill_after:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    break
                if now > timeout:
                    raise TimeoutError(f"{cmd} ran past {timeout} s")
                time.sleep(0.005)
        finally:  # a timeout, or the bench stopped (run_script): the child goes with it
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return proc.returncode, time.monotonic() - start, seen


def _restore(out: Output, saved: Path) -> None:
    """The old output back, and nothing else beside it but the inputs."""
    for p in out.files():
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    for p in saved.iterdir():
        (shutil.copytree if p.is_dir() else shutil.copy2)(p, out.path.parent / p.name)


def _state(out: Output, old: dict[str, str] | None, new: dict[str, str] | None) -> str:
    from actune.records.atomic_write import recover_folder

    recover_folder(out.path)  # what every reader of an output does first
    got = fingerprint(out)
    if got == new:
        return "new"
    if got == old:
        return "old"
    return "lost" if got is None else "mixed"


def bench_output(out: Output, inputs: set[str], work: Path, seed: int, points: int) -> dict[str, Any]:
    """The figures of one output (the module docstring)."""
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    saved = work / f"old-{out.name}"
    problems: list[str] = []
    rc, _, _ = _run(out.old, logs / f"{out.name}-old.log")
    old = fingerprint(out)
    if rc != 0 or old is None:
        return {"problems": [f"the old output's command failed ({rc})"], "faults": []}
    saved.mkdir(parents=True)
    for p in out.files():
        if p.exists():
            (shutil.copytree if p.is_dir() else shutil.copy2)(p, saved / p.name)
    rc, wall, began = _run(out.new, logs / f"{out.name}-reference.log", watch=lambda: writing(out))
    new = fingerprint(out)
    if rc != 0 or new is None or new == old:
        return {"problems": [f"the reference run failed ({rc}) or wrote the old output"], "faults": []}
    size = max(p.stat().st_size for top in out.files() for p in ([top] if top.is_file() else top.rglob("*"))
               if p.is_file())
    rng = random.Random(f"{seed}:{out.name}")
    # kills while the output is being written (from when its lock or temp first appeared to the end), where a
    # kill can hurt: before it, a killed command has touched nothing
    began = began if began is not None else 0.0
    faults = [("kill", round(rng.uniform(began, wall), 3)) for _ in range(points)]
    faults += [("disk", rng.randint(1, size)) for _ in range(points)]
    rows = []
    for kind, at in faults:
        _restore(out, saved)
        log = logs / f"{out.name}-{kind}-{at}.log"
        rc, _, _ = _run(out.new, log, kill_after=at if kind == "kill" else None,
                        fsize=at if kind == "disk" else None)
        state = _state(out, old, new)
        rerun_rc, _, _ = _run(out.new, log)
        rerun_ok = rerun_rc == 0 and fingerprint(out) == new
        left = leftovers(out, inputs)
        rows.append({"fault": kind, "at": at, "exit": rc, "state": state, "rerun_ok": rerun_ok, "leftover": left})
        if state in ("lost", "mixed") or not rerun_ok or left:
            problems.append(f"{kind} at {at}: {state}, rerun {'ok' if rerun_ok else 'wrong'}, leftover {left}")
    return {"wall_s": round(wall, 2), "writing_from_s": round(began, 2), "faults": rows, "problems": problems}


def totals(result: dict[str, Any]) -> dict[str, int]:
    rows = result["faults"]
    return {"kills": sum(r["fault"] == "kill" for r in rows), "disk": sum(r["fault"] == "disk" for r in rows),
            **{s: sum(r["state"] == s for r in rows) for s in ("old", "new", "lost", "mixed")},
            "leftover": sum(bool(r["leftover"]) for r in rows), "rerun_wrong": sum(not r["rerun_ok"] for r in rows)}


def format_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| output | faults (kill, full disk) | old kept | new whole | lost | mixed | leftover after rerun | "
             "rerun not the new output |", "|---|---|---|---|---|---|---|---|"]
    for name, result in results.items():
        t = totals(result)
        lines.append(f"| {name} | {t['kills'] + t['disk']} ({t['kills']}, {t['disk']}) | {t['old']} | {t['new']} | "
                     f"{t['lost']} | {t['mixed']} | {t['leftover']} | {t['rerun_wrong']} |")
    return "\n".join(lines)


def outputs(work: Path, seed: int) -> tuple[list[Output], set[str]]:
    """The three outputs and their inputs (a world, and a store of its gold paths), made in ``work``."""
    from actune.bootstrap.gold_paths import write_gold_paths
    from actune.envs.config import EnvConfig
    from actune.tasks.config import TaskConfig
    from actune.tasks.loading import load_tasks
    from actune.world import WorldConfig, write_world

    sizes = ["n_people=2000", "n_companies=1000", "n_cities=200", "n_train=1500", "n_test=300"]
    wpath = work / "world-out" / "world"
    world = Output("world generate", wpath, [*ACTUNE, "world", "generate", "--out", str(wpath), f"seed={seed + 1}",
                                             *sizes],
                   [*ACTUNE, "world", "generate", "--out", str(wpath), f"seed={seed}", *sizes])
    src = work / "inputs"
    write_world(WorldConfig(seed=seed, n_people=300, n_companies=150, n_cities=40, n_train=600, n_dev=10,
                            n_test=10), src / "world")
    tasks = load_tasks(TaskConfig(format="custom", path=str(src / "world" / "train.jsonl"), split="train"))
    env = EnvConfig(name="wiki", corpus=str(src / "world" / "corpus.jsonl"), index_dir=str(src / "index"))
    write_gold_paths(tasks, str(src / "store.jsonl"), env)
    write_gold_paths(tasks[: len(tasks) // 2], str(src / "half.jsonl"), env)  # the old outputs' store
    (src / "run.yaml").write_text("name: faults\n")

    def export(store: str, *args: str) -> list[str]:
        return [*ACTUNE, "export", str(src / "run.yaml"), f"store={src / store}", *args]

    ds = work / "export-out" / "ds"
    jsonl = work / "file-out" / "ds.openai.jsonl"
    folder = Output("export (datasets folder)", ds, export("half.jsonl", f"dataset={ds}"),
                    export("store.jsonl", f"dataset={ds}"))
    file = Output("export --format openai", jsonl,
                  export("half.jsonl", f"dataset={ds}", "--format", "openai", "--out", str(jsonl)),
                  export("store.jsonl", f"dataset={ds}", "--format", "openai", "--out", str(jsonl)),
                  companions=("ds.openai.README.md",))
    return [world, folder, file], set()


def bench(work: Path, seed: int, points: int, only: Callable[[str], bool] = lambda name: True) -> dict[str, Any]:
    """Every output's figures, by name."""
    fresh_work_folder(work)
    outs, inputs = outputs(work, seed)
    return {o.name: bench_output(o, inputs, work, seed, points) for o in outs if only(o.name)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench-output-faults",
                    help="working folder (emptied when an earlier bench made it; any other is refused)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--points", type=int, default=20, help="kill points and disk caps, each, an output")
    ap.add_argument("--json", help="write the figures here (default <out>/output-faults.json)")
    args = ap.parse_args(argv)
    work = Path(args.out).resolve()
    results = bench(work, args.seed, args.points)
    json_path = Path(args.json) if args.json else work / "output-faults.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps({"seed": args.seed, "points": args.points, "outputs": results}, indent=2) + "\n")
    print(format_table(results))
    failed = {name: r["problems"] for name, r in results.items() if r["problems"]}
    for name, problems in failed.items():
        print(f"{name}: FAILED: " + "; ".join(problems[:5]))
    print(f"\nfigures: {json_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    run_script(main)
