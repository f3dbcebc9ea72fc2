"""run_bootstrap from a hosted teacher: the real client and agent loop against a fake OpenAI-compatible
transport (tests/hosted_fakes.py) and the fake environment. The key comes from the variable
``bootstrap.api_key_env`` names, rate limits are waited out, the store's fingerprint names the teacher, and the
key is in no record, summary or line printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from agent.fakes import FakeEnvironment
from collect_fakes import walkman_tasks
from hosted_fakes import KEY, FakeHostedAPI

from actune.agent import AgentConfig
from actune.bootstrap.config import BootstrapConfig
from actune.bootstrap.run import run_bootstrap
from actune.cli.run_config import RunConfig
from actune.config import ConfigError, load_config
from actune.records.trajectory import read_trajectories
from actune.serve.config import ServeConfig
from actune.tasks.config import TaskConfig

HOSTED = "https://api.teacher.example/v1"


@pytest.fixture
def teacher(tmp_path: Path, monkeypatch):
    """(BootstrapConfig from a hosted teacher on the Walkman tasks, the fake API answering it)."""
    import actune.envs.factory
    import actune.llm

    fake = FakeHostedAPI(keys={"api.teacher.example": KEY}, rate_limits=2)
    monkeypatch.setattr(actune.llm, "LLMClient", fake.client_class())
    monkeypatch.setattr(actune.envs.factory, "make_env", lambda cfg: FakeEnvironment())
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": t.id, "question": t.question, "answer": t.answer, "meta": t.meta})
                             + "\n" for t in walkman_tasks()))
    cfg = BootstrapConfig(store=tmp_path / "out" / "trajectories.jsonl", endpoints=[HOSTED], model="gpt-teacher",
                          api_key_env="TEACHER_API_KEY", attempts_per_task=1, target_correct=100, concurrency=2,
                          tasks=TaskConfig(format="custom", path=str(tasks), split="train"),
                          agent=AgentConfig(temperature=0.4))
    return cfg, fake


def test_bootstrap_from_a_hosted_teacher(teacher, capsys) -> None:
    cfg, fake = teacher
    # serve is not used (endpoints given); its key must not reach the hosted API
    summary = run_bootstrap(cfg, ServeConfig(model="no-such-model", api_key="local-server-key"), show_progress=False)
    assert summary["episodes"] == 4
    sent = fake.sent("api.teacher.example")
    # 2 rate-limited answers waited out (429, Retry-After) and retried, every request with the teacher's key
    assert len(sent) == 2 + 8 and set(sent) == {("/v1/completions", f"Bearer {KEY}", "gpt-teacher")}
    records = list(read_trajectories(cfg.store))
    assert len(records) == 4
    assert {(t.model.name, t.info["fingerprint"]["model"], "base" in t.info["fingerprint"]) for t in records} == {
        ("gpt-teacher", "gpt-teacher", False)}
    out = capsys.readouterr()
    assert "(model 'gpt-teacher', key from $TEACHER_API_KEY)" in out.err
    assert KEY not in out.out + out.err
    assert not [p for p in cfg.store.parent.iterdir() if KEY.encode() in p.read_bytes()]


def test_a_missing_variable_fails_before_any_request(teacher, monkeypatch) -> None:
    cfg, fake = teacher
    monkeypatch.delenv("TEACHER_API_KEY")
    with pytest.raises(ConfigError, match=r"^bootstrap.api_key_env: environment variable TEACHER_API_KEY is not set"):
        run_bootstrap(cfg, ServeConfig(), show_progress=False)
    assert fake.requests == []


def test_api_key_env_needs_endpoints_and_a_model_and_never_shows_a_key(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    cases = [({"api_key_env": "TEACHER_API_KEY", "model": "gpt-teacher"}, "is the key of bootstrap.endpoints"),
             ({"api_key_env": "TEACHER_API_KEY", "endpoints": [HOSTED]}, "a hosted endpoint needs bootstrap.model"),
             ({"api_key_env": KEY, "endpoints": [HOSTED], "model": "m"},
              r"bootstrap.api_key_env: Value error, must be the NAME of an environment variable")]
    for section, message in cases:
        path.write_text(yaml.safe_dump({"bootstrap": section}))
        with pytest.raises(ConfigError, match=message) as e:
            load_config(RunConfig, path)
        assert KEY not in str(e.value)
    path.write_text(yaml.safe_dump({"bootstrap": {"api_key_env": "TEACHER_API_KEY", "endpoints": [HOSTED],
                                                  "model": "gpt-teacher"}}))
    assert load_config(RunConfig, path).bootstrap.api_key_env == "TEACHER_API_KEY"


def test_bootstrap_retries_reach_the_client(teacher, monkeypatch, tmp_path: Path) -> None:
    """``bootstrap.retries`` (loaded from the YAML) is the client's retry policy: a 2-minute Retry-After is cut
    to the configured cap, so the run goes on at once."""
    import actune.llm

    cfg, fake = teacher
    fake.retry_after = "120"
    configs: list[actune.llm.ClientConfig] = []
    monkeypatch.setattr(actune.llm, "LLMClient", fake.client_class(configs))
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"bootstrap": {"retries": {"max_retries": 9, "max_backoff_s": 0.01}}}))
    loaded = load_config(RunConfig, path).bootstrap.retries
    assert loaded.model_dump() == {"max_retries": 9, "backoff_s": 0.5, "max_backoff_s": 0.01}
    summary = run_bootstrap(cfg.model_copy(update={"retries": loaded}), ServeConfig(), show_progress=False)
    assert summary["episodes"] == 4 and len(fake.sent("api.teacher.example")) == 2 + 8
    assert [(c.max_retries, c.backoff_s, c.max_backoff_s, c.api_key_env) for c in configs] == [
        (9, 0.5, 0.01, "TEACHER_API_KEY")]


def test_the_summary_reaches_the_trackers_without_the_key(teacher) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg, _ = teacher
    summary = run_bootstrap(cfg.model_copy(update={"report_to": ["tensorboard"]}), ServeConfig(),
                            show_progress=False, run_id="boot-1")
    events = EventAccumulator(str(cfg.store.parent / "runs" / "boot-1"))
    events.Reload()
    assert events.Scalars("bootstrap/episodes")[0].value == summary["episodes"] == 4
    assert events.Scalars("bootstrap/kept")[0].value == summary["kept"]
    assert not [p for p in cfg.store.parent.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
