import os
import signal
from pathlib import Path

import pytest

from actune.runtime.stop_signals import stop_signals_as_interrupt


@pytest.fixture
def sighup_not_ignored():
    """SIGHUP at its default for the test: under ``nohup make test`` it is ignored, which
    stop_signals_as_interrupt rightly leaves alone, and the test needs it live. Brief: a hangup in that window
    stops pytest as it would without nohup."""
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, old)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_raises_keyboard_interrupt_once_and_handlers_come_back(sig, sighup_not_ignored):
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    unwound = []
    with pytest.raises(KeyboardInterrupt):
        with stop_signals_as_interrupt():
            try:
                os.kill(os.getpid(), sig)
                signal.sigtimedwait([], 0.01) if hasattr(signal, "sigtimedwait") else None
                pytest.fail("the signal did not interrupt")
            finally:
                os.kill(os.getpid(), signal.SIGTERM)  # a second signal while unwinding is ignored
                unwound.append(True)
    assert unwound == [True]
    assert {s: signal.getsignal(s) for s in before} == before


def test_sighup_ignored_by_nohup_stays_ignored():
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals_as_interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
    finally:
        signal.signal(signal.SIGHUP, old)


def test_every_command_stopped_by_sigterm_exits_130(tmp_path):
    """Commands without a stage of their own (here `config show`, blocked reading a FIFO that no one writes) exit
    130 on SIGTERM, as the stages do, not Python's 143: the CLI's main holds the handlers for every command."""
    argv = ["config", "show"]
    import subprocess
    import sys
    import time

    fifo = tmp_path / "in.yaml"
    os.mkfifo(fifo)
    extra = [str(fifo)]
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from actune.cli import main; sys.exit(main())",
                             *argv, *extra], stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    wchan = Path(f"/proc/{proc.pid}/wchan")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:  # until it blocks opening the FIFO, imports done
        if wchan.read_text() in ("wait_for_partner", "fifo_open"):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err


def test_a_script_stopped_by_sigterm_stops_its_child_and_exits_130(tmp_path):
    """What the bench/ and scripts/ programs run under (``run_script``): a SIGTERM unwinds main, the child it waits
    on is stopped with it, and the exit is 130 with one line; before, the script died at once and its child ran on."""
    import subprocess
    import sys
    import time

    child_pid = tmp_path / "child.pid"
    script = tmp_path / "bench_like.py"
    child = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    script.write_text(
        "import subprocess, sys\n"
        "from actune.runtime.stop_signals import run_script\n"
        "def main():\n"
        f"    subprocess.run([sys.executable, '-c', {child!r}, sys.argv[1]])\n"
        "    return 0\n"
        "run_script(main)\n")
    proc = subprocess.Popen([sys.executable, str(script), str(child_pid)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (child_pid.exists() and child_pid.read_text()) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.05)
    pid = int(child_pid.read_text())
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().endswith("bench_like.py: interrupted"), err
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        state = (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() or ["?"])[0]
        if state == "Z":  # reaped by init once its parent is gone
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or state == "Z", "the script's child outlived it"


def test_every_bench_and_script_program_runs_under_run_script():
    import ast

    repo = Path(__file__).resolve().parents[2]
    # train_gpu.py runs on a GPU machine where actune may not be installed, and starts no child
    programs = [p for p in sorted([*repo.glob("bench/*.py"), *repo.glob("scripts/*.py")]) if p.name != "train_gpu.py"]
    missing = []
    for path in programs:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mains = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        if mains and "run_script(" not in ast.unparse(mains[0]):
            missing.append(path.name)
    assert len(programs) >= 15 and missing == []
