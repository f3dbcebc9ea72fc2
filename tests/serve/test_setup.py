"""Serving logic that needs no vLLM start: command line and environment per device, errors raised
before starting, and start/stop/cleanup with FakeVLLMServer (a tiny stand-in process with a child)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from actune.config import ConfigError
from actune.runtime import cpu_features
from actune.serve import hardware, server
from actune.serve.adapters import validate_adapter_dir
from actune.serve.config import ServeConfig
from actune.serve.errors import AdapterError, PortInUseError, ServeError, ServerStartError, VLLMNotInstalledError
from actune.serve.hardware import build_argv, build_env


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_cpu_command_line_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path))
    monkeypatch.setattr(cpu_features, "native_bf16", lambda: True)
    cfg = ServeConfig(model="smollm2-135m", enable_lora=True, port=8123, max_model_len=2048, cpu_kv_cache_gib=3)
    argv = build_argv(cfg, "/models/smol", "cpu", python="py")
    assert argv[:3] == ["py", "-m", "vllm.entrypoints.openai.api_server"]
    assert flag(argv, "--model") == "/models/smol"
    assert flag(argv, "--served-model-name") == "smollm2-135m"
    assert (flag(argv, "--host"), flag(argv, "--port"), flag(argv, "--max-model-len")) == ("127.0.0.1", "8123", "2048")
    assert "--enforce-eager" in argv and "--enable-lora" in argv and "--enable-prompt-tokens-details" in argv
    assert "--no-enable-chunked-prefill" in argv
    assert "--no-enable-chunked-prefill" not in build_argv(cfg.model_copy(update={"chunked_prefill": True}),
                                                           "/models/smol", "cpu", python="py")
    assert flag(argv, "--max-lora-rank") == "16"
    assert flag(argv, "--dtype") == "bfloat16"  # auto on a CPU with bf16 instructions
    assert "--tensor-parallel-size" not in argv and "--lora-modules" not in argv
    env = build_env(cfg, "cpu", base={"PATH": "/bin"})
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert env["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
    assert env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"  # no worker process of its own under the engine
    assert build_env(cfg, "cpu", base={"VLLM_ENABLE_V1_MULTIPROCESSING": "1"})["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    for key in ("VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TMPDIR"):
        assert Path(env[key]).is_relative_to(tmp_path) and Path(env[key]).is_dir()
    assert env["PATH"] == "/bin"
    assert env["VLLM_LOGGING_LEVEL"] == "INFO"


def test_the_server_log_level_comes_from_the_config_not_from_what_an_import_left_in_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path))
    # what `import trl` leaves in os.environ (trl/_compat.py) when vLLM is installed
    leaked = {"PATH": "/bin", "VLLM_LOGGING_LEVEL": "ERROR"}
    assert build_env(ServeConfig(), "cpu", base=leaked)["VLLM_LOGGING_LEVEL"] == "INFO"
    assert build_env(ServeConfig(log_level="WARNING"), "cuda", base=leaked)["VLLM_LOGGING_LEVEL"] == "WARNING"
    with pytest.raises(ValueError, match="log_level"):
        ServeConfig(log_level="LOUD")


def test_gpu_command_line_passes_parallelism_and_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path))
    cfg = ServeConfig(model="org/m", tensor_parallel_size=2, gpu_memory_utilization=0.5, api_key="k",
                      adapters={"a": "/ad/a"}, extra_args=["--max-num-seqs", "8"])
    argv = build_argv(cfg, "org/m", "cuda", python="py")
    assert flag(argv, "--tensor-parallel-size") == "2" and flag(argv, "--gpu-memory-utilization") == "0.5"
    assert flag(argv, "--dtype") == "auto"  # vLLM's own choice on GPU
    assert "--enforce-eager" not in argv and "--no-enable-chunked-prefill" not in argv
    assert flag(argv, "--api-key") == "k"  # start_server moves it into the environment (tests/faults)
    assert flag(argv, "--lora-modules") == "a=/ad/a" and "--enable-lora" in argv
    assert argv[-2:] == ["--max-num-seqs", "8"]
    env = build_env(cfg, "cuda", base={})
    assert "VLLM_CPU_KVCACHE_SPACE" not in env and "VLLM_ENABLE_V1_MULTIPROCESSING" not in env and env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"


@pytest.mark.parametrize("bf16, setting, expected", [
    (True, "auto", "bfloat16"), (False, "auto", "float32"), (False, "bfloat16", "bfloat16"),
    (True, "float32", "float32"), (False, "float16", "float16"),
], ids=["auto-bf16-cpu", "auto-avx2-cpu", "explicit-bf16", "explicit-fp32", "explicit-fp16"])
def test_cpu_dtype_auto_follows_the_cpu_and_explicit_passes_through(monkeypatch, bf16, setting, expected):
    monkeypatch.setattr(cpu_features, "native_bf16", lambda: bf16)
    cfg = ServeConfig(model="m", dtype=setting)
    assert flag(build_argv(cfg, "/m", "cpu", python="py"), "--dtype") == expected
    assert flag(build_argv(cfg, "/m", "cuda", python="py"), "--dtype") == setting


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port} on 127.0.0.1 is already in use"):
            server.check_port_free("127.0.0.1", port)
        cfg = ServeConfig(model=str(tmp_path), port=port)
        if hardware.importlib.util.find_spec("vllm") is not None:
            with pytest.raises(PortInUseError):
                server.start_server(cfg, log_path=tmp_path / "log")
            assert not (tmp_path / "log").exists()  # raised before anything started


def test_missing_vllm_names_the_extra(monkeypatch):
    real = hardware.importlib.util.find_spec
    monkeypatch.setattr(hardware.importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    with pytest.raises(VLLMNotInstalledError) as e:
        server.start_server(ServeConfig())
    assert "pip install 'actune[cpu]'" in str(e.value) and "'actune[gpu]'" in str(e.value)


def test_bad_adapter_path_is_a_clear_error(tmp_path):
    with pytest.raises(AdapterError, match="does not exist"):
        validate_adapter_dir(tmp_path / "missing")
    with pytest.raises(AdapterError, match="no adapter_config.json"):
        validate_adapter_dir(tmp_path)
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 32}))
    with pytest.raises(AdapterError, match="r=32 exceeds the server's max_lora_rank=16"):
        validate_adapter_dir(tmp_path, max_rank=16)
    with pytest.raises(AdapterError, match="no adapter_model.safetensors"):
        validate_adapter_dir(tmp_path)
    (tmp_path / "adapter_model.safetensors").write_bytes(b"x")
    assert validate_adapter_dir(tmp_path) == tmp_path.resolve()


def test_bad_adapter_stops_start_before_launch(tmp_path, monkeypatch):
    _fake_vllm_installed(monkeypatch)
    cfg = ServeConfig(model=str(tmp_path), adapters={"mine": str(tmp_path / "nope")})
    with pytest.raises(AdapterError, match="nope does not exist"):
        server.start_server(cfg, log_path=tmp_path / "log")
    assert not (tmp_path / "log").exists()


# -- start / stop with FakeVLLMServer -------------------------------------------------------------

FAKE_SERVER = textwrap.dedent("""
    import http.server, subprocess, sys
    port, mode = int(sys.argv[1]), sys.argv[2]
    print("INFO fake server starting", flush=True)
    if mode == "crash":
        print("ValueError: the model has no config.json", flush=True)
        sys.exit(3)
    # A grandchild, like vLLM's engine process: stopping must take it down too.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404); self.end_headers()
        def log_message(self, *a): pass
    http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


