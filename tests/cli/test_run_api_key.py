"""``actune run --endpoint URL --api-key-env NAME``: one episode against a hosted API whose key is read from the
variable NAME names. The real client and agent loop against FakeHostedAPI (a FAKE OpenAI-compatible API on
httpx.MockTransport, tests/hosted_fakes.py) and the fake environment; the key never shows."""

from __future__ import annotations

import json

import pytest
from agent.fakes import FakeEnvironment
from hosted_fakes import KEY, FakeHostedAPI

from actune.cli import main

HOSTED = "https://api.teacher.example/v1"
ARGV = ["run", "--endpoint", HOSTED, "--model", "gpt-teacher", "--question", "Who makes the Walkman?",
        "--answer", "Sony", "--json"]


@pytest.fixture
def fake(monkeypatch) -> FakeHostedAPI:
    import actune.envs.factory
    import actune.llm

    api = FakeHostedAPI(keys={"api.teacher.example": KEY})
    monkeypatch.setattr(actune.llm, "LLMClient", api.client_class())
    monkeypatch.setattr(actune.envs.factory, "make_env", lambda cfg: FakeEnvironment())
    return api


def test_the_key_of_the_named_variable_is_sent_and_never_shown(fake, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TEACHER_API_KEY", KEY)
    assert main([*ARGV, "--api-key-env", "TEACHER_API_KEY"]) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert (record["prediction"], record["correct"], record["model"]["name"]) == ("Sony", True, "gpt-teacher")
    assert fake.sent("api.teacher.example") == [("/v1/completions", f"Bearer {KEY}", "gpt-teacher")] * 2
    assert KEY not in out + err


def test_a_refused_key_is_a_short_error_naming_the_variable(fake, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TEACHER_API_KEY", KEY[::-1])  # refused with a 401 that echoes what it got
    assert main([*ARGV, "--api-key-env", "TEACHER_API_KEY"]) == 1  # it ran and failed
    out, err = capsys.readouterr()
    assert err.startswith(f"actune run: {HOSTED}: HTTP 401: the endpoint refused the request (API key from "
                          "environment variable TEACHER_API_KEY): ")
    assert "***" in err and KEY[::-1] not in out + err and len(fake.requests) == 1


def test_the_variable_is_checked_before_any_request(fake, monkeypatch, capsys) -> None:
    monkeypatch.delenv("TEACHER_API_KEY", raising=False)
    assert main([*ARGV, "--api-key-env", "TEACHER_API_KEY"]) == 2
    assert capsys.readouterr().err.startswith("actune: config error: --api-key-env: environment variable "
                                              "TEACHER_API_KEY is not set (or empty)")
    assert main([*ARGV, "--api-key-env", KEY]) == 2  # the key given instead of its variable's name: not echoed
    err = capsys.readouterr().err
    assert err.startswith("actune: config error: --api-key-env: must be the NAME of an environment variable")
    assert KEY not in err
    assert main([a for a in ARGV if a not in ("--endpoint", HOSTED)] + ["--api-key-env", "TEACHER_API_KEY"]) == 2
    assert "--api-key-env is the key of --endpoint" in capsys.readouterr().err
    assert fake.requests == []
