"""Faults around the server actune starts (issue #12): secrets, signals and orphans, open LoRA loading.

No vLLM runs here. FakeVLLM is a stand-in for vLLM's API server: it takes the real command-line flags
(hardware.build_argv's, minus the module), records what it was given, starts a stand-in engine process
(a grandchild of actune, as vLLM's engine core is) and answers /health. FAKE_VLLM_MODE=stubborn makes it and
its engine ignore SIGTERM (it notes each one in ``<report>.sigterm``); =loading the same, and it never answers
/health, as vLLM while it loads the model.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from actune.config import ConfigError, load_config
from actune.serve import hardware, server
from actune.serve.config import ServeConfig
from actune.serve.errors import ServeError, ServerStartError

KEY = "sk-fault-test-7f3a9c"

FAKE_VLLM = textwrap.dedent("""
    import http.server, json, os, signal, subprocess, sys, time
    report, flags = sys.argv[1], sys.argv[2:]
    mode = os.environ.get("FAKE_VLLM_MODE", "serve")
    if mode in ("stubborn", "loading"):
        def noted(*_):
            with open(report + ".sigterm", "a") as f:
                f.write(f"{time.time()}\\n")
        signal.signal(signal.SIGTERM, noted)
    key = os.environ.get("VLLM_API_KEY")
    if mode == "crash":
        # vLLM may print what it was given: the error actune shows must not carry the key on.
        print(f"ValueError: refusing key {key}", flush=True)
        sys.exit(3)
    engine = subprocess.Popen([sys.executable, "-c",
        "import signal, sys, time\\n"
        "if sys.argv[1] != 'serve': signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n"
        "time.sleep(300)", mode])
    with open(report + ".tmp", "w") as f:
        json.dump({"argv": sys.argv, "key": key, "server": os.getpid(), "engine": engine.pid}, f)
    os.replace(report + ".tmp", report)
    if mode == "loading":
        time.sleep(300)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404); self.end_headers()
        def log_message(self, *a): pass
    http.server.HTTPServer(("127.0.0.1", int(flags[flags.index("--port") + 1])), H).serve_forever()
""")

# Installs FakeVLLM in place of vLLM in the child scripts (the fixture does the same in this process).
PATCH = textwrap.dedent("""
    import sys
    from actune.serve import hardware, server

    def use_fake_vllm(fake, report):
        server.require_vllm = lambda: None
        server.build_argv = lambda cfg, model, device: [
            sys.executable, fake, report, *hardware.build_argv(cfg, model, device)[3:]]
