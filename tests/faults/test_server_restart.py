"""A model server that dies under a stage which started it (issue #12): the stage restarts it in place, runs
the episodes it lost again, stores none of them as ``server_error`` and counts the restart; past
``serve.max_restarts`` it stops cleanly, naming the limit, and a rerun finishes.

No vLLM runs here. The stage starts a stand-in of vLLM's API server (test_serve_faults' ``fake`` fixture, its
script replaced by STANDIN) that answers /health and /v1/completions with the scripted Walkman episode, through
actune's own server start, guard, client and agent loop; it SIGKILLs its whole process group (itself and the
guard, as ``kill -9`` of the server does) on its DIE_AFTER-th completion, every time or only once.
The real-server version: tests/faults/test_stage_faults_server.py.
"""

from __future__ import annotations

import asyncio
import collections
import json
import textwrap
from pathlib import Path

import pytest
from agent.fakes import FakeEnvironment
from collect_fakes import PacedScriptedLLM, walkman_llm, walkman_tasks

from actune.agent.config import AgentConfig
from actune.collect import CollectError, collect, pending_episodes
from actune.llm import RetryPolicy, ServerError
from actune.records.store import TrajectoryStore
from actune.records.trajectory import read_trajectories
from actune.serve import server
from actune.tasks.config import TaskConfig
from faults.test_serve_faults import fake  # noqa: F401  (the stand-in server fixture)

ATTEMPTS = 3
EPISODES = len(walkman_tasks()) * ATTEMPTS  # 12, two requests each
DIE_AFTER = 5  # completions: mid-run, with episodes in flight

STANDIN = textwrap.dedent("""
    import http.server, json, os, signal, sys
    report, flags = sys.argv[1], sys.argv[2:]
    with open(report + ".starts", "a") as f:
        f.write(f"{os.getpgid(0)}\\n")
    die_after, once = int(os.environ.get("STANDIN_DIE_AFTER", "0")), os.environ.get("STANDIN_DIE_ONCE")
    served = 0

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404); self.end_headers()

        def do_POST(self):
            global served
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            served += 1
            if served == die_after and not (once and os.path.exists(once)):
                if once:
                    open(once, "w").close()
                os.killpg(0, signal.SIGKILL)  # the whole server, mid-request
            search = body["prompt"].rstrip().endswith("Thought 1:")
            text = (" I need to search Walkman.\\nAction 1: search[Walkman]" if search
                    else " Walkman is made by Sony.\\nAction 2: finish[Sony]")
            out = json.dumps({"choices": [{"index": 0, "text": text, "finish_reason": "stop"}], "model": body["model"],
                              "usage": {"prompt_tokens": 11, "completion_tokens": 5}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a): pass

    http.server.ThreadingHTTPServer(("127.0.0.1", int(flags[flags.index("--port") + 1])), H).serve_forever()
""")

FAST_RETRIES = RetryPolicy(max_retries=1, backoff_s=0.01)


@pytest.fixture
def stage(fake, tmp_path, monkeypatch):  # noqa: F811
    """``(serve config, task config, starts())``: the stand-in as the server the stage starts; ``starts()`` the
    process groups it was started as, in order."""
    import actune.envs.factory

    fake.script.write_text(STANDIN)
    monkeypatch.setattr(actune.envs.factory, "make_env", lambda cfg: FakeEnvironment())
    monkeypatch.setenv("STANDIN_DIE_AFTER", str(DIE_AFTER))
    monkeypatch.setenv("STANDIN_DIE_ONCE", str(tmp_path / "died"))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": t.id, "question": t.question, "answer": t.answer, "meta": t.meta})
                             + "\n" for t in walkman_tasks()))
    starts = Path(f"{fake.report_path}.starts")

    def started() -> list[int]:
        return [int(line) for line in starts.read_text().split()] if starts.exists() else []

    return fake.cfg(log_dir=tmp_path / "logs"), TaskConfig(format="custom", path=str(tasks), split="train"), started


