"""``actune run``: one agent episode on one question, shown live (or printed as a JSON record).

    actune run [AGENT_CONFIG] [key=value ...] --env wiki --corpus corpus.jsonl --question "..."
    actune run temperature=0.4 exemplar_set=world --method react --corpus corpus.jsonl --question "..."

Without ``--endpoint`` it starts a vLLM server for ``--model`` (and stops it afterwards); ``--endpoint URL
--model NAME --api-key-env VAR`` runs against a hosted API, its key read from the variable VAR names. With
``--adapter FOLDER`` the LoRA adapter is served too and requested, and the loop is configured from the
folder's ``actune_prompt.json`` (the method, regime and wire format it was trained with); explicit
``--method/--regime/--wire`` and ``key=value`` overrides still win. The config is an agent config (AgentConfig
fields); ``--config FILE`` and ``--set KEY=VALUE`` are the older spelling of the same. The command takes no
machine-wide lock: two may run at once.

The live view streams: thoughts, reflections, actions and answers appear token by token as the server sends
them, observations as the environment answers (``AgentConfig.stream_events``, LLARS' event stream);
``--no-stream`` prints each step whole once it is read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from actune.agent.config import WIRES
from actune.agent.method_registry import method_names
from actune.cli.env_argument import ENV_HELP, env_name
from actune.cli.exit_codes import FAILED

DEFAULT_MODEL = "smollm2-135m"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run one agent episode on a question and show it live",
        description="Run one episode of an agent method against an environment and show thoughts, actions "
        "and observations as they happen. Without --endpoint a vLLM server is started for --model.",
    )
    p.add_argument("items", nargs="*", metavar="[AGENT_CONFIG] [key=value ...]",
                   help="a YAML file of AgentConfig fields (optional), then AgentConfig overrides, "
                   "e.g. temperature=0.4")
    p.add_argument("--env", default="wiki", type=env_name, help=ENV_HELP)
    p.add_argument("--method", choices=method_names(),
                   help="prompting method (default: the adapter's prompt spec, else react)")
    p.add_argument("--model",
                   help="base model to serve (default smollm2-135m), or with --endpoint the served model name "
                   "to request (with --adapter: the adapter's served name; required then)")
    p.add_argument("--endpoint", help="base URL of a running OpenAI-compatible server (…/v1)")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="with --endpoint: the NAME of the environment variable holding its API key (a hosted API; "
                   "sent as Authorization: Bearer), never the key itself")
    p.add_argument("--adapter", metavar="PATH",
                   help="LoRA adapter folder: served with the base model (or, with --endpoint, requested as "
                   "--model) and its actune_prompt.json configures the loop")
    p.add_argument("--question", required=True, help="the question (FEVER: the claim; ALFWorld: ignored)")
    p.add_argument("--answer", default="", help="gold answer, to score the prediction")
    p.add_argument("--corpus", help="wiki/fever: local corpus JSONL ({title, sentences})")
    p.add_argument("--docs", help="docqa: folder of documents")
    p.add_argument("--games", help="alfworld: folder of game.tw-pddl files")
    p.add_argument("--regime", choices=("few_shot", "zero_shot"),
                   help="prompt regime (default: the prompt spec's, else few_shot)")
    p.add_argument("--wire", choices=WIRES, help="wire format (default: the prompt spec's, else text)")
    p.add_argument("--prompt-spec", help="a folder holding actune_prompt.json, or the file itself "
                   "(default: the --adapter folder's)")
    p.add_argument("--config", help="YAML file of AgentConfig fields (the same as AGENT_CONFIG)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="AgentConfig override (the same as a key=value item; repeatable)")
    p.add_argument("--json", action="store_true", help="print the trajectory record as JSON instead of the live view")
    p.add_argument("--no-stream", action="store_true",
                   help="live view without token streaming: print each step whole once the model has written it")
    p.set_defaults(func=_run)


def resolve_agent_config(args: argparse.Namespace) -> tuple[Any, str | None]:
    """The AgentConfig for this run and a line saying which prompt spec was applied (None: none).

    Precedence, lowest first: AgentConfig defaults, the config file, the prompt spec (--prompt-spec, else
    the --adapter folder's actune_prompt.json), then --method/--regime/--wire and the key=value overrides."""
    from actune.agent.config import AgentConfig
    from actune.agent.prompt_spec import PROMPT_SPEC_FILE, find_prompt_spec, load_prompt_spec
    from actune.config import load_config, split_override

    config, overrides = _agent_config_items(args)
    spec_path = args.prompt_spec or (find_prompt_spec(args.adapter) if args.adapter else None)
    overrides = [f"{k}={v}" for k in ("method", "regime", "wire") if (v := getattr(args, k))] + overrides
    note = None
    if spec_path is not None:
        spec = load_prompt_spec(spec_path)
        cfg = load_config(AgentConfig, config, spec.as_overrides() + overrides)
        spec_keys = set(spec.model_dump(exclude={"format_version"}))
        won = [o for o in overrides if split_override(o)[0] in spec_keys]
        note = (f"applied prompt spec {spec_path}: method={spec.method} regime={spec.regime} wire={spec.wire}"
                + (f" (overridden by {' '.join(won)})" if won else ""))
    else:
        cfg = load_config(AgentConfig, config, overrides)
        if args.adapter:
            note = (f"no {PROMPT_SPEC_FILE} in {args.adapter}: running {cfg.method} {cfg.regime} {cfg.wire}; "
                    "the adapter may expect another format")
    return cfg, note


RUN_CONFIG_SECTIONS = ("serve", "bootstrap", "train", "eval")


def _agent_config_items(args: argparse.Namespace) -> tuple[str | None, list[str]]:
    """The agent config file (AGENT_CONFIG or --config, not both) and the overrides (items, then --set)."""
    import yaml

    from actune.cli.config_items import config_and_overrides
    from actune.config import ConfigError

    config, overrides = config_and_overrides(list(args.items), "an agent config (AgentConfig fields)")
    if config and args.config:
        raise ConfigError(f"two agent configs ({config} and --config {args.config}): give one")
    config = config or args.config
    if config:
        try:
            top = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            top = None  # load_config reports it, with the line
        sections = sorted(set(top) & set(RUN_CONFIG_SECTIONS)) if isinstance(top, dict) else []
        if sections:
            raise ConfigError(f"{config}: a run config (sections {', '.join(sections)}); actune run takes an agent "
                              "config: AgentConfig fields at the top level, as in a run config's bootstrap.agent "
                              "or eval.agent section")
    return config, overrides + list(args.overrides)


def adapter_served_name(path: str | Path) -> str:
    """The name an adapter is served under: its folder name made safe for ``--lora-modules NAME=PATH``, with
    the hash of its weights (:func:`actune.serve.adapters.adapter_name`, eval's rule too)."""
    from actune.serve.adapters import adapter_name

    label = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).expanduser().resolve().name).strip("-")
    return adapter_name(label or "adapter", path)


