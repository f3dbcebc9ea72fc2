"""Start vLLM's OpenAI-compatible server as a child process, wait for it, and stop it leaving nothing behind.

The server runs in its own process group (a new session), so stopping it signals the API server and
every engine process it spawned at once, and a Ctrl-C in the terminal reaches only actune, which then
stops the server once, cleanly. Usage::

    with vllm_server(ServeConfig(model="smollm2-135m", enable_lora=True, port=8011)) as server:
        print(server.base_url)          # http://127.0.0.1:8011/v1

The caller decides about exclusivity: tests take /tmp/actune-vllm.lock themselves; users may run several.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from actune.config import actune_home
from actune.serve.adapters import validate_adapter_dir
from actune.serve.config import ServeConfig
from actune.serve.errors import PortInUseError, ServeError, ServerStartError
from actune.serve.hardware import Device, build_argv, build_env, cache_root, detect_device, require_vllm

LOG_TAIL_LINES = 30


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
    """Process id of the API server; also its process-group id."""
    api_key: str | None = None
    device: Device = "cpu"
    argv: list[str] = field(default_factory=list)
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def root_url(self) -> str:
        """Server root (for /health and /metrics)."""
        return self.base_url.removesuffix("/v1")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        stop_server(self, timeout_s)


def resolve_model(name: str) -> str:
    """Local folder for ``name`` (known name, hub id or folder) via actune.model_files.prepare_model."""
    from actune.model_files import ModelError, prepare_model

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
    argv = build_argv(cfg, model_path, device)
    env = build_env(cfg, device)
    log_path = Path(log_path) if log_path is not None else default_log_path(cfg)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
            # Only from the main thread: PDEATHSIG fires when the launching *thread* ends.
            preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None,
        )
    connect_host = "127.0.0.1" if cfg.host in ("0.0.0.0", "::", "") else cfg.host
    return ServerHandle(
        base_url=f"http://{connect_host}:{cfg.port}/v1", model=cfg.served_model_name or cfg.model,
        model_path=model_path, log_path=log_path, pid=process.pid, api_key=cfg.api_key, device=device,
        argv=argv, process=process,
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
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            stop_server(handle)
            raise ServerStartError(_start_failure(handle, f"vLLM server not healthy after {timeout_s:.0f} s"))
        time.sleep(0.5)


def stop_server(handle: ServerHandle, timeout_s: float = 30.0) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after ``timeout_s``; wait until no
    process of the group remains."""
    pgid = handle.pid
    if group_members(pgid):
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
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


@contextlib.contextmanager
def endpoints_or_server(endpoints: list[str], model: str, cfg: ServeConfig) -> Iterator[tuple[list[str], str]]:
    """For stages: use ``endpoints`` (and ``model``, the served name) when given; otherwise start a
    server from ``cfg`` for the stage's duration. Yields (endpoints, served model name)."""
    if endpoints:
        yield list(endpoints), model or cfg.served_model_name or cfg.model
        return
    with vllm_server(cfg) as handle:
        yield [handle.base_url], handle.model


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _start_failure(handle: ServerHandle, headline: str) -> str:
    tail = log_tail(handle.log_path)
    cause = next((line.strip() for line in reversed(tail) if "Error" in line or "error:" in line), None)
    parts = [headline + "."]
    if cause:
        parts.append(f"Cause: {cause}")
    parts.append(f"Last lines of {handle.log_path}:")
    parts += ["  " + line for line in tail]
    return "\n".join(parts)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _die_with_parent() -> None:
    # Runs in the child before exec: if the actune process dies without stopping the server (SIGKILL,
    # crash), the kernel sends the API server SIGTERM, and vLLM then shuts its engine processes down.
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
