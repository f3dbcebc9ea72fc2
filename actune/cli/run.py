"""``actune run``: one agent episode on one question, shown live (or printed as a JSON record).

    actune run --env wiki --method react --model smollm2-135m --corpus corpus.jsonl --question "..."

Without ``--endpoint`` it starts a vLLM server for ``--model`` (and stops it afterwards).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

METHOD_CHOICES = ("standard", "cot", "cot_sc", "act", "react", "reflact", "react_cotsc", "cotsc_react")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run one agent episode on a question and show it live",
        description="Run one episode of an agent method against an environment and show thoughts, actions "
        "and observations as they happen. Without --endpoint a vLLM server is started for --model.",
    )
    p.add_argument("--env", default="wiki", choices=("wiki", "fever", "docqa", "alfworld"), help="environment")
    p.add_argument("--method", default="react", choices=METHOD_CHOICES, help="prompting method")
    p.add_argument("--model", default="smollm2-135m",
                   help="model to serve, or the served model/adapter name when --endpoint is given")
    p.add_argument("--endpoint", help="base URL of a running OpenAI-compatible server (…/v1)")
    p.add_argument("--question", required=True, help="the question (FEVER: the claim; ALFWorld: ignored)")
    p.add_argument("--answer", default="", help="gold answer, to score the prediction")
    p.add_argument("--corpus", help="wiki/fever: local corpus JSONL ({title, sentences})")
    p.add_argument("--docs", help="docqa: folder of documents")
    p.add_argument("--games", help="alfworld: folder of game.tw-pddl files")
    p.add_argument("--regime", choices=("few_shot", "zero_shot"), help="prompt regime (default few_shot)")
    p.add_argument("--wire", choices=("text", "chat"), help="wire format (default text)")
    p.add_argument("--prompt-spec", help="an adapter folder or actune_prompt.json: its regime and format win")
    p.add_argument("--config", help="YAML file of AgentConfig fields")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="AgentConfig override, e.g. --set temperature=0.4 (repeatable)")
    p.add_argument("--json", action="store_true", help="print the trajectory record as JSON instead of the live view")
    p.set_defaults(func=_run)


def _agent_config(args: argparse.Namespace):
    from actune.agent.config import AgentConfig
    from actune.agent.prompt_spec import load_prompt_spec
    from actune.config import load_config

    overrides = [f"method={args.method}"]
    if args.regime:
        overrides.append(f"regime={args.regime}")
    if args.wire:
        overrides.append(f"wire={args.wire}")
    cfg = load_config(AgentConfig, args.config, overrides + list(args.overrides))
    if args.prompt_spec:
        cfg = load_prompt_spec(args.prompt_spec).apply(cfg)
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
    """Prints events with rich as they arrive."""

    STYLES = {"thought": "cyan", "reflection": "magenta", "action": "yellow", "observation": "dim",
              "answer": "bold green"}

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(highlight=False)

    def __call__(self, ev: Any) -> None:
        from rich.markup import escape

        c = self.console
        t = ev.type
        if t == "starting":
            c.rule(f"[bold]{escape(ev.data['method'])}[/] · {escape(ev.data['goal'])}")
        elif t == "iteration":
            c.print(f"[bold]— step {ev.iteration}/{ev.data.get('max_iterations', '?')}[/]")
        elif t in self.STYLES:
            label = t.capitalize()
            c.print(f"[{self.STYLES[t]}]{label}: {escape(str(ev.data.get('text', '')))}[/]")
        elif t == "sample":
            c.print(f"[dim]sample {ev.data['index']}: answer {escape(str(ev.data['answer']))}[/]")
        elif t in ("parse_error", "reprompt", "adaptive_iteration", "max_iterations_reached", "repetition", "backoff"):
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


async def _episode(args: argparse.Namespace, endpoint: str, model: str) -> Any:
    from actune.agent.loop import iter_episode
    from actune.envs.factory import make_env
    from actune.llm import ClientConfig, LLMClient
    from actune.task import Task
    from actune.trajectory import ModelRecord

    cfg = _agent_config(args)
    env = make_env(_env_config(args))
    task = Task(id="cli", question=args.question, answer=args.answer, env=args.env, split="cli")
    view = None if args.json else LiveView()
    traj = None
    async with LLMClient(ClientConfig(endpoints=[endpoint], model=model)) as llm:
        async for ev in iter_episode(task, env, llm, cfg, model=ModelRecord(name=model), run_id="cli"):
            if view is not None:
                view(ev)
            if ev.type == "done":
                traj = ev.data["trajectory"]
    return traj


def _run(args: argparse.Namespace) -> int:
    import asyncio

    _agent_config(args)  # fail fast on a bad config, before starting a server
    if args.endpoint:
        traj = asyncio.run(_episode(args, args.endpoint, args.model))
    else:
        from actune.serve.config import ServeConfig
        from actune.serve.lock import exclusive_server_lock
        from actune.serve.server import free_port, vllm_server

        print(f"starting a vLLM server for {args.model} ...", file=sys.stderr, flush=True)
        with exclusive_server_lock(), vllm_server(ServeConfig(model=args.model, port=free_port())) as server:
            traj = asyncio.run(_episode(args, server.base_url, server.model))
    if args.json:
        print(traj.to_json())
    return 0
