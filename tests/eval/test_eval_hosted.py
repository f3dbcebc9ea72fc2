"""run_eval over a hosted teacher, a prompted student and a tuned student in one config and one report: the
real client and agent loop against a fake OpenAI-compatible transport (tests/hosted_fakes.py), the fake
environment, and a fake server start that records what it was asked to start (no vLLM). Only the students'
base gets a server; the teacher's requests carry its key, the local server's do not; records and the report
say what served each model, and the key appears nowhere."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from agent.fakes import FakeEnvironment
from collect_fakes import walkman_tasks
from hosted_fakes import KEY, FakeHostedAPI

from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.collect import CollectError
from actune.config import ConfigError, load_config
from actune.eval.config import EvalConfig, EvalModel
from actune.eval.run import adapter_name, run_eval, store_path
from actune.llm import RetryPolicy
from actune.records.trajectory import read_trajectories
from actune.serve.config import ServeConfig
from actune.tasks.config import TaskConfig

HOSTED = "https://api.teacher.example/v1"
LOCAL = "http://127.0.0.1:8000/v1"
OTHER = "http://10.0.0.5:8000/v1"


@pytest.fixture
def stage(tmp_path: Path, monkeypatch):
    """(config, fake API, started server configs): the three models on the Walkman tasks."""
    import actune.envs.factory
    import actune.llm
    import actune.serve.server

    fake = FakeHostedAPI(keys={"api.teacher.example": KEY})
    started: list[ServeConfig] = []

    @contextlib.contextmanager
    def fake_vllm_server(cfg: ServeConfig, **_: object):
        started.append(cfg)
        yield SimpleNamespace(base_url=LOCAL, model=cfg.served_name)

    monkeypatch.setattr(actune.llm, "LLMClient", fake.client_class())
    monkeypatch.setattr(actune.envs.factory, "make_env", lambda cfg: FakeEnvironment())
    monkeypatch.setattr(actune.serve.server, "vllm_server", fake_vllm_server)
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": t.id, "question": t.question, "answer": t.answer, "meta": t.meta})
                             + "\n" for t in walkman_tasks()))
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), adapter)
    cfg = EvalConfig(
        out_dir=tmp_path / "eval", bootstrap_samples=100,
        models=[EvalModel(label="prompted", model="smollm2-135m"),
                EvalModel(label="tuned", model="smollm2-135m", adapter=adapter),
                EvalModel(label="teacher", model="gpt-teacher", endpoints=[HOSTED], api_key_env="TEACHER_API_KEY"),
                EvalModel(label="other", model="qwen-other", endpoints=[OTHER])],  # a server of yours, no key
        tasks=TaskConfig(format="custom", path=str(tasks), split="dev"))
    return cfg, fake, started


def test_teacher_prompted_and_tuned_student_are_one_report(stage, capsys) -> None:
    cfg, fake, started = stage
    serve = ServeConfig(api_key="local-server-key")  # the key of the servers eval starts: sent to those only
    report = run_eval(cfg, serve, name="teacher-student", show_progress=False, run_id="r1")
    tuned_name = adapter_name("tuned", cfg.models[1].adapter)

    # one server, for the students' base with the tuned adapter; none for the teacher
    assert [(s.model, s.served_model_name, s.adapters) for s in started] == [
        ("smollm2-135m", "smollm2-135m", {tuned_name: str(cfg.models[1].adapter)})]
    # the teacher's requests carry its key and name, the local server's the serve key, the keyless endpoint none
    teacher = fake.sent("api.teacher.example")
    assert teacher and set(teacher) == {("/v1/completions", f"Bearer {KEY}", "gpt-teacher")}
    assert set(fake.sent("10.0.0.5")) == {("/v1/completions", None, "qwen-other")}
    local = fake.sent("127.0.0.1")
    assert {auth for _, auth, _ in local} == {"Bearer local-server-key"}
    assert {model for _, _, model in local} == {"smollm2-135m", tuned_name}

    # every record says what served it; the teacher's records carry its model name
    notes = {}
    for m in cfg.models:
        records = list(read_trajectories(store_path(cfg, m.label)))
        assert len(records) == 4
        notes[m.label] = {json.dumps(t.info["endpoint"], sort_keys=True) for t in records}
        if m.label == "teacher":
            assert {(t.model.name, t.model.adapter, t.info["fingerprint"]["model"]) for t in records} == {
                ("gpt-teacher", None, "gpt-teacher")}
    assert {k: [json.loads(v) for v in vs] for k, vs in notes.items()} == {
        "prompted": [{"kind": "started_server", "endpoints": [LOCAL], "api_key_env": None}],
        "tuned": [{"kind": "started_server", "endpoints": [LOCAL], "api_key_env": None}],
        "teacher": [{"kind": "model_endpoints", "endpoints": [HOSTED], "api_key_env": "TEACHER_API_KEY"}],
        "other": [{"kind": "model_endpoints", "endpoints": [OTHER], "api_key_env": None}]}

    # one report: the paired tests pair the same tasks whatever served each model
    prompted, tuned, hosted, other = report["models"]
    assert [m["endpoint"]["kind"] for m in report["models"]] == ["started_server", "started_server",
                                                                   "model_endpoints", "model_endpoints"]
    assert (hosted["model"], hosted["episodes"], hosted["tasks"]) == ("gpt-teacher", 4, 4)
    assert hosted["vs_first"]["correct"]["pairs"] == tuned["vs_first"]["correct"]["pairs"] == 4
    md = (cfg.out_dir / "report.md").read_text()
    assert "| teacher | gpt-teacher | model_endpoints (api.teacher.example) | – |" in md
    assert "| prompted | smollm2-135m | started_server | – |" in md

    # the key: nowhere in what eval wrote or printed
    out = capsys.readouterr()
    assert "key from $TEACHER_API_KEY" in out.err
    written = [p for p in cfg.out_dir.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"trajectories.jsonl", "report.json", "report.md"}
    assert not [p for p in written if KEY.encode() in p.read_bytes() or b"local-server-key" in p.read_bytes()]
    assert KEY not in out.out + out.err and "local-server-key" not in out.out + out.err

    # a rerun has nothing left: no server, no request, and no key needed
    before = len(fake.requests)
    run_eval(cfg, serve, show_progress=False, run_id="r2")
    assert len(started) == 1 and len(fake.requests) == before


def test_a_missing_key_variable_fails_before_any_server_starts(stage, monkeypatch) -> None:
    cfg, fake, started = stage
    monkeypatch.delenv("TEACHER_API_KEY")
    with pytest.raises(ConfigError, match=r"^eval.models\[2\].api_key_env: environment variable TEACHER_API_KEY is "
                                          r"not set"):
        run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1")
    assert started == [] and fake.requests == []


def test_a_refused_key_fails_the_teacher_without_showing_it(stage, monkeypatch, capsys) -> None:
    cfg, fake, started = stage
    monkeypatch.setenv("TEACHER_API_KEY", KEY[::-1])  # the wrong key: refused with a 401 that echoes it
    cfg = cfg.model_copy(update={"models": cfg.models[2:3], "max_failed_episodes": 0})
    with pytest.raises(CollectError, match="AuthError") as e:
        run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1")
    out = capsys.readouterr()
    text = str(e.value) + out.out + out.err
    assert "HTTP 401" in text and "environment variable TEACHER_API_KEY" in text
    assert KEY[::-1] not in text and started == []


def test_each_model_gets_its_retries_or_evals(stage, monkeypatch) -> None:
    """``eval.models[i].retries`` for that model's client (a rate-limited teacher), ``eval.retries`` for the
    others; a 2-minute Retry-After from the teacher is cut to its configured cap."""
    import actune.llm

    cfg, fake, started = stage
    fake.rate_limits, fake.retry_after = 2, "120"
    configs: list[actune.llm.ClientConfig] = []
    monkeypatch.setattr(actune.llm, "LLMClient", fake.client_class(configs))
    teacher = cfg.models[2].model_copy(update={"retries": RetryPolicy(max_retries=30, max_backoff_s=0.01)})
    # the teacher first: its requests meet the fake's 429s
    cfg = cfg.model_copy(update={"models": [teacher, cfg.models[0]], "retries": RetryPolicy(max_retries=1)})
    report = run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1")
    assert [m["episodes"] for m in report["models"]] == [4, 4]
    assert [(c.model, c.max_retries, c.backoff_s, c.max_backoff_s) for c in configs] == [
        ("gpt-teacher", 30, 0.5, 0.01), ("smollm2-135m", 1, 0.5, 60.0)]
    assert fake.rate_limits == 0 and len(fake.sent("api.teacher.example")) == 2 + 8


SHARED = "https://api.shared.example/v1"
SHARED_KEY = "sk-fake-shared-9876543210abcdef"
"""A made-up key of the shared eval.endpoints."""


def test_eval_endpoints_take_the_key_eval_api_key_env_names(stage, monkeypatch, capsys) -> None:
    """``eval.api_key_env`` keys ``eval.endpoints`` for the models without endpoints of their own; a model with
    its own keeps its own key; no server starts; the records name the variable, never the key."""
    cfg, fake, started = stage
    fake.keys["api.shared.example"] = SHARED_KEY
    monkeypatch.setenv("SHARED_API_KEY", SHARED_KEY)
    cfg = cfg.model_copy(update={"models": [cfg.models[0], cfg.models[2]], "endpoints": [SHARED],
                                 "api_key_env": "SHARED_API_KEY"})
    serve = ServeConfig(api_key="local-server-key")  # a key of our servers: never sent to eval.endpoints
    report = run_eval(cfg, serve, show_progress=False, run_id="r1")
    assert started == [] and [m["episodes"] for m in report["models"]] == [4, 4]
    assert set(fake.sent("api.shared.example")) == {("/v1/completions", f"Bearer {SHARED_KEY}", "smollm2-135m")}
    assert set(fake.sent("api.teacher.example")) == {("/v1/completions", f"Bearer {KEY}", "gpt-teacher")}
    assert [m["endpoint"] for m in report["models"]] == [
        {"kind": "eval_endpoints", "endpoints": [SHARED], "api_key_env": "SHARED_API_KEY"},
        {"kind": "model_endpoints", "endpoints": [HOSTED], "api_key_env": "TEACHER_API_KEY"}]
    out = capsys.readouterr()
    assert "key from $SHARED_API_KEY" in out.err
    written = b"".join(p.read_bytes() for p in cfg.out_dir.rglob("*") if p.is_file())
    for secret in (SHARED_KEY, KEY, "local-server-key"):
        assert secret not in out.out + out.err and secret.encode() not in written


def test_a_missing_eval_key_variable_fails_before_any_request(stage, monkeypatch) -> None:
    cfg, fake, started = stage
    monkeypatch.delenv("SHARED_API_KEY", raising=False)
    cfg = cfg.model_copy(update={"models": cfg.models[:1], "endpoints": [SHARED], "api_key_env": "SHARED_API_KEY"})
    with pytest.raises(ConfigError, match=r"^eval.api_key_env: environment variable SHARED_API_KEY is not set"):
        run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1")
    assert started == [] and fake.requests == []
    with pytest.raises(ConfigError, match="api_key_env: is the key of eval.endpoints, and none are given"):
        load_config(EvalConfig, overrides=["api_key_env=SHARED_API_KEY"])
    with pytest.raises(ConfigError, match="api_key_env: Value error, must be the NAME of an environment") as e:
        load_config(EvalConfig, overrides=[f"endpoints=[{SHARED}]", f"api_key_env={SHARED_KEY}"])
    assert SHARED_KEY not in str(e.value)


def test_a_server_handed_over_runs_only_the_labelled_models_and_the_full_eval_keeps_their_episodes(stage) -> None:
    from actune.serve.server import Serving, StageServer

    cfg, fake, started = stage
    serve = ServeConfig()
    # what the quickstart hands over: the server its bootstrap round started for this base (not started here)
    handed = Serving([LOCAL], "smollm2-135m", StageServer(serve.model_copy(update={"model": "smollm2-135m"})))
    assert run_eval(cfg, serve, show_progress=False, run_id="boot-r1", served=handed, labels=["prompted"]) is None
    assert started == [] and not (cfg.out_dir / "report.json").exists()  # no server of its own, no report
    assert {model for _, _, model in fake.sent("127.0.0.1")} == {"smollm2-135m"}
    first = store_path(cfg, "prompted").read_bytes()
    assert [t.run_id for t in read_trajectories(store_path(cfg, "prompted"))] == ["boot-r1"] * 4
    assert not any(store_path(cfg, m.label).exists() and store_path(cfg, m.label).stat().st_size
                   for m in cfg.models[1:])

    # the eval of every model: the prompted episodes are kept as they are (same producer), the rest run
    report = run_eval(cfg, serve, show_progress=False, run_id="eval")
    assert store_path(cfg, "prompted").read_bytes() == first
    assert [m["episodes"] for m in report["models"]] == [4, 4, 4, 4]
    assert [s.model for s in started] == ["smollm2-135m"]  # the tuned adapter's base: it had episodes left


def test_a_handed_server_of_another_model_is_refused_before_anything_runs(stage) -> None:
    from actune.serve.server import Serving, StageServer

    cfg, fake, started = stage
    handed = Serving([LOCAL], "react-r1", StageServer(ServeConfig(model="/runs/react/round1/adapter/merged")))
    with pytest.raises(ConfigError, match=r"prompted need\(s\) base 'smollm2-135m' served as 'smollm2-135m', but "
                                          r"the server handed to this eval serves '/runs/react/round1/adapter/merged' "
                                          r"as 'react-r1'"):
        run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1", served=handed, labels=["prompted"])
    assert fake.requests == [] and not store_path(cfg, "prompted").exists()
    with pytest.raises(ConfigError, match=r"^eval: no model labelled 'tuned-r1' in eval.models \(prompted, tuned, "):
        run_eval(cfg, ServeConfig(), show_progress=False, run_id="r1", served=handed, labels=["tuned-r1"])