def adapter_rank(path: str | Path) -> int:
    """The adapter's LoRA rank (``r`` in adapter_config.json), 0 when it says none."""
    try:
        r = json.loads((Path(path) / "adapter_config.json").read_text()).get("r")
    except (OSError, ValueError):
        return 0  # validate_adapter_dir reports the real problem when the server starts
    return r if isinstance(r, int) else 0


def serve_config_for(args: argparse.Namespace) -> Any:
    """ServeConfig for a throwaway server: the base model, plus the adapter when --adapter is given."""
    from actune.serve.config import ServeConfig
    from actune.serve.server import free_port

    cfg = ServeConfig(model=args.model, port=free_port())
    if args.adapter:
        rank = adapter_rank(args.adapter)
        # vLLM accepts only these max ranks; take the smallest that fits the adapter
        max_rank = next((m for m in (16, 32, 64, 128, 256, 320, 512) if m >= rank), cfg.max_lora_rank)
        cfg = cfg.model_copy(update={"adapters": {adapter_served_name(args.adapter): str(args.adapter)},
                                     "max_lora_rank": max_rank})
    return cfg


def _env_config(args: argparse.Namespace):
    from actune.config import load_config
    from actune.envs.config import EnvConfig

    overrides = [f"name={args.env}"]
    if args.corpus:
        overrides.append(f"corpus={args.corpus}")
    if args.docs:
        overrides.append(f"docs_dir={args.docs}")
    if args.games:
        overrides.append(f"games_dir={args.games}")
    return load_config(EnvConfig, None, overrides)


