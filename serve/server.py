"""Start vLLM's OpenAI-compatible server as a child process, wait for it, and stop it leaving nothing behind.

The server runs in its own process group (a new session), so stopping it signals the API server and
every engine process it spawned at once, and a Ctrl-C in the terminal reaches only actune, which then
stops the server once, cleanly. The group is led by a small guard process (``_GUARD``) that ends the
whole group when actune dies without stopping it. An API key reaches vLLM through its environment
(``VLLM_API_KEY``), never its command line. Usage::

    with vllm_server(ServeConfig(model="smollm2-135m", enable_lora=True, port=8011)) as server:
        print(server.base_url)          # http://127.0.0.1:8011/v1

The caller decides about exclusivity: tests take actune.serve.lock themselves; users may run several.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import httpx

from actune.config import MASK, actune_home, api_key_flag
from actune.runtime.model_files import ModelError, prepare_model
from actune.serve.adapters import validate_adapter_dir
from actune.serve.config import ServeConfig
from actune.serve.errors import PortInUseError, ServeError, ServerRestartLimitError, ServerStartError
from actune.serve.hardware import Device, build_argv, build_env, cache_root, detect_device, require_vllm

LOG_TAIL_LINES = 30
API_KEY_ENV = "VLLM_API_KEY"
"""vLLM's OpenAI server reads its API key from this variable when no --api-key is given."""
HEALTH_TIMEOUT_S = 10.0
"""How long a live server may take to answer /health before a stage takes it for dead (and restarts it)."""
GUARD_GRACE_S = 20.0
"""How long the guard lets a ready server's processes stop after SIGTERM before it kills them (vLLM then shuts
down in order by itself)."""
STARTUP_GRACE_S = 3.0
"""The same for a server that has not yet answered /health, in the guard and in :func:`stop_server`: vLLM does
not act on SIGTERM while it loads the model (measured: it outlived the guard's whole 20 s), so a longer wait
only delays the SIGKILL, and a server killed before it served anything loses nothing."""

log = logging.getLogger(__name__)


@dataclass
class ServerHandle:
    """A running (or starting) vLLM server."""

    base_url: str
    """OpenAI base URL, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str
    """Served model name to put in requests."""
    model_path: str
    """Local folder (or hub id) vLLM loaded."""
    log_path: Path
    pid: int
    """Process id of the guard that runs the API server; also the server's process-group id."""
    api_key: str | None = field(default=None, repr=False)
    device: Device = "cpu"
    argv: list[str] = field(default_factory=list)
    """The vLLM command (without the API key, which is in the server's environment)."""
    process: subprocess.Popen | None = field(default=None, repr=False)
    """The guard process."""
    lifeline: int | None = field(default=None, repr=False)
    """Write end of the pipe the guard watches: it reads EOF when actune is gone, a byte when the server is ready."""
    ready: bool = False
    """Whether /health has answered 200 (:func:`wait_until_healthy`); until then a stop is short."""

    @property
    def root_url(self) -> str:
        """Server root (for /health and /metrics)."""
        return self.base_url.removesuffix("/v1")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        stop_server(self, timeout_s)


def resolve_model(name: str) -> str:
    """Local folder for ``name`` (known name, hub id or folder) via actune.runtime.model_files.prepare_model."""
    try:
        return str(prepare_model(name))
    except ModelError as e:
        raise ServeError(f"cannot serve model {name!r}: {e}") from None


