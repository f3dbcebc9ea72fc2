"""``actune run --adapter``: the adapter's prompt spec configures the loop, explicit flags win, the
server is started with the adapter and requested by its name, and no machine-wide lock is taken."""

from __future__ import annotations

import contextlib
import hashlib
import json
from types import SimpleNamespace

import pytest

from actune.agent import PromptSpec, save_prompt_spec
from actune.cli import build_parser, main
from actune.cli import run as cli_run
from actune.config import ConfigError


def parse(*argv: str):
    return build_parser().parse_args(["run", "--question", "q", *argv])


@pytest.fixture
def adapter(tmp_path):
    folder = tmp_path / "my adapter=v1"
    save_prompt_spec(PromptSpec(method="act", regime="zero_shot", wire="chat", chat_prefill=False,
                                exemplar_set=None), folder)
    (folder / "adapter_config.json").write_text(json.dumps({"r": 32, "lora_alpha": 64}))
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    return folder


# the folder name made safe, then the weights' hash (eval's rule): a retrained adapter is a new name
SERVED = "my-adapter-v1-" + hashlib.sha256(b"weights").hexdigest()[:10]


def test_adapter_spec_configures_the_loop(adapter):
    cfg, note = cli_run.resolve_agent_config(parse("--adapter", str(adapter)))
    assert (cfg.method, cfg.regime, cfg.wire, cfg.chat_prefill) == ("act", "zero_shot", "chat", False)
    assert note == (f"applied prompt spec {adapter / 'actune_prompt.json'}: method=act regime=zero_shot wire=chat")


def test_explicit_flags_beat_the_spec_which_beats_the_config_file(adapter, tmp_path):
    config = tmp_path / "agent.yaml"
    config.write_text("regime: few_shot\nwire: text\nepisode_steps: 4\n")
    cfg, note = cli_run.resolve_agent_config(
        parse("--adapter", str(adapter), "--config", str(config), "--regime", "few_shot",
              "--set", "chat_prefill=true", "--set", "temperature=0.4"))
    # --regime and --set chat_prefill win; wire comes from the spec, not the file; episode_steps from the file
    assert (cfg.method, cfg.regime, cfg.wire, cfg.chat_prefill) == ("act", "few_shot", "chat", True)
    assert cfg.episode_steps == 4 and cfg.temperature == 0.4
    assert note.endswith("wire=chat (overridden by regime=few_shot chat_prefill=true)")


def test_prompt_spec_flag_beats_the_adapter_folder(adapter, tmp_path):
    other = save_prompt_spec(PromptSpec(method="reflact", regime="few_shot", wire="text"), tmp_path / "spec.json")
    cfg, note = cli_run.resolve_agent_config(parse("--adapter", str(adapter), "--prompt-spec", str(other)))
    assert (cfg.method, cfg.regime, cfg.wire) == ("reflact", "few_shot", "text")
    assert str(other) in note


def test_adapter_without_spec_warns_and_uses_defaults(tmp_path):
    cfg, note = cli_run.resolve_agent_config(parse("--adapter", str(tmp_path)))
    assert (cfg.method, cfg.regime, cfg.wire) == ("react", "few_shot", "text")
    assert note.startswith(f"no actune_prompt.json in {tmp_path}: running react few_shot text")


def test_no_adapter_no_note():
    cfg, note = cli_run.resolve_agent_config(parse("--method", "cot"))
    assert cfg.method == "cot" and note is None


def test_bad_spec_is_a_config_error_naming_the_file(adapter, capsys):
    (adapter / "actune_prompt.json").write_text('{"regime": "two_shot"}')
    assert main(["run", "--question", "q", "--adapter", str(adapter), "--endpoint", "http://x/v1",
                 "--model", "a"]) == 2
    err = capsys.readouterr().err
    assert f"{adapter / 'actune_prompt.json'}: invalid prompt spec: regime" in err