def _fake_vllm_installed(monkeypatch):
    monkeypatch.setattr(server, "require_vllm", lambda: None)


def _use_fake_server(monkeypatch, tmp_path, mode: str):
    _fake_vllm_installed(monkeypatch)
    script = tmp_path / "fake_vllm.py"
    script.write_text(FAKE_SERVER)
    monkeypatch.setattr(server, "build_argv", lambda cfg, model, device: [sys.executable, str(script), str(cfg.port), mode])
    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path / "home"))
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    return ServeConfig(model=str(tmp_path / "model"), port=server.free_port(), startup_timeout_s=30, device="cpu")


def test_start_wait_stop_leaves_no_process(tmp_path, monkeypatch):
    cfg = _use_fake_server(monkeypatch, tmp_path, "serve")
    with server.vllm_server(cfg, log_path=tmp_path / "server.log") as handle:
        members = server.group_members(handle.pid)
        assert handle.pid in members and len(members) == 3  # the guard, the server and its grandchild
        assert handle.base_url == f"http://127.0.0.1:{cfg.port}/v1"
        assert handle.model == str(tmp_path / "model")
    assert server.group_members(handle.pid) == []
    assert "INFO fake server starting" in (tmp_path / "server.log").read_text()


def test_death_at_start_shows_cause_and_log_tail(tmp_path, monkeypatch):
    cfg = _use_fake_server(monkeypatch, tmp_path, "crash")
    with pytest.raises(ServerStartError) as e:
        with server.vllm_server(cfg, log_path=tmp_path / "server.log"):
            pass
    msg = str(e.value)
    assert "exited with code 3 while starting" in msg
    assert "Cause: ValueError: the model has no config.json" in msg
    assert f"Last lines of {tmp_path / 'server.log'}" in msg and "INFO fake server starting" in msg