def check_port_free(host: str, port: int) -> None:
    """Raise PortInUseError when something already listens on host:port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Same option uvicorn sets, so a port in TIME_WAIT does not count as taken.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            raise PortInUseError(
                f"port {port} on {host} is already in use ({e.strerror}); stop what listens there or pick "
                f"another port (--port / port=...)"
            ) from None


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (for tests and throwaway servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def default_log_path(cfg: ServeConfig) -> Path:
    folder = cfg.log_dir or actune_home() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"vllm-{cfg.port}-{time.strftime('%Y%m%d-%H%M%S')}.log"


def start_server(cfg: ServeConfig, log_path: Path | None = None) -> ServerHandle:
    """Check everything that can be checked first, then launch the server (without waiting for it)."""
    require_vllm()
    for path in cfg.adapters.values():
        validate_adapter_dir(path, max_rank=cfg.max_lora_rank)
    check_port_free(cfg.host, cfg.port)
    device: Device = detect_device() if cfg.device == "auto" else cfg.device
    model_path = resolve_model(cfg.model)
    if cfg.adapters:
        cfg = cfg.model_copy(update={"adapters": {n: str(validate_adapter_dir(p)) for n, p in cfg.adapters.items()}})
    argv, key = _without_api_key(build_argv(cfg, model_path, device))
    env = build_env(cfg, device)
    if key:
        env[API_KEY_ENV] = key
    if env.get("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "").lower() in ("true", "1") and not env.get(API_KEY_ENV):
        log.warning(_open_lora_warning(cfg))
    log_path = Path(log_path) if log_path is not None else default_log_path(cfg)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    read_end, lifeline = os.pipe()
    try:
        with _private_log(log_path) as log_file:
            log_file.write(mask(f"$ {' '.join(argv)}\n", key).encode())
            log_file.flush()
            process = subprocess.Popen(
                [sys.executable, "-c", _GUARD, str(read_end), str(os.getpid()), str(GUARD_GRACE_S),
                 str(STARTUP_GRACE_S), *argv],
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                start_new_session=True, pass_fds=(read_end,),
            )
    except BaseException:
        os.close(lifeline)
        raise
    finally:
        os.close(read_end)
    connect_host = "127.0.0.1" if cfg.host in ("0.0.0.0", "::", "") else cfg.host
    return ServerHandle(
        base_url=f"http://{connect_host}:{cfg.port}/v1", model=cfg.served_name,
        model_path=model_path, log_path=log_path, pid=process.pid, api_key=key, device=device,
        argv=argv, process=process, lifeline=lifeline,
    )


def wait_until_healthy(handle: ServerHandle, timeout_s: float) -> None:
    """Poll /health until it answers 200; raise ServerStartError (with the log's tail) if the server
    exits or the timeout passes (the server is stopped in that case)."""
    deadline = time.monotonic() + timeout_s
    url = f"{handle.root_url}/health"
    while True:
        if not handle.alive():
            code = handle.process.returncode if handle.process else None
            stop_server(handle)
            raise ServerStartError(_start_failure(handle, f"vLLM server exited with code {code} while starting"))
        try:
            if httpx.get(url, timeout=5.0).status_code == 200:
                _mark_ready(handle)
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_server(handle)
            raise ServerStartError(_start_failure(handle, f"vLLM server not healthy after {timeout_s:.0f} s"))
        time.sleep(0.5)


def stop_server(handle: ServerHandle, timeout_s: float = 30.0) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after ``timeout_s`` (at most
    :data:`STARTUP_GRACE_S` for a server that never became ready); wait until no process of the group remains."""
    pgid = handle.pid
    if group_members(pgid):
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + (timeout_s if handle.ready else min(timeout_s, STARTUP_GRACE_S))
    while group_members(pgid) and time.monotonic() < deadline:
        if handle.process is not None:
            handle.process.poll()  # reap the leader so it does not linger as a zombie
        time.sleep(0.2)
    if group_members(pgid):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while group_members(pgid) and time.monotonic() < deadline:
            if handle.process is not None:
                handle.process.poll()
            time.sleep(0.2)
    if handle.process is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            handle.process.wait(timeout=5)
    if handle.lifeline is not None:
        # Only now: the guard reads EOF as "actune died" and would signal the group a second time.
        with contextlib.suppress(OSError):
            os.close(handle.lifeline)
        handle.lifeline = None
    left = group_members(pgid)
    if left:
        raise ServeError(f"vLLM server processes {left} (group {pgid}) survived SIGKILL")
    remove_stale_sockets(cache_root() / "tmp")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp ...
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def remove_stale_sockets(folder: Path) -> list[Path]:
    """Delete the IPC socket files vLLM leaves in its TMPDIR once no process has them bound any more
    (sockets of servers still running are listed in /proc/net/unix and kept)."""
    try:
        bound = {line.split()[-1] for line in Path("/proc/net/unix").read_text().splitlines()[1:]
                 if len(line.split()) >= 8}
    except OSError:
        return []
    removed = []
    for path in folder.glob("*"):
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(path.lstat().st_mode) and str(path) not in bound:
                path.unlink()
                removed.append(path)
    return removed


@contextlib.contextmanager
def vllm_server(cfg: ServeConfig, log_path: Path | None = None) -> Iterator[ServerHandle]:
    """Start a server, wait until it is healthy, yield its handle, and always stop it on exit."""
    handle = start_server(cfg, log_path)
    try:
        wait_until_healthy(handle, cfg.startup_timeout_s)
        yield handle
    finally:
        stop_server(handle)


class StageServer:
    """The server a stage started for its run (:func:`serving`), restarted in place when it dies: at most
    ``cfg.max_restarts`` times, each on the same port, appending to the same log
    (:class:`actune.collect.RestartableServer`, which collection drives)."""

    def __init__(self, cfg: ServeConfig) -> None:
        self.cfg = cfg
        self.handle: ServerHandle | None = None
        self.restarts = 0
        """Restarts so far."""
        self._running: contextlib.ExitStack | None = None

    def start(self) -> ServerHandle:
        """Start the server and wait until it is healthy (:func:`vllm_server`; stopped again if it is not)."""
        with contextlib.ExitStack() as stack:
            handle = stack.enter_context(vllm_server(self.cfg, log_path=self.handle.log_path if self.handle else None))
            self.handle, self._running = handle, stack.pop_all()
        return handle

    def stop(self) -> None:
        """Stop it, leaving no process of it (nothing to do when it is stopped already)."""
        running, self._running = self._running, None
        if running is not None:
            running.close()

    def alive(self) -> bool:
        """Whether its process runs and /health answers 200 within :data:`HEALTH_TIMEOUT_S`."""
        if self.handle is None or not self.handle.alive():
            return False
        try:
            return httpx.get(f"{self.handle.root_url}/health", timeout=HEALTH_TIMEOUT_S).status_code == 200
        except httpx.HTTPError:
            return False

    def restart(self) -> None:
        """Stop what is left of it and start it again (blocking until it is healthy); past ``max_restarts``
        raise :class:`ServerRestartLimitError` and leave it stopped."""
        self.stop()
        if self.restarts >= self.cfg.max_restarts:
            raise ServerRestartLimitError(
                f"the vLLM server on port {self.cfg.port} died after {self.restarts} restart(s) and "
                f"serve.max_restarts is {self.cfg.max_restarts}: not restarting it again (its log: "
                f"{self.handle.log_path if self.handle else '-'})")
        self.restarts += 1
        self.start()


@dataclass
class Serving:
    """What a stage runs on (:func:`serving`)."""

    endpoints: list[str]
    model: str
    """The served model name to put in requests."""
    server: StageServer | None = None
    """The server the stage started (None: ``endpoints`` it was handed, never restarted)."""


@contextlib.contextmanager
def serving(endpoints: list[str], model: str, cfg: ServeConfig) -> Iterator[Serving]:
    """For stages: use ``endpoints`` (and ``model``, the served name) when given; otherwise start a server
    from ``cfg`` (a :class:`StageServer`, restartable) for the stage's duration, stopped on exit."""
    if endpoints:
        yield Serving(list(endpoints), model or cfg.served_name)
        return
    server = StageServer(cfg)
    try:
        handle = server.start()
        yield Serving([handle.base_url], handle.model, server)
    finally:
        server.stop()


@contextlib.contextmanager
def endpoints_or_server(endpoints: list[str], model: str, cfg: ServeConfig) -> Iterator[tuple[list[str], str]]:
    """:func:`serving` as (endpoints, served model name), for callers that restart nothing."""
    with serving(endpoints, model, cfg) as s:
        yield s.endpoints, s.model


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, secret: str | None = None) -> list[str]:
    """The last ``lines`` lines of a server log, with ``secret`` (the API key) masked."""
    try:
        return mask(path.read_text(errors="replace"), secret).splitlines()[-lines:]
    except OSError:
        return []