def test_endpoint_with_adapter_needs_the_served_name(adapter, capsys):
    assert main(["run", "--question", "q", "--adapter", str(adapter), "--endpoint", "http://x/v1"]) == 2
    assert "--adapter with --endpoint needs --model NAME" in capsys.readouterr().err


def test_serve_config_loads_the_adapter_under_a_safe_name(adapter):
    args = parse("--adapter", str(adapter))
    args.model = "smollm2-135m"
    cfg = cli_run.serve_config_for(args)
    assert cfg.model == "smollm2-135m"
    assert cfg.adapters == {SERVED: str(adapter)}
    assert cfg.max_lora_rank == 32  # the adapter's r=32 would not fit the default 16


class FakeServerStarts:
    """Stands in for actune.serve.server.vllm_server: records the config, yields a handle-like object."""

    def __init__(self):
        self.configs = []

    @contextlib.contextmanager
    def __call__(self, cfg, log_path=None):
        self.configs.append(cfg)
        yield SimpleNamespace(base_url="http://127.0.0.1:1/v1", model=cfg.served_model_name or cfg.model)


def test_run_serves_and_requests_the_adapter_without_taking_the_lock(adapter, monkeypatch, capsys):
    import actune.serve.lock
    import actune.serve.server

    def no_lock(*a, **k):
        raise AssertionError("actune run must not take the server lock")

    monkeypatch.setattr(actune.serve.lock, "exclusive_server_lock", no_lock)
    fake = FakeServerStarts()
    monkeypatch.setattr(actune.serve.server, "vllm_server", fake)
    calls = []

    async def fake_episode(args, cfg, endpoint, request_model, record):
        calls.append((cfg, endpoint, request_model, record))
        return None

    monkeypatch.setattr(cli_run, "_episode", fake_episode)
    assert main(["run", "--question", "q", "--adapter", str(adapter)]) == 0
    (serve_cfg,) = fake.configs
    assert serve_cfg.adapters == {SERVED: str(adapter)} and serve_cfg.model == "smollm2-135m"
    ((cfg, endpoint, request_model, record),) = calls
    assert endpoint == "http://127.0.0.1:1/v1" and request_model == SERVED
    assert record.name == "smollm2-135m" and record.adapter == SERVED
    assert (cfg.method, cfg.regime, cfg.wire) == ("act", "zero_shot", "chat")
    err = capsys.readouterr().err
    assert "applied prompt spec" in err and "starting a vLLM server for smollm2-135m with adapter" in err

    # with --endpoint: no server, the adapter is requested by --model, the spec still comes from PATH
    calls.clear()
    assert main(["run", "--question", "q", "--adapter", str(adapter), "--endpoint", "http://h:2/v1",
                 "--model", "tuned"]) == 0
    ((cfg, endpoint, request_model, record),) = calls
    assert (endpoint, request_model, record.adapter) == ("http://h:2/v1", "tuned", "tuned")
    assert cfg.method == "act" and len(fake.configs) == 1


# --- the live view streams tokens (LLARS' event stream); --no-stream prints whole steps --------------------------

ANSWERS = [" The Walkman is made by Sony; its founding year is missing.\nACTION: search[Sony]",
           " Sony was founded in 1946.\nFINAL ANSWER: 1946"]


@pytest.fixture
def fake_server(monkeypatch):
    """`actune run --endpoint` against FakeStreamingAPI (a FAKE OpenAI server on httpx.MockTransport) and the
    fake encyclopedia."""
    import actune.envs.factory
    import actune.llm

    from .fakes import FakeEnvironment, FakeStreamingAPI

    fake = FakeStreamingAPI(list(ANSWERS), piece=2)
    real = actune.llm.LLMClient
    monkeypatch.setattr(actune.llm, "LLMClient", lambda cfg: real(cfg, transport=fake.transport))
    monkeypatch.setattr(actune.envs.factory, "make_env", lambda cfg: FakeEnvironment())
    return fake