# -- `actune serve` config resolution --------------------------------------------------------------

def _serve_args(*argv: str) -> argparse.Namespace:
    from actune.cli import serve

    parser = argparse.ArgumentParser()
    serve.register(parser.add_subparsers())
    return parser.parse_args(["serve", *argv])


def test_cli_reads_run_config_serve_section_then_overrides_then_flags(tmp_path, monkeypatch):
    from actune.cli.serve import load_serve_config

    run = tmp_path / "run.yaml"
    run.write_text("name: x\nserve:\n  model: smollm2-135m\n  port: 9000\n  max_model_len: 1024\n")
    cfg = load_serve_config(_serve_args(str(run), "max_model_len=2048", "--port", "9001", "--adapter", "a=/x"))
    assert (cfg.model, cfg.port, cfg.max_model_len, cfg.adapters) == ("smollm2-135m", 9001, 2048, {"a": "/x"})
    plain = tmp_path / "serve.yaml"
    plain.write_text("model: org/m\nhost: 0.0.0.0\n")
    monkeypatch.setenv("MY_SERVE_KEY", "k-123")  # the key comes from the environment, never the command line
    cfg = load_serve_config(_serve_args(str(plain), "--api-key-env", "MY_SERVE_KEY"))
    assert (cfg.model, cfg.host, cfg.api_key) == ("org/m", "0.0.0.0", "k-123")
    with pytest.raises(SystemExit):  # there is no flag that takes the key itself, not even as an abbreviation
        _serve_args(str(plain), "--api-key", "123")
    with pytest.raises(ConfigError) as e:  # the key pasted where its variable's name belongs is not repeated
        load_serve_config(_serve_args(str(plain), "--api-key-env", "sk-12.34"))
    assert "never the key itself" in str(e.value) and "sk-12.34" not in str(e.value)
    monkeypatch.delenv("MY_SERVE_KEY")
    with pytest.raises(ConfigError, match="--api-key-env: environment variable MY_SERVE_KEY is not set"):
        load_serve_config(_serve_args(str(plain), "--api-key-env", "MY_SERVE_KEY"))
    cfg = load_serve_config(_serve_args("port=8011", "--model", "m"))
    assert (cfg.model, cfg.port) == ("m", 8011)


