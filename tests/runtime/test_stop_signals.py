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
