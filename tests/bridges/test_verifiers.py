"""actune environments as verifiers 0.4 environments (issue #49 item 9): verifiers' own loader finds the taskset
package by its id, verifiers' interception server carries every model call, and an episode's reward is what
actune's environment and metric give the same replies. A fake chat server (scripted replies) checks the turn
protocol exactly; the real vLLM server with the embedded model plays real tasks."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1")

import verifiers.v1 as vf  # noqa: E402

from actune.agent.parser import parse_step  # noqa: E402
from actune.bridges.shared import ScoredEpisode  # noqa: E402
from actune.bridges.verifiers import TASKSET_ID, ActuneEnv, episode_rows, evaluate, load_environment  # noqa: E402
from actune.envs.base import Action  # noqa: E402
from actune.envs.config import EnvConfig  # noqa: E402
from actune.envs.factory import make_env  # noqa: E402
from actune.records.task_record import Task  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"
ENV = {"name": "wiki", "corpus": str(DATA / "wiki_paragraphs.jsonl")}
QUESTION = "When did the 2002–03 La Liga season start?"


class _FakeChat(BaseHTTPRequestHandler):
    """A fake OpenAI-compatible server: the n-th assistant turn of a conversation gets ``replies[n]``; every
    request body is kept."""

    replies: list[str] = []
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        text = self.replies[min(turn, len(self.replies) - 1)]
        out = json.dumps({"id": "fake", "object": "chat.completion", "created": 0, "model": body["model"],
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def fake_chat() -> Iterator[tuple[str, type[_FakeChat]]]:
    handler = type("Chat", (_FakeChat,), {"replies": [], "bodies": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", handler
    server.shutdown()
    server.server_close()


def _tasks(tmp_path: Path, answer: str = "31 August 2002") -> dict:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "q1", "question": QUESTION, "answer": answer}) + "\n")
    return {"format": "custom", "path": str(path)}


def test_verifiers_loader_finds_the_taskset_package_by_its_id(tmp_path: Path) -> None:
    config = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "tasks": _tasks(tmp_path), "env": ENV}})
    env = vf.load_environment(config)
    assert isinstance(env, ActuneEnv)
    [task] = list(env.taskset)
    assert (task.data.question, task.data.answer, task.data.prompt) == (QUESTION, "31 August 2002", None)
    assert task.data.system_prompt.endswith(make_env(EnvConfig(**ENV)).describe_actions())


def test_an_episode_is_the_environments_turn_by_turn(tmp_path: Path, fake_chat) -> None:
    url, chat = fake_chat
    chat.replies = ["Thought: I search the season.\nAction: search[2002–03 La Liga]",
                    "Thought: the parse fails here.\nAction: search[2002",
                    "Thought: It started on 31 August 2002.\nAction: finish[31 August 2002]"]
    env = load_environment(_tasks(tmp_path), ENV)
    [row] = episode_rows(asyncio.run(evaluate(env, url, "fake", n=1)))
    assert (row["ok"], row["errors"], row["correct"], row["steps"]) == (True, [], 1.0, 2.0)
    direct = make_env(EnvConfig(**ENV))
    direct.reset(Task(id="q1", question=QUESTION, answer="31 August 2002", env="wiki"))
    seen = direct.step(Action("search", "2002–03 La Liga")).observation
    last = chat.bodies[-1]
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last["messages"][1]["content"] == f"Question: {QUESTION}"
    assert last["messages"][3]["content"] == f"Observation: {seen}"
    assert "no closing ']'" in last["messages"][5]["content"]  # the parser's error is the observation
    assert (last["temperature"], last["max_tokens"], last["stop"]) == (0.0, 128, ["\nObservation"])


def test_a_wrong_answer_and_the_turn_cap_score_zero(tmp_path: Path, fake_chat) -> None:
    url, chat = fake_chat
    chat.replies = ["Thought: a guess.\nAction: finish[1 September 2002]"]
    [wrong] = episode_rows(asyncio.run(evaluate(load_environment(_tasks(tmp_path), ENV), url, "fake", n=1)))
    assert (wrong["correct"], wrong["steps"], len(chat.bodies)) == (0.0, 1.0, 1)
    chat.replies, chat.bodies[:] = ["Thought: again.\nAction: lookup[season]"], []
    [capped] = episode_rows(asyncio.run(evaluate(load_environment(_tasks(tmp_path), ENV, max_turns=3), url, "fake")))
    assert (capped["correct"], capped["steps"], len(chat.bodies)) == (0.0, 3.0, 3)


def _replayed(question: str, answer: str, replies: list[str]) -> tuple[float, list[str]]:
    """The reward and observations actune's own environment and metric give ``replies``."""
    episode = ScoredEpisode(lambda: make_env(EnvConfig(**ENV)))
    episode.reset({"question": question, "answer": answer})
    said = []
    for reply in replies:
        parsed = parse_step(reply, episode.env.action_names, episode.env.finish_action)
        if parsed.action is None:
            said.append(parsed.error or "")
            continue
        result, _ = episode.step(parsed.action.name, parsed.action.argument)
        if result.done:
            break
        said.append(result.observation)
    return episode.reward, said


def test_the_embedded_model_plays_real_tasks_through_verifiers(vllm_server, tmp_path: Path) -> None:
    tasks = {"format": "hotpotqa", "path": str(DATA / "dev_with_context.jsonl"), "limit": 4}
    env = load_environment(tasks, ENV, max_turns=4)
    episodes = asyncio.run(evaluate(env, vllm_server.base_url, vllm_server.model))
    assert len(episodes) == 4
    for ep, row in zip(episodes, episode_rows(episodes)):
        assert row["ok"] and row["errors"] == [] and 1 <= len(row["replies"]) <= 4
        reward, said = _replayed(ep.task.data.question, ep.task.data.answer, row["replies"])
        assert row["correct"] == reward
        users = [m.content for m in ep.traces[0].messages if m.role == "user"][1:]
        assert users == [f"Observation: {s}" for s in said][:len(users)]
        assert ep.traces[0].num_output_tokens > 0