def test_cli_config_errors_name_the_key(tmp_path):
    from actune.cli.serve import load_serve_config

    bad = tmp_path / "serve.yaml"
    bad.write_text("model: m\nprot: 1\n")
    with pytest.raises(ConfigError, match=r"serve.yaml.*\n  prot: unknown key"):
        load_serve_config(_serve_args(str(bad)))
    with pytest.raises(ConfigError, match="expected NAME=PATH"):
        load_serve_config(_serve_args("--adapter", "nopath"))
    with pytest.raises(ConfigError, match="port"):
        load_serve_config(_serve_args("--port", "70000"))


# `actune serve` receiving SIGINT, SIGTERM, SIGHUP or SIGKILL: tests/faults/test_serve_faults.py


def test_endpoints_or_server_uses_given_endpoints_or_starts_one(tmp_path, monkeypatch):
    given = ["http://10.0.0.1:8000/v1"]
    with server.endpoints_or_server(given, "m", ServeConfig(model="/nowhere")) as (endpoints, model):
        assert (endpoints, model) == (given, "m")
    cfg = _use_fake_server(monkeypatch, tmp_path, "serve")
    cfg.served_model_name = "served"
    with server.endpoints_or_server([], "", cfg) as (endpoints, model):
        assert endpoints == [f"http://127.0.0.1:{cfg.port}/v1"] and model == "served"
        assert httpx.get(f"http://127.0.0.1:{cfg.port}/health").status_code == 200
    server.check_port_free("127.0.0.1", cfg.port)  # the server is gone


def test_unknown_model_is_a_serve_error_before_start(tmp_path, monkeypatch):
    _fake_vllm_installed(monkeypatch)
    from actune.serve.errors import ServeError

    with pytest.raises(ServeError, match="cannot serve model 'no-such-model'"):
        server.start_server(ServeConfig(model="no-such-model", port=server.free_port()), log_path=tmp_path / "log")
    assert not (tmp_path / "log").exists()


def test_stale_ipc_sockets_are_removed_but_bound_ones_kept(tmp_path):
    live = socket.socket(socket.AF_UNIX)
    live.bind(str(tmp_path / "live"))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(tmp_path / "stale"))
    stale.close()  # closed, but the socket file stays, as vLLM's do
    (tmp_path / "plain-file").write_text("x")
    try:
        assert server.remove_stale_sockets(tmp_path) == [tmp_path / "stale"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["live", "plain-file"]
    finally:
        live.close()


def test_a_tool_parser_serves_a_chatml_model_with_actunes_tools_template(tmp_path):
    from actune.runtime.chat_templates import CHATML_TOOLS_TEMPLATE

    chatml = tmp_path / "chatml"
    chatml.mkdir()
    (chatml / "chat_template.jinja").write_text("{{ '<|im_start|>' + message['content'] }}")
    cfg = ServeConfig(model="m").for_wire("tools")
    argv = build_argv(cfg, str(chatml), "cpu", python="py")
    assert argv[-5:] == ["--enable-auto-tool-choice", "--tool-call-parser", "hermes",
                         "--chat-template", str(CHATML_TOOLS_TEMPLATE)]
    own = tmp_path / "own"
    own.mkdir()
    (own / "tokenizer_config.json").write_text('{"chat_template": "{% if tools %}{{ tools }}{% endif %}"}')
    assert "--chat-template" not in build_argv(cfg, str(own), "cpu", python="py")  # the model renders tools itself
    other = tmp_path / "other"
    other.mkdir()
    (other / "chat_template.jinja").write_text("[INST] {{ messages }} [/INST]")
    with pytest.raises(ServeError, match="not ChatML: give a template that renders tools"):
        build_argv(cfg, str(other), "cpu", python="py")
    assert "--tool-call-parser" not in build_argv(ServeConfig(model="m"), str(other), "cpu", python="py")