class LiveView:
    """Prints events with rich as they arrive; streamed text (``*_delta`` / ``delta`` events) as it comes, on the
    line its ``thinking`` / ``reflecting`` (or first answer delta) opened, and the step is not printed again."""

    STYLES = {"thought": "cyan", "reflection": "magenta", "action": "yellow", "observation": "dim",
              "answer": "bold green"}
    #: The delta events and the step each one streams.
    DELTAS = {"thought_delta": "thought", "reflection_delta": "reflection", "action_delta": "action",
              "observation_delta": "observation", "delta": "answer"}
    STARTS = {"thinking": "thought", "reflecting": "reflection"}

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(highlight=False)
        self._open: tuple[str, int] | None = None  # the (step type, iteration) whose line is being written
        self._streamed: set[tuple[str, int]] = set()

    def _line(self, part: str, iteration: int) -> None:
        """Open the line of ``part`` at ``iteration`` (its label), closing another one."""
        if self._open != (part, iteration):
            self._close()
            self.console.print(f"[{self.STYLES[part]}]{part.capitalize()}: [/]", end="", soft_wrap=True)
            self._open = (part, iteration)

    def _close(self) -> None:
        if self._open is not None:
            self.console.print()
            self._open = None

    def __call__(self, ev: Any) -> None:
        from rich.markup import escape

        c = self.console
        t = ev.type
        if t in self.STARTS:
            self._line(self.STARTS[t], ev.iteration)
            self._streamed.add((self.STARTS[t], ev.iteration))
            return
        if t in self.DELTAS:
            part = self.DELTAS[t]
            self._line(part, ev.iteration)
            self._streamed.add((part, ev.iteration))
            c.print(escape(ev.data["delta"]), style=self.STYLES[part], end="", soft_wrap=True)
            return
        self._close()
        if t == "starting":
            c.rule(f"[bold]{escape(ev.data['method'])}[/] · {escape(ev.data['goal'])}")
        elif t == "iteration":
            c.print(f"[bold]— step {ev.iteration}/{ev.data.get('max_iterations', '?')}[/]")
        elif t in self.STYLES:
            if (t, ev.iteration) in self._streamed:
                return  # shown as it streamed
            label = t.capitalize()
            c.print(f"[{self.STYLES[t]}]{label}: {escape(str(ev.data.get('text', '')))}[/]")
        elif t == "sample":
            c.print(f"[dim]sample {ev.data['index']}: answer {escape(str(ev.data['answer']))}[/]")
        elif t in ("parse_error", "reprompt", "adaptive_iteration", "adaptive_response", "max_iterations_reached",
                   "repetition", "backoff"):
            detail = ", ".join(f"{k}={v}" for k, v in ev.data.items())
            c.print(f"[red]{t}[/] {escape(detail)}")
        elif t == "final_answer":
            c.print(f"[bold green]Final answer: {escape(str(ev.data['answer']))}[/]")
        elif t == "done":
            traj = ev.data["trajectory"]
            u = traj.usage
            c.rule(f"finish: {traj.finish_reason} · correct: {traj.correct} · {u.requests} requests, "
                   f"{u.prompt_tokens} prompt + {u.completion_tokens} generated tokens · "
                   f"{traj.timings.wall_s:.1f} s")


async def _episode(args: argparse.Namespace, cfg: Any, endpoint: str, request_model: str, record: Any) -> Any:
    from actune.agent.loop import iter_episode
    from actune.envs.factory import make_env
    from actune.llm import ClientConfig, LLMClient
    from actune.records.task_record import Task

    env = make_env(_env_config(args))
    task = Task(id="cli", question=args.question, answer=args.answer, env=env.name, split="cli")
    view = None if args.json else LiveView()
    if view is not None and not args.no_stream:
        cfg = cfg.model_copy(update={"stream_events": True})
    traj = None
    client = ClientConfig(endpoints=[endpoint], model=request_model, api_key_env=args.api_key_env)
    async with LLMClient(client) as llm:
        async for ev in iter_episode(task, env, llm, cfg, model=record, run_id="cli"):
            if view is not None:
                view(ev)
            if ev.type == "done":
                traj = ev.data["trajectory"]
    return traj


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from actune.config import ConfigError
    from actune.llm import LLMError, read_api_key
    from actune.records.trajectory import ModelRecord
    from actune.serve.errors import ServeError

    if args.endpoint and args.adapter and not args.model:
        raise ConfigError("--adapter with --endpoint needs --model NAME: the name the server serves the adapter "
                          "under (e.g. the NAME of `actune serve --adapter NAME=PATH`)")
    if args.api_key_env:
        if not args.endpoint:
            raise ConfigError("--api-key-env is the key of --endpoint (a server actune starts needs none); "
                              "give --endpoint URL too")
        read_api_key(args.api_key_env, "--api-key-env")  # before anything runs
    args.model = args.model or DEFAULT_MODEL
    cfg, note = resolve_agent_config(args)  # fail fast on a bad config, before starting a server
    if note:
        print(note, file=sys.stderr, flush=True)
    try:
        if args.endpoint:
            # --model is the name the server knows the adapter (or base model) by
            record = ModelRecord(name=args.model, adapter=args.model if args.adapter else None)
            traj = asyncio.run(_episode(args, cfg, args.endpoint, args.model, record))
        else:
            from actune.serve.server import vllm_server

            serve_cfg = serve_config_for(args).for_wire(cfg.wire)
            what = args.model + (f" with adapter {args.adapter}" if args.adapter else "")
            print(f"starting a vLLM server for {what} ...", file=sys.stderr, flush=True)
            # No server lock here: only the test fixture and bench take actune.serve.lock, so a user may
            # run two `actune run` at once and a test session holding the lock can still call this.
            with vllm_server(serve_cfg) as server:
                adapter = next(iter(serve_cfg.adapters), None)
                record = ModelRecord(name=server.model, adapter=adapter)
                traj = asyncio.run(_episode(args, cfg, server.base_url, adapter or server.model, record))
    except (ServeError, LLMError) as e:  # an LLMError: a refused key, say (its message never holds the key)
        print(f"actune run: {e}", file=sys.stderr)
        return FAILED
    if args.json:
        print(traj.to_json())
    return 0