def mask(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***``."""
    return text.replace(secret, MASK) if secret else text


def _without_api_key(argv: list[str]) -> tuple[list[str], str | None]:
    """``argv`` without its ``--api-key`` flags (from api_key or extra_args), and the key they carried.

    A command line is readable by every local user (ps, /proc/PID/cmdline) and is written to the log;
    the environment of a process is readable only by its owner.
    """
    out, keys, i = [], [], 0
    while i < len(argv):
        arg = argv[i]
        flag, eq, value = arg.partition("=")
        if api_key_flag(flag) and not eq and i + 1 < len(argv):
            # The first value is taken whatever it looks like (a key may start with "-"); vLLM accepts more.
            keys.append(argv[i + 1])
            i += 2
            while i < len(argv) and not argv[i].startswith("-"):
                keys.append(argv[i])
                i += 1
        elif api_key_flag(flag) and eq:
            keys.append(value)
            i += 1
        else:
            out.append(arg)
            i += 1
    distinct = list(dict.fromkeys(k for k in keys if k))
    if len(distinct) > 1:
        raise ServeError(f"{len(distinct)} different API keys given (api_key and --api-key in extra_args); "
                         f"actune passes vLLM one, through {API_KEY_ENV}: keep one")
    return out, (distinct[0] if distinct else None)


def _open_lora_warning(cfg: ServeConfig) -> str:
    who = "any local user" if cfg.host in ("127.0.0.1", "localhost", "::1") else f"any client that reaches {cfg.host}"
    return (f"warning: vLLM on port {cfg.port} allows loading LoRA adapters at run time and has no api_key: {who} can "
            "make it load any adapter folder this account can read. Set api_key (--api-key, serve.api_key) "
            "to require a token.")


@contextlib.contextmanager
def _private_log(path: Path) -> Iterator[BinaryIO]:
    # The log holds the command line and whatever vLLM prints about requests: readable by the owner only,
    # also when appending to an older log that was created 0644.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "ab") as handle:
        yield handle


def _start_failure(handle: ServerHandle, headline: str) -> str:
    tail = log_tail(handle.log_path, secret=handle.api_key)
    cause = next((line.strip() for line in reversed(tail) if "Error" in line or "error:" in line), None)
    parts = [headline + "."]
    if cause:
        parts.append(f"Cause: {cause}")
    parts.append(f"Last lines of {handle.log_path}:")
    parts += ["  " + line for line in tail]
    return "\n".join(parts)


def _mark_ready(handle: ServerHandle) -> None:
    # The guard learns readiness through the pipe it already watches, not a file or its own probe of the
    # port: nothing to create or clean up, no host, port or API key to hand it, no other process on the port
    # taken for ours, and a byte written before actune dies is read before the EOF, so it is never missed.
    # One byte never blocks (the pipe holds 64 KiB and the guard drains it).
    if not handle.ready and handle.lifeline is not None:
        with contextlib.suppress(OSError):
            os.write(handle.lifeline, b"r")
    handle.ready = True


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


# The guard: leader of the server's process group, parent of the API server. PR_SET_PDEATHSIG reaches only
# the process that set it, and vLLM's engine core (a multiprocessing child of the API server) has none, so
# a SIGKILLed actune used to leave the engine running. The guard notices actune going (EOF on the pipe
# whose write end only actune holds, or a new parent pid when a forked child of actune keeps a copy) and
# ends the whole group: SIGTERM, then SIGKILL after the grace (GUARD_GRACE_S once actune has written it
# the ready byte, STARTUP_GRACE_S before). When stop_server signals the group, the guard lets the server
# stop by itself and only kills what outlives the API server. It exits with the API server's code
# (128 + signal when killed), so start failures read as before. Standard library only: it starts in
# milliseconds and imports nothing of actune.
_GUARD = r"""# actune: vLLM server guard
import os, select, signal, subprocess, sys, time
lifeline, parent = int(sys.argv[1]), int(sys.argv[2])
ready_grace, startup_grace = float(sys.argv[3]), float(sys.argv[4])
ready = False
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda *_: None)  # a handler, not SIG_IGN: that would be inherited by vLLM
me = os.getpid()

def others():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == me and fields[0] != "Z":
                found.append(int(name))
    return found

def wait_gone(seconds):
    deadline = time.monotonic() + seconds
    while others() and time.monotonic() < deadline:
        child.poll()
        time.sleep(0.1)
    return others()

def grace():
    return ready_grace if ready else startup_grace

def actune_gone():
    global ready
    # The pipe first: a ready byte actune wrote just before dying still counts.
    if select.select([lifeline], [], [], 0.5)[0]:
        if not os.read(lifeline, 1):
            return True
        ready = True
    return os.getppid() != parent

child = subprocess.Popen(sys.argv[5:], stdin=subprocess.DEVNULL)
signalled = False
while child.poll() is None:
    if actune_gone():
        print("actune guard: actune is gone without stopping the server; stopping it", flush=True)
        os.killpg(0, signal.SIGTERM)
        signalled = True
        break
left = wait_gone(grace() if signalled else 2.0)
if left and not signalled:
    os.killpg(0, signal.SIGTERM)
    left = wait_gone(grace())
for pid in left:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
code = child.wait()
sys.exit(code if code >= 0 else 128 - code)
"""