""")


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """ServeConfig for FakeVLLM; ``fake.report`` is what FakeVLLM recorded once it started."""
    script, report = tmp_path / "fake_vllm.py", tmp_path / "report.json"
    script.write_text(FAKE_VLLM)
    monkeypatch.setattr(server, "require_vllm", lambda: None)
    monkeypatch.setattr(server, "build_argv", lambda cfg, model, device: [
        sys.executable, str(script), str(report), *hardware.build_argv(cfg, model, device)[3:]])
    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")

    class Fake:
        def __init__(self):
            self.script, self.report_path, self.model = script, report, tmp_path / "model"

        def cfg(self, **kw) -> ServeConfig:
            return ServeConfig(model=str(self.model), port=server.free_port(), startup_timeout_s=60, device="cpu",
                               **kw)

        @property
        def report(self) -> dict:
            return json.loads(report.read_text())

        def started(self, timeout_s: float = 30) -> dict:
            """The report, once FakeVLLM has written it (it does not answer /health when loading)."""
            deadline = time.monotonic() + timeout_s
            while not report.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            return self.report

        def sigterms(self) -> list[float]:
            """When FakeVLLM (stubborn or loading) got SIGTERM, as time.time() values."""
            path = report.with_name(report.name + ".sigterm")
            return [float(t) for t in path.read_text().split()] if path.exists() else []

    return Fake()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_all_gone(pids: list[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return [p for p in pids if _running(p)]


def _kill_group(pgid: int) -> None:
    # Clean-up after a failed assertion: the group is one this test started.
    if server.group_members(pgid):
        os.killpg(pgid, signal.SIGKILL)


# -- secrets ------------------------------------------------------------------------------------------------

def test_api_key_goes_to_vllm_in_its_environment_never_its_command_line_or_log(fake, tmp_path):
    log = tmp_path / "server.log"
    with server.vllm_server(fake.cfg(api_key=KEY), log_path=log) as handle:
        report = fake.report
        assert report["key"] == KEY  # vLLM reads VLLM_API_KEY when --api-key is absent
        assert "--api-key" not in report["argv"] and KEY not in " ".join(report["argv"])
        assert "--port" in report["argv"] and "--enable-prompt-tokens-details" in report["argv"]  # real flags
        assert "--api-key" not in handle.argv and KEY not in " ".join(handle.argv)
        members = server.group_members(handle.pid)
        assert len(members) == 3 and all(KEY not in _cmdline(pid) for pid in members)  # what ps shows
        assert handle.api_key == KEY and KEY not in repr(handle)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert text.startswith("$ ") and "--port" in text and KEY not in text


def test_api_key_in_extra_args_is_moved_to_the_environment_too(fake):
    with server.vllm_server(fake.cfg(extra_args=[f"--api-key={KEY}", "--max-num-seqs", "4"])) as handle:
        assert fake.report["key"] == KEY
        assert KEY not in " ".join(fake.report["argv"]) and handle.api_key == KEY
        assert fake.report["argv"][-2:] == ["--max-num-seqs", "4"]


def test_api_key_flags_are_taken_out_whatever_their_form():
    argv = ["py", "-m", "x", "--port", "1", "--api-key", "-dash-first", "--seed", "0", f"--api-key={KEY}"]
    with pytest.raises(ServeError) as e:
        server._without_api_key(argv)
    assert "2 different API keys" in str(e.value) and KEY not in str(e.value) and "-dash-first" not in str(e.value)
    assert server._without_api_key(["a", "--api-key", KEY, "--seed", "0", "--api-key", KEY]) == (["a", "--seed", "0"], KEY)
    with pytest.raises(ServeError):  # vLLM's --api-key takes several values; VLLM_API_KEY holds one
        server._without_api_key(["a", "--api-key", KEY, "second"])
    assert server._without_api_key(["a", "--api-key", "-k", "--seed", "0"]) == (["a", "--seed", "0"], "-k")
    assert server._without_api_key(["a", "--seed", "0"]) == (["a", "--seed", "0"], None)
    # the spellings vLLM's parser takes for the same flag (underscores, an argparse prefix)
    for form in (["--api_key", KEY], [f"--api_key={KEY}"], ["--api-ke", KEY], [f"--api-k={KEY}"]):
        assert server._without_api_key(["a", *form, "--seed", "0"]) == (["a", "--seed", "0"], KEY), form
    assert server._without_api_key(["a", "--api-server-count", "1"]) == (["a", "--api-server-count", "1"], None)


def test_an_older_log_is_made_private_when_appended_to(fake, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("earlier run\n")
    log.chmod(0o644)
    with server.vllm_server(fake.cfg(), log_path=log):
        pass
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and log.read_text().startswith("earlier run\n$ ")


def test_start_failure_and_log_tail_mask_the_key(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_MODE", "crash")
    log = tmp_path / "server.log"
    with pytest.raises(ServerStartError) as e:
        with server.vllm_server(fake.cfg(api_key=KEY), log_path=log):
            pass
    msg = str(e.value)
    assert "exited with code 3 while starting" in msg and "Cause: ValueError: refusing key ***" in msg
    assert KEY not in msg
    assert KEY in log.read_text()  # the log (0600) keeps what vLLM printed; only what actune shows is masked
    assert "refusing key ***" in "\n".join(server.log_tail(log, secret=KEY))


@pytest.mark.parametrize("source", ["override", "yaml-list", "assignment"])
def test_config_error_for_a_bad_api_key_does_not_show_it(tmp_path, source):
    secret = "918273645546372819"  # unquoted digits: YAML reads an int, which is not a valid key
    if source == "override":
        with pytest.raises(ConfigError) as e:
            load_config(ServeConfig, None, [f"api_key={secret}"])
    elif source == "yaml-list":
        path = tmp_path / "serve.yaml"
        path.write_text(f"api_key: [{secret}]\n")
        with pytest.raises(ConfigError) as e:
            load_config(ServeConfig, path)
    else:
        cfg = ServeConfig()
        with pytest.raises(ValueError) as e:
            cfg.api_key = int(secret)
    assert "api_key" in str(e.value) and "valid string" in str(e.value)  # the key named, its value not
    assert secret not in str(e.value)
    assert "sk-abc" not in repr(ServeConfig(api_key="sk-abc"))


# -- open run-time LoRA loading -------------------------------------------------------------------------------

def test_runtime_lora_without_a_key_is_warned_about(fake, caplog):
    with caplog.at_level(logging.WARNING, logger="actune.serve.server"):
        with server.vllm_server(fake.cfg(enable_lora=True)):
            pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "LoRA adapters at run time" in warnings[0] and "api_key" in warnings[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="actune.serve.server"):
        with server.vllm_server(fake.cfg(enable_lora=True, api_key=KEY)):
            pass
        with server.vllm_server(fake.cfg()):
            pass
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


# -- signals and orphans --------------------------------------------------------------------------------------

# Starts a server (and waits until it is ready unless mode is "loading"), prints its group and sleeps, to be
# SIGKILLed. A sixth argument replaces GUARD_GRACE_S.
STARTER = PATCH + textwrap.dedent("""
    import json, threading, time
    from actune.serve.config import ServeConfig
    fake, report, model, mode = sys.argv[1:5]
    use_fake_vllm(fake, report)
    if len(sys.argv) > 5:
        server.GUARD_GRACE_S = float(sys.argv[5])

    def start():
        handle = server.start_server(ServeConfig(model=model, port=server.free_port(), device="cpu"))
        if mode != "loading":
            server.wait_until_healthy(handle, 60)
        print(json.dumps({"pgid": handle.pid}), flush=True)

    if mode == "thread":  # stages may start a server from a worker thread
        worker = threading.Thread(target=start)
        worker.start()
        worker.join()
    else:
        start()
    time.sleep(300)