def _stored_once(path: Path) -> list:
    records = list(read_trajectories(path))
    keys = collections.Counter((t.task.id, t.method, t.attempt) for t in records)
    assert len(keys) == EPISODES and set(keys.values()) == {1}, keys
    assert [t.finish_reason for t in records if t.finish_reason == "server_error"] == []
    return records


def _no_process_left(groups: list[int]) -> None:
    assert [g for g in groups if server.group_members(g)] == [], "a stand-in server outlived the stage"


def _bootstrap(serve, tasks, store: Path, served=None):
    from actune.bootstrap.config import BootstrapConfig
    from actune.bootstrap.run import run_bootstrap

    cfg = BootstrapConfig(store=store, attempts_per_task=ATTEMPTS, target_correct=100, concurrency=2, tasks=tasks,
                          retries=FAST_RETRIES, agent=AgentConfig(temperature=0.4))
    return run_bootstrap(cfg, serve, show_progress=False, served=served)


def test_bootstrap_restarts_a_server_that_died_and_stores_every_episode_once(stage, tmp_path, capsys):
    serve, tasks, started = stage
    store = tmp_path / "out" / "trajectories.jsonl"
    summary = _bootstrap(serve, tasks, store)
    _stored_once(store)
    assert summary["server_restarts"] == 1
    assert json.loads((store.parent / "summary.json").read_text())["server_restarts"] == 1
    groups = started()
    assert len(groups) == 2  # the first server, killed at its 5th completion, and its restart on the same port
    _no_process_left(groups)
    err = capsys.readouterr().err
    assert "bootstrap: the model server died; restarting it" in err
    assert "model server restarted in" in err and "(restart 1)" in err
    assert "restarted 1 time(s) during this run" in err
    assert "lost its model server" not in err  # no episode was counted as failed


def test_eval_restarts_a_server_that_died_and_reports_it(stage, tmp_path, capsys):
    from actune.eval.config import EvalConfig, EvalModel
    from actune.eval.run import run_eval, store_path

    serve, tasks, started = stage
    cfg = EvalConfig(out_dir=tmp_path / "eval", models=[EvalModel(label="prompted", model=serve.model)],
                     attempts=ATTEMPTS, concurrency=2, retries=FAST_RETRIES, bootstrap_samples=100,
                     tasks=tasks.model_copy(update={"split": "dev"}), agent=AgentConfig(temperature=0.4))
    report = run_eval(cfg, serve, show_progress=False)
    _stored_once(store_path(cfg, "prompted"))
    assert report["server_restarts"] == 1 and report["models"][0]["episodes"] == EPISODES
    assert json.loads((tmp_path / "eval" / "report.json").read_text())["server_restarts"] == 1
    groups = started()
    assert len(groups) == 2
    _no_process_left(groups)
    err = capsys.readouterr().err
    assert "eval prompted: the model server died; restarting it" in err and "restarted 1 time(s)" in err


def test_past_max_restarts_the_stage_stops_naming_the_limit_and_a_rerun_finishes(stage, tmp_path, monkeypatch):
    serve, tasks, started = stage
    monkeypatch.delenv("STANDIN_DIE_ONCE")  # every server started dies at its 5th completion
    store = tmp_path / "out" / "trajectories.jsonl"
    with pytest.raises(CollectError) as e:
        _bootstrap(serve.model_copy(update={"max_restarts": 1}), tasks, store)
    msg = str(e.value)
    assert "died after 1 restart(s) and serve.max_restarts is 1: not restarting it again" in msg, msg
    assert "rerun to continue" in msg
    groups = started()
    assert len(groups) == 2
    _no_process_left(groups)
    stored = list(read_trajectories(store))
    assert 0 < len(stored) < EPISODES and not [t for t in stored if t.finish_reason == "server_error"]

    monkeypatch.setenv("STANDIN_DIE_AFTER", "0")  # a server that lives: the rerun finishes the rest
    assert _bootstrap(serve, tasks, store)["server_restarts"] == 0
    _stored_once(store)
    _no_process_left(started())


