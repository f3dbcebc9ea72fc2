"""``actune serve [CONFIG] [key=value ...] [--model M] [--adapter NAME=PATH ...] [--host H] [--port P]
[--api-key-env VAR]``

Starts vLLM's OpenAI-compatible server for a model, prints its URL and runs until SIGINT (Ctrl-C),
SIGTERM or SIGHUP, then stops it (and every process it started). CONFIG is a serve config YAML
(ServeConfig keys) or a run config whose ``serve:`` section is used; ``key=value`` overrides and the flags
apply on top. The API key clients must send is read from an environment variable (``--api-key-env``) or a config
file only you can read (``api_key``), never from the command line, where other local users see it (ps).
"""

from __future__ import annotations

import argparse
import sys
import time

from actune.runtime.stop_signals import stop_signals_as_interrupt


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", allow_abbrev=False, help="start a vLLM OpenAI-compatible server (Ctrl-C stops it)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", nargs="?", help="serve or run config YAML (optional)")
    p.add_argument("overrides", nargs="*", help="key=value overrides of ServeConfig fields (e.g. max_model_len=2048)")
    p.add_argument("--model", help="model: smollm2-135m, a Hugging Face id or a local folder")
    p.add_argument("--adapter", action="append", default=[], metavar="NAME=PATH",
                   help="LoRA adapter to load at start (repeatable); enables LoRA")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on (default 8000)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="require from clients the bearer token held in environment variable VAR")
    p.set_defaults(func=_serve)


def load_serve_config(args: argparse.Namespace):
    """ServeConfig from the optional file, the overrides and the flags (flags win)."""
    from pydantic import ValidationError

    from actune.cli.config_items import optional_config
    from actune.config import ConfigError, load_config
    from actune.serve.config import ServeConfig

    file, overrides = optional_config(args.config, args.overrides)
    # A run config: its serve section alone is read (the other stages' sections are not ours to check).
    cfg = load_config(ServeConfig, file, overrides, section="serve")
    adapters = {}
    for item in args.adapter:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--adapter {item!r}: expected NAME=PATH")
        adapters[name] = path
    try:
        if args.model:
            cfg.model = args.model
        if adapters:
            cfg.adapters = {**cfg.adapters, **adapters}
        if args.host:
            cfg.host = args.host
        if args.port is not None:
            cfg.port = args.port
        if args.api_key_env:
            from actune.llm import read_api_key

            cfg.api_key = read_api_key(args.api_key_env, "--api-key-env")
    except ValidationError as e:
        raise ConfigError("command-line flags: " + "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}"
                                                              for x in e.errors())) from None
    return cfg


def _serve(args: argparse.Namespace) -> int:
    cfg = load_serve_config(args)
    with stop_signals_as_interrupt():  # `kill -INT`/SIGTERM/SIGHUP stop the server like Ctrl-C
        return _run(cfg)


def _run(cfg) -> int:
    from actune.serve.errors import ServeError
    from actune.serve.server import log_tail, vllm_server

    print(f"actune serve: starting vLLM for {cfg.model} on {cfg.host}:{cfg.port} ...", flush=True)
    try:
        with vllm_server(cfg) as server:
            print(f"actune serve: ready at {server.base_url} (model {server.model!r}, {server.device}, "
                  f"pid {server.pid})", flush=True)
            for name in cfg.adapters:
                print(f"actune serve: LoRA adapter {name!r} loaded", flush=True)
            print(f"actune serve: log {server.log_path}; Ctrl-C to stop", flush=True)
            while server.alive():
                time.sleep(1.0)
            print(f"actune serve: error: the server exited with code {server.process.returncode}; "
                  f"last lines of {server.log_path}:", file=sys.stderr)
            for line in log_tail(server.log_path, secret=server.api_key):
                print("  " + line, file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        print("actune serve: stopped", flush=True)
        return 0
    except ServeError as e:
        print(f"actune serve: error: {e}", file=sys.stderr)
        return 1