""")


def _starter(fake, tmp_path, mode: str, fake_mode: str, *grace: float) -> subprocess.Popen:
    starter = tmp_path / "starter.py"
    starter.write_text(STARTER)
    return subprocess.Popen([sys.executable, str(starter), str(fake.script), str(fake.report_path),
                             str(fake.model), mode, *map(str, grace)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "FAKE_VLLM_MODE": fake_mode})


STOP_MARGIN_S = 4.0
"""Allowed beyond a grace for a stop to be seen: the guard looks at its pipe every 0.5 s, and the 2 cores
may be busy."""


def _sigkill_starter(proc: subprocess.Popen, fake, grace_s: float) -> tuple[float, float]:
    """SIGKILL the starter once its server runs; when it was killed and when the server's last process was gone
    (time.time()), asserting that none outlived it by more than ``grace_s`` + 15 s."""
    pgid = None
    try:
        pgid = json.loads(proc.stdout.readline())["pgid"]
        report = fake.started()
        pids = server.group_members(pgid)
        assert {report["server"], report["engine"]} <= set(pids)
        proc.kill()
        killed = time.time()
        proc.wait(timeout=10)
        assert _wait_all_gone(pids, timeout_s=grace_s + 15) == [], "server processes outlived a SIGKILLed actune"
        return killed, time.time()
    finally:
        proc.kill()
        if pgid is not None:
            _kill_group(pgid)


@pytest.mark.parametrize("mode", ["main", "thread"])
def test_sigkill_of_actune_leaves_no_server_process(fake, tmp_path, mode):
    _sigkill_starter(_starter(fake, tmp_path, mode, "serve"), fake, 0)


# vLLM ignores SIGTERM while it loads the model: the guard SIGKILLs a server that never became ready after the
# short STARTUP_GRACE_S (GUARD_GRACE_S as shipped, 20 s), and gives a ready one SIGTERM and the whole
# GUARD_GRACE_S (5 s here, still longer than STARTUP_GRACE_S) to stop in order first. FakeVLLM, loading or
# stubborn, ignores SIGTERM and notes when it came.
@pytest.mark.parametrize("mode", ["loading", "ready"])
def test_the_guard_kills_a_starting_server_soon_and_gives_a_ready_one_the_full_grace(fake, tmp_path, mode):
    if mode == "loading":
        grace = server.STARTUP_GRACE_S
        assert server.GUARD_GRACE_S > grace + STOP_MARGIN_S  # so only the short grace can pass the test
        proc = _starter(fake, tmp_path, "loading", "loading")
    else:
        grace = 5.0
        assert grace - 0.5 > server.STARTUP_GRACE_S  # so only the full grace can pass the test
        proc = _starter(fake, tmp_path, "main", "stubborn", grace)
    killed, gone = _sigkill_starter(proc, fake, grace)
    sigterms = fake.sigterms()
    assert sigterms, "the server was killed without a SIGTERM first"
    assert gone - sigterms[0] >= grace - 0.5, f"killed {gone - sigterms[0]:.1f} s after SIGTERM"
    assert gone - killed <= grace + STOP_MARGIN_S, f"gone {gone - killed:.1f} s after actune"


@pytest.mark.parametrize("mode", ["loading", "stubborn"])
def test_stop_server_gives_a_starting_server_the_short_grace_and_a_ready_one_its_timeout(fake, monkeypatch, mode):
    monkeypatch.setenv("FAKE_VLLM_MODE", mode)
    handle = server.start_server(fake.cfg())
    try:
        if mode == "stubborn":
            server.wait_until_healthy(handle, 60)
        report = fake.started()
        assert {report["server"], report["engine"]} <= set(server.group_members(handle.pid))
        started = time.monotonic()
        server.stop_server(handle, timeout_s=6.0)
        took = time.monotonic() - started
    finally:
        _kill_group(handle.pid)
    expected = server.STARTUP_GRACE_S if mode == "loading" else 6.0
    assert fake.sigterms() and expected - 0.5 <= took <= expected + STOP_MARGIN_S, took
    assert server.group_members(handle.pid) == []


CLI = PATCH + textwrap.dedent("""
    import argparse
    from actune.cli import serve
    use_fake_vllm(sys.argv[1], sys.argv[2])
    parser = argparse.ArgumentParser()
    serve.register(parser.add_subparsers())
    args = parser.parse_args(["serve", *sys.argv[3:]])
    sys.exit(args.func(args))