def test_a_server_shared_by_several_runs_is_restarted_and_each_run_counts_its_own_restarts(stage, tmp_path):
    # the quickstart's passes share one server (run_bootstrap(..., served=)): the first run's restart keeps the
    # shared server up for the second, which starts nothing and counts no restart of its own
    serve, tasks, started = stage
    with server.serving([], "", serve) as served:
        first = _bootstrap(serve, tasks, tmp_path / "a" / "trajectories.jsonl", served=served)
        second = _bootstrap(serve, tasks, tmp_path / "b" / "trajectories.jsonl", served=served)
        assert served.server.restarts == 1
    assert (first["server_restarts"], second["server_restarts"]) == (1, 0)
    _stored_once(tmp_path / "a" / "trajectories.jsonl")
    _stored_once(tmp_path / "b" / "trajectories.jsonl")
    assert len(started()) == 2  # the shared server and its one restart
    _no_process_left(started())


def test_max_restarts_zero_never_restarts(stage, tmp_path):
    serve, tasks, started = stage
    with pytest.raises(CollectError, match="serve.max_restarts is 0"):
        _bootstrap(serve.model_copy(update={"max_restarts": 0}), tasks, tmp_path / "out" / "trajectories.jsonl")
    assert len(started()) == 1
    _no_process_left(started())


# -- collect's side, without processes ------------------------------------------------------------------------

class FakeServer:
    """A RestartableServer that is dead from the start until restarted."""

    def __init__(self, fail_restart: Exception | None = None) -> None:
        self.restarts, self.up, self.fail_restart = 0, False, fail_restart

    def alive(self) -> bool:
        return self.up

    def restart(self) -> None:
        if self.fail_restart:
            raise self.fail_restart
        self.restarts += 1
        self.up = True


def _collect(path: Path, llm, srv, concurrency: int = 2, **kw):
    agent = AgentConfig(temperature=0.4)

    async def go():
        with TrajectoryStore.open(path) as store:
            return await collect(pending_episodes(walkman_tasks(), 1, store, agent.method), FakeEnvironment, llm,
                                 agent, store, concurrency=concurrency, target_correct=100, server=srv,
                                 retry_pause_s=0, log=kw.pop("log", lambda m: None), **kw)

    return asyncio.run(go())


def test_episodes_in_flight_when_the_server_died_run_again_after_one_restart(tmp_path):
    # both episodes in flight fail (the server is dead); the first restarts it, the second, started on the
    # old server, just runs again: one restart, nothing counted as failed, every episode stored once
    llm = PacedScriptedLLM([ServerError("connection refused")] * 2 + list(walkman_llm().replies))
    srv, messages = FakeServer(), []
    res = _collect(tmp_path / "t.jsonl", llm, srv, log=messages.append, max_failed=0)
    assert (res.restarts, srv.restarts, res.failed, res.server_errors, res.retried, res.written) == (1, 1, 0, 0, 2, 4)
    assert messages[0] == "bootstrap: the model server died; restarting it" and len(messages) == 2
    assert sorted(t.task.id for t in read_trajectories(tmp_path / "t.jsonl")) == ["t0", "t1", "t2", "t3"]


def test_a_live_server_that_fails_a_request_is_not_restarted(tmp_path):
    llm = PacedScriptedLLM([ServerError("503")] + list(walkman_llm().replies))
    srv = FakeServer()
    srv.up = True
    res = _collect(tmp_path / "t.jsonl", llm, srv, concurrency=1)
    assert (srv.restarts, res.failed, res.server_errors, res.retried, res.written) == (0, 1, 1, 1, 4)


def test_a_restart_that_fails_stops_the_run_resumably(tmp_path):
    llm = PacedScriptedLLM([ServerError("connection refused")] * 50)
    srv = FakeServer(fail_restart=server.ServerRestartLimitError("limit reached"))
    with pytest.raises(CollectError, match="limit reached; what finished is stored: rerun to continue"):
        _collect(tmp_path / "t.jsonl", llm, srv)
    assert not (tmp_path / "t.jsonl").read_text()