@pytest.mark.parametrize("no_stream", [False, True])
def test_run_streams_tokens_unless_told_not_to(fake_server, capsys, no_stream):
    argv = ["run", "--endpoint", "http://fake/v1", "--model", "m", "--method", "reflact", "--question",
            "In which year was the company that makes the Walkman founded?", "--answer", "1946"]
    assert main(argv + (["--no-stream"] if no_stream else [])) == 0
    out = capsys.readouterr().out
    assert [bool(body.get("stream")) for _, body in fake_server.requests] == [not no_stream] * 2
    # the same lines either way, each once: streamed text is not printed again when its step is recorded
    lines = ["Reflection: The Walkman is made by Sony; its founding year is missing.", "Action: search[Sony]",
             "Reflection: Sony was founded in 1946.", "Final answer: 1946"]
    lines.append("Answer: FINAL ANSWER: 1946" if no_stream else "Answer: 1946")
    for line in lines:
        assert out.count(line + "\n") == 1, out
    assert "finish: answered · correct: True" in out


def test_live_view_prints_deltas_on_one_line():
    from rich.console import Console

    from actune.agent.episode import Event

    view = cli_run.LiveView()
    view.console = Console(record=True, width=40, force_terminal=False)
    for ev in [Event("reflecting", 1), Event("reflection_delta", 1, {"delta": "A long reflection [with]"}),
               Event("reflection_delta", 1, {"delta": " brackets that wraps past forty columns."}),
               Event("action_delta", 1, {"delta": "search[Sony]"}),
               Event("reflection", 1, {"text": "A long reflection [with] brackets that wraps past forty columns."}),
               Event("action", 1, {"text": "search[Sony]", "action_name": "search", "action_arg": "Sony"}),
               Event("observation_delta", 1, {"delta": "Sony [1] was founded in 1946."}),
               Event("observation", 1, {"text": "Sony [1] was founded in 1946."}),
               Event("iteration", 2, {"max_iterations": 7}),
               Event("delta", 2, {"delta": "1946"}), Event("delta", 2, {"delta": " [1]"}),
               Event("answer", 2, {"text": "FINAL ANSWER: 1946 [1]"})]:
        view(ev)
    assert view.console.export_text() == ("Reflection: A long reflection [with] brackets that wraps past forty "
                                          "columns.\nAction: search[Sony]\nObservation: Sony [1] was founded in "
                                          "1946.\n— step 2/7\nAnswer: 1946 [1]\n")


def test_the_agent_config_and_overrides_take_the_clis_one_shape(tmp_path):
    config = tmp_path / "agent.yaml"
    config.write_text("episode_steps: 4\ntemperature: 0.2\n")
    cfg, _ = cli_run.resolve_agent_config(parse(str(config), "temperature=0.4", "--set", "chat_prefill=true"))
    assert (cfg.episode_steps, cfg.temperature, cfg.chat_prefill) == (4, 0.4, True)
    cfg, _ = cli_run.resolve_agent_config(parse("temperature=0.5", "--config", str(config)))
    assert (cfg.episode_steps, cfg.temperature) == (4, 0.5)  # --config: the older spelling


def test_a_run_config_or_two_configs_are_refused_with_what_to_give(tmp_path):
    run_config = tmp_path / "run.yaml"
    run_config.write_text("serve:\n  model: smollm2-135m\neval:\n  agent:\n    temperature: 0.0\n")
    with pytest.raises(ConfigError, match=r"run.yaml: a run config \(sections eval, serve\); actune run takes an "
                                          r"agent config"):
        cli_run.resolve_agent_config(parse(str(run_config)))
    agent = tmp_path / "agent.yaml"
    agent.write_text("temperature: 0.2\n")
    with pytest.raises(ConfigError, match="two agent configs"):
        cli_run.resolve_agent_config(parse(str(agent), "--config", str(agent)))
    with pytest.raises(ConfigError, match="nope.yaml: no such config file"):
        cli_run.resolve_agent_config(parse(str(tmp_path / "nope.yaml")))