""")


def _sighup_default():
    # Under `nohup make test` SIGHUP is ignored, children inherit that, and stop_signals rightly leaves an
    # ignored SIGHUP alone: the commands under test need it live to be tested. Set in the child only, so a
    # hangup still cannot reach pytest itself.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _as_a_background_job():
    # What a shell does to a background job of a script (`actune serve &`): SIGINT and SIGQUIT ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _sighup_default()


def _serve_cli(fake, tmp_path, env: dict[str, str]) -> subprocess.Popen:
    cli = tmp_path / "cli.py"
    cli.write_text(CLI)
    return subprocess.Popen(
        [sys.executable, str(cli), str(fake.script), str(fake.report_path), f"log_dir={tmp_path}",
         "--model", str(fake.model), "--port", str(server.free_port())],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True, preexec_fn=_as_a_background_job,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=["sigint", "sigterm", "sighup", "sigkill"])
def test_signal_to_the_serve_process_alone_stops_the_whole_server(fake, tmp_path, sig):
    proc = _serve_cli(fake, tmp_path, dict(os.environ))
    pgid = None
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "ready at" in line:
                break
        match = re.search(r"pid (\d+)", lines[-1] if lines else "")
        assert match, "".join(lines)
        pgid = int(match.group(1))
        pids = server.group_members(pgid)
        assert {fake.report["server"], fake.report["engine"]} <= set(pids)
        os.kill(proc.pid, sig)  # the process only, not its group: as a supervisor or `kill PID` does
        out = proc.communicate(timeout=60)[0]
        if sig == signal.SIGKILL:
            assert proc.returncode == -signal.SIGKILL
        else:
            assert proc.returncode == 0 and "actune serve: stopped" in out, out
        assert _wait_all_gone(pids, timeout_s=15) == []
    finally:
        proc.kill()
        if pgid is not None:
            _kill_group(pgid)


# A stage command (actune bootstrap|eval|export|train) whose stage holds a server: SIGTERM to the command's
# process alone must stop the server and exit "interrupted" (130), as Ctrl-C does.
STAGE = PATCH + textwrap.dedent("""
    import argparse, json, time
    import actune.cli as cli_main
    from actune.cli.stage_command import register_stage
    from actune.serve.config import ServeConfig
    use_fake_vllm(sys.argv[1], sys.argv[2])

    def run(config, args):
        with server.vllm_server(ServeConfig(model=sys.argv[3], port=server.free_port(), device="cpu")) as h:
            print(json.dumps({"pgid": h.pid}), flush=True)
            time.sleep(300)

    original = cli_main.build_parser
    def build_parser():
        parser = original()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        register_stage(sub, "holdserver", doc="", help="", config_help="", example="", run=run,
                       qualify=lambda o: o, errors=[])
        return parser
    cli_main.build_parser = build_parser
    sys.exit(cli_main.main(["holdserver", sys.argv[4]]))
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
def test_stop_signal_to_a_stage_command_stops_its_server_and_exits_interrupted(fake, tmp_path, sig):
    script, config = tmp_path / "stage.py", tmp_path / "run.yaml"
    script.write_text(STAGE)
    config.write_text("name: t\n")
    proc = subprocess.Popen([sys.executable, str(script), str(fake.script), str(fake.report_path), str(fake.model),
                             str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_sighup_default)
    pgid = None
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        pgid = json.loads(line)["pgid"]
        pids = server.group_members(pgid)
        assert {fake.report["server"], fake.report["engine"]} <= set(pids)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "actune: interrupted" in err, err
        assert _wait_all_gone(pids, timeout_s=15) == []
    finally:
        proc.kill()
        if pgid is not None:
            _kill_group(pgid)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_signal_to_the_serve_process_while_vllm_loads_stops_it_within_the_short_grace(fake, tmp_path, sig):
    proc = _serve_cli(fake, tmp_path, {**os.environ, "FAKE_VLLM_MODE": "loading"})
    pgid = None
    try:
        report = fake.started()
        pgid = os.getpgid(report["server"])
        pids = server.group_members(pgid)
        assert {report["server"], report["engine"]} <= set(pids)
        os.kill(proc.pid, sig)
        started = time.monotonic()
        out = proc.communicate(timeout=60)[0]
        took = time.monotonic() - started
        assert proc.returncode == 0 and "actune serve: stopped" in out, out
        assert _wait_all_gone(pids, timeout_s=1) == [] and fake.sigterms()
        assert took <= server.STARTUP_GRACE_S + STOP_MARGIN_S, f"stopped after {took:.1f} s"
    finally:
        proc.kill()
        if pgid is not None:
            _kill_group(pgid)
