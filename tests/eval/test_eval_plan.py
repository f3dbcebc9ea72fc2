"""Planning the models: an adapter's (or merged model's) prompt spec configures its loop, requests go to its
served name, per-model agent overrides come first, models are grouped by base model (one server each),
and a model is never scored on its own training tasks; bad configs fail naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from eval_records import record
from pydantic import ValidationError

from actune.agent.config import AgentConfig
from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.cli.run_config import RunConfig
from actune.cli.stages import QUALIFY
from actune.config import ConfigError, load_config
from actune.eval.config import EvalConfig, EvalModel, model_agent
from actune.eval.run import (
    _NotingStore,
    adapter_name,
    base_models,
    check_endpoints,
    check_leakage,
    endpoint_kind,
    endpoint_note,
    group_serve_config,
    merged_model_folder,
    plan_groups,
    plan_models,
    server_for,
    store_path,
)
from actune.judge import judge, record_verdict
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import read_trajectories
from actune.serve.config import ServeConfig


def fake_adapter_folder(folder: Path, weights: bytes = b"weights") -> Path:
    """An adapter folder's files (not loadable weights: planning only hashes them)."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def test_adapter_gets_its_prompt_spec_and_name(tmp_path: Path) -> None:
    folder = fake_adapter_folder(tmp_path / "ad")
    save_prompt_spec(PromptSpec(method="reflact", regime="zero_shot", wire="chat"), folder)
    agent = AgentConfig(method="react", regime="few_shot", exemplar_set="world", max_tokens=77, temperature=0.0)
    cfg = EvalConfig(models=[EvalModel(label="prompted"), EvalModel(label="tuned", adapter=folder)], agent=agent,
                     out_dir=tmp_path / "out")
    prompted, tuned = plan_models(cfg, ServeConfig())
    assert prompted.agent == agent and prompted.request_model == "smollm2-135m" and prompted.adapter is None
    assert prompted.record.name == "smollm2-135m" and prompted.record.adapter is None
    assert (tuned.agent.method, tuned.agent.regime, tuned.agent.wire) == ("reflact", "zero_shot", "chat")
    assert tuned.agent.max_tokens == 77 and tuned.agent.exemplar_set is None
    name = adapter_name("tuned", folder)
    assert name.startswith("tuned-") and len(name) == len("tuned-") + 10
    assert tuned.request_model == name == tuned.record.adapter
    assert tuned.record.name == "smollm2-135m"
    assert store_path(cfg, "tuned") == tmp_path / "out" / "tuned" / "trajectories.jsonl"
    # other weights, another name; the same weights elsewhere, the same name
    other = fake_adapter_folder(tmp_path / "other", b"other weights")
    assert adapter_name("tuned", other) != name
    assert adapter_name("tuned", fake_adapter_folder(tmp_path / "copy")) == name
    # served names: eval.served_model, then serve.served_model_name
    assert plan_models(cfg, ServeConfig(served_model_name="base"))[0].request_model == "base"
    cfg2 = cfg.model_copy(update={"served_model": "mine"})
    assert plan_models(cfg2, ServeConfig(served_model_name="base"))[1].record.name == "mine"


def test_bad_configs_fail_clearly(tmp_path: Path) -> None:
    folder = fake_adapter_folder(tmp_path / "ad")
    with pytest.raises(ConfigError, match=r"eval.models\[1\].adapter: .*actune_prompt.json"):
        plan_models(EvalConfig(models=[EvalModel(label="a"), EvalModel(label="b", adapter=folder)]), ServeConfig())
    with pytest.raises(ConfigError, match=r"eval.models\[0\].adapter: .* is not a folder"):
        plan_models(EvalConfig(models=[EvalModel(label="a", adapter=tmp_path / "nope")]), ServeConfig())
    with pytest.raises(ValidationError, match="appears twice"):
        EvalConfig(models=[EvalModel(label="a"), EvalModel(label="a")])
    with pytest.raises(ValidationError, match="names a folder"):
        EvalModel(label="../x")


def test_cli_overrides_may_omit_the_eval_prefix() -> None:
    assert QUALIFY["eval"](["attempts=2", "serve.port=9", "eval.seed=1", "name=x"]) == [
        "eval.attempts=2", "serve.port=9", "eval.seed=1", "name=x"]


def test_per_model_agent_overrides_come_before_the_prompt_spec(tmp_path: Path) -> None:
    folder = fake_adapter_folder(tmp_path / "ad")
    save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="chat"), folder)
    agent = AgentConfig(method="react", exemplar_set="world", num_exemplars=2, episode_steps=5)
    cfg = EvalConfig(agent=agent, models=[
        EvalModel(label="prompted"),
        EvalModel(label="prompted-oracle", agent={"exemplar_kinds": ["task"]}),
        EvalModel(label="tuned", adapter=folder, agent={"episode_steps": 3, "exemplar_kinds": ["task"]}),
    ])
    prompted, oracle, tuned = plan_models(cfg, ServeConfig())
    assert prompted.agent == agent and prompted.agent_overrides == {}
    assert oracle.agent == agent.model_copy(update={"exemplar_kinds": ["task"]})
    assert oracle.agent_overrides == {"exemplar_kinds": ["task"]}
    assert oracle.request_model == prompted.request_model == "smollm2-135m" and oracle.prompt_spec is None
    # the override applies first, then the adapter's spec (which trained zero-shot, without exemplars)
    assert (tuned.agent.episode_steps, tuned.agent.regime, tuned.agent.wire) == (3, "zero_shot", "chat")
    assert tuned.agent.exemplar_kinds is None and tuned.agent.exemplar_set is None
    assert tuned.prompt_spec == folder / "actune_prompt.json" and tuned.prompt_spec_source == "adapter"
    assert model_agent(cfg, 0) is cfg.agent


def test_bad_per_model_overrides_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"eval.models\[1\].agent.exemplr_kinds: unknown key"):
        EvalConfig(models=[EvalModel(label="a"), EvalModel(label="b", agent={"exemplr_kinds": ["task"]})])
    with pytest.raises(ValidationError, match=r"eval.models\[0\].agent.episode_steps: Input should be greater than "
                                              r"or equal to 1"):
        EvalConfig(models=[EvalModel(label="a", agent={"episode_steps": 0})])
    # both models' problems at once, through the config loader
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"eval": {"models": [
        {"label": "a", "agent": {"method": "telepathy"}},
        {"label": "b", "agent": {"temprature": 0.4}},
    ]}}))
    with pytest.raises(ConfigError) as err:
        load_config(RunConfig, path)
    msg = str(err.value)
    assert "eval.models[0].agent.method: unknown method 'telepathy' (known: 'standard', " in msg
    assert "eval.models[1].agent.temprature: unknown key (not an AgentConfig field)" in msg
    # a config assembled without validation still fails when planned
    cfg = EvalConfig(models=[EvalModel(label="a")])
    cfg.models[0].agent = {"bogus": 1}
    with pytest.raises(ConfigError, match=r"eval.models\[0\].agent.bogus: unknown key"):
        plan_models(cfg, ServeConfig())


def test_models_group_by_base_one_server_each(tmp_path: Path) -> None:
    ad_b = fake_adapter_folder(tmp_path / "ad_b", b"b")
    ad_c = fake_adapter_folder(tmp_path / "ad_c", b"c")
    for f in (ad_b, ad_c):
        save_prompt_spec(PromptSpec(), f)
    cfg = EvalConfig(models=[
        EvalModel(label="a", model="smollm2-135m"),
        EvalModel(label="b", model="qwen2.5-0.5b", adapter=ad_b),
        EvalModel(label="c", model="smollm2-135m", adapter=ad_c),
        EvalModel(label="d", model="qwen2.5-0.5b"),
    ])
    serve = ServeConfig(model="smollm2-135m", served_model_name="small", adapters={"extra": "/x"})
    groups = plan_groups(cfg, serve)
    assert [(g.base, g.served_name, [p.label for p in g.models]) for g in groups] == [
        ("smollm2-135m", "small", ["a", "c"]),  # serve.served_model_name names serve.model
        ("qwen2.5-0.5b", "qwen2.5-0.5b", ["b", "d"]),  # another base: its own name
    ]
    name_b, name_c = adapter_name("b", ad_b), adapter_name("c", ad_c)
    assert groups[0].adapters == {name_c: str(ad_c)} and groups[1].adapters == {name_b: str(ad_b)}
    small, qwen = (group_serve_config(g, serve, len(groups)) for g in groups)
    assert (small.model, small.served_model_name, small.adapters) == (
        "smollm2-135m", "small", {"extra": "/x", name_c: str(ad_c)})
    assert (qwen.model, qwen.served_model_name, qwen.adapters) == ("qwen2.5-0.5b", "qwen2.5-0.5b", {name_b: str(ad_b)})
    assert qwen.port == serve.port and qwen.max_model_len == serve.max_model_len  # the rest of serve is shared
    assert [p.record.name for g in groups for p in g.models] == ["small", "small", "qwen2.5-0.5b", "qwen2.5-0.5b"]
    assert [(p.base, p.request_model) for p in plan_models(cfg, serve)] == [
        ("smollm2-135m", "small"), ("qwen2.5-0.5b", name_b), ("smollm2-135m", name_c), ("qwen2.5-0.5b", "qwen2.5-0.5b")]
    # one model's server, as run_eval would start it: the group's serve section, the model's request name
    assert server_for(cfg, serve, "b") == (qwen, name_b)
    c_serve, c_request = server_for(cfg, serve, "c")
    assert (c_serve.model, c_serve.adapters[name_c], c_request) == ("smollm2-135m", str(ad_c), name_c)
    check_endpoints(cfg)  # no endpoints: a server per base
    with pytest.raises(ConfigError, match=r"eval.endpoints: one endpoint serves one base model, but eval.models "
                                          r"name 2 \(smollm2-135m, qwen2.5-0.5b\)"):
        check_endpoints(cfg.model_copy(update={"endpoints": ["http://127.0.0.1:9/v1"]}))
    with pytest.raises(ConfigError, match=r"eval.served_model: names one base model"):
        plan_groups(cfg.model_copy(update={"served_model": "mine"}), serve)
    # one base: a single group, eval.served_model and the serve section's adapters as before
    one = EvalConfig(models=[EvalModel(label="a", model="other"), EvalModel(label="c", model="other", adapter=ad_c)],
                     served_model="mine")
    (g,) = plan_groups(one, serve)
    assert (g.base, g.served_name, [p.label for p in g.models]) == ("other", "mine", ["a", "c"])
    assert group_serve_config(g, serve, 1).adapters == {"extra": "/x", name_c: str(ad_c)}


def test_an_adapter_trained_on_tool_calls_gets_a_server_with_a_tool_parser(tmp_path: Path) -> None:
    tools, text = fake_adapter_folder(tmp_path / "tools", b"t"), fake_adapter_folder(tmp_path / "text", b"x")
    save_prompt_spec(PromptSpec(wire="tools"), tools)
    save_prompt_spec(PromptSpec(), text)
    serve = ServeConfig(model="smollm2-135m")
    both = EvalConfig(models=[EvalModel(label="text", model="smollm2-135m", adapter=text),
                              EvalModel(label="tools", model="smollm2-135m", adapter=tools)])
    (group,) = plan_groups(both, serve)
    assert [p.agent.wire for p in group.models] == ["text", "tools"]
    assert group_serve_config(group, serve).tool_call_parser == "hermes"
    only_text = EvalConfig(models=[EvalModel(label="text", model="smollm2-135m", adapter=text)])
    assert group_serve_config(plan_groups(only_text, serve)[0], serve).tool_call_parser is None
    named = serve.model_copy(update={"tool_call_parser": "qwen3_xml"})
    assert group_serve_config(group, named).tool_call_parser == "qwen3_xml"  # a parser the user named is kept


def test_merged_model_folder_gets_its_prompt_spec(tmp_path: Path) -> None:
    merged = tmp_path / "adapter" / "merged"
    merged.mkdir(parents=True)
    (merged / "config.json").write_text("{}")
    save_prompt_spec(PromptSpec(method="reflact", regime="zero_shot", wire="chat"), merged)
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    assert merged_model_folder(str(merged)) == merged
    assert merged_model_folder(str(plain)) is None and merged_model_folder("smollm2-135m") is None
    agent = AgentConfig(method="react", regime="few_shot", exemplar_set="world", max_tokens=77)
    cfg = EvalConfig(agent=agent, models=[EvalModel(label="prompted"), EvalModel(label="merged", model=str(merged)),
                                          EvalModel(label="plain", model=str(plain))])
    prompted, m, p = plan_models(cfg, ServeConfig())
    assert (m.agent.method, m.agent.regime, m.agent.wire, m.agent.max_tokens) == ("reflact", "zero_shot", "chat", 77)
    assert m.agent.exemplar_set is None
    assert m.agent == PromptSpec(method="reflact", regime="zero_shot", wire="chat").apply(agent)
    assert m.request_model == str(merged) and m.record.name == str(merged) and m.record.adapter is None
    assert (m.prompt_spec, m.prompt_spec_source, m.base) == (merged / "actune_prompt.json", "merged", str(merged))
    assert p.agent == agent and p.prompt_spec is None and prompted.spec_note() is None
    # its records say so: the store eval hands to collect notes the spec in each record it appends
    note = m.spec_note()
    assert note == {"source": "merged", "path": str(merged / "actune_prompt.json"),
                    "spec": PromptSpec(method="reflact", regime="zero_shot", wire="chat").model_dump()}
    with TrajectoryStore.open(tmp_path / "s.jsonl") as store:
        noting = _NotingStore(store, {"prompt_spec": note})
        t = record("t1", correct=True, method="reflact")
        noting.append(record_verdict(t, judge(t)))
        assert noting.records == 1 and noting.has("t1", "reflact", 0)
    (back,) = read_trajectories(tmp_path / "s.jsonl")
    assert back.info["prompt_spec"] == json.loads(json.dumps(note))


def write_training_tasks(folder: Path, items: list[dict]) -> None:
    (folder / "training_tasks.json").write_text(json.dumps(items))


def test_eval_on_training_tasks_is_refused(tmp_path: Path) -> None:
    adapter = fake_adapter_folder(tmp_path / "ad")
    save_prompt_spec(PromptSpec(), adapter)
    write_training_tasks(adapter, [
        {"id": "tr1", "question": "Who founded Sony?"},
        {"id": "dev7", "question": "Something else entirely?"},
        {"id": "tr3", "question": "  Where was   Marie Curie born?? "},
        {"id": "tr4", "question": "Which river is longer, the Danube or the Rhine?"},
    ])
    tasks = [Task("dev1", "who founded SONY?"),                     # same question: case, spacing, punctuation
             Task("dev7", "A question never trained on?"),          # same id
             Task("dev3", "Where was Marie Curie born?"),           # same question
             Task("dev4", "Which river is longer, the Danube or the Rhine?"),
             Task("dev5", "Which river is shorter, the Danube or the Rhine?")]  # new
    cfg = EvalConfig(models=[EvalModel(label="prompted"), EvalModel(label="tuned", adapter=adapter)])
    with pytest.raises(ConfigError) as err:
        check_leakage(cfg, tasks)
    assert str(err.value) == (
        f"eval.models[1] ('tuned'): 4 of 5 eval tasks are among its training tasks ({adapter}/training_tasks.json), "
        "e.g. 'dev1' ('who founded SONY?'), 'dev7' ('A question never trained on?'), 'dev3' "
        "('Where was Marie Curie born?'); evaluate it on tasks it was not trained on (another split)")
    check_leakage(cfg, [tasks[4]])  # held-out tasks pass
    check_leakage(EvalConfig(models=[EvalModel(label="prompted")]), tasks)  # nothing trained, nothing to leak

    # a merged model folder's training tasks count too
    merged = tmp_path / "merged"
    merged.mkdir()
    save_prompt_spec(PromptSpec(), merged)
    write_training_tasks(merged, [{"id": "dev5", "question": "q"}])
    with pytest.raises(ConfigError, match=r"^eval.models\[0\] \('m'\): 1 of 5 eval tasks .* e.g. 'dev5' "):
        check_leakage(EvalConfig(models=[EvalModel(label="m", model=str(merged))]), tasks)
    # a malformed file names itself
    write_training_tasks(merged, [{"id": 5}])
    with pytest.raises(ConfigError, match=r"merged/training_tasks.json: \[0\]: expected an object with string"):
        check_leakage(EvalConfig(models=[EvalModel(label="m", model=str(merged))]), tasks)


# --- models with their own endpoints (a hosted teacher) beside local ones (issue #8) -------------------------

HOSTED = "https://api.teacher.example/v1"


def test_a_model_with_its_own_endpoints_is_planned_apart_and_starts_no_server(tmp_path: Path) -> None:
    ad = fake_adapter_folder(tmp_path / "ad")
    save_prompt_spec(PromptSpec(), ad)
    cfg = EvalConfig(models=[
        EvalModel(label="prompted", model="smollm2-135m"),
        EvalModel(label="tuned", model="smollm2-135m", adapter=ad),
        EvalModel(label="teacher", model="gpt-teacher", endpoints=[HOSTED], api_key_env="TEACHER_API_KEY"),
    ])
    serve = ServeConfig(model="smollm2-135m", served_model_name="small", adapters={"extra": "/x"})
    assert base_models(cfg) == ["smollm2-135m"]  # the bases eval serves: the teacher's is not one of them
    groups = plan_groups(cfg, serve)
    assert [(g.base, g.served_name, [p.label for p in g.models], g.endpoints, g.api_key_env) for g in groups] == [
        ("smollm2-135m", "small", ["prompted", "tuned"], [], None),
        ("gpt-teacher", "gpt-teacher", ["teacher"], [HOSTED], "TEACHER_API_KEY"),
    ]
    local = [g for g in groups if not g.endpoints]
    # one local base: its server keeps the serve section's adapters, as before other models could be hosted
    assert group_serve_config(local[0], serve, len(local)).adapters == {"extra": "/x",
                                                                         adapter_name("tuned", ad): str(ad)}
    prompted, tuned, teacher = plan_models(cfg, serve)
    assert (teacher.request_model, teacher.record.name, teacher.record.adapter, teacher.base) == (
        "gpt-teacher", "gpt-teacher", None, "gpt-teacher")
    assert (teacher.endpoints, teacher.api_key_env, prompted.endpoints, prompted.api_key_env) == (
        [HOSTED], "TEACHER_API_KEY", [], None)
    assert [endpoint_kind(cfg, p) for p in (prompted, tuned, teacher)] == [
        "started_server", "started_server", "model_endpoints"]
    # eval.endpoints serve the local base (one), the teacher keeps its own; eval.served_model names the local base
    shared = cfg.model_copy(update={"endpoints": ["http://127.0.0.1:9/v1"], "served_model": "mine"})
    check_endpoints(shared)
    assert [endpoint_kind(shared, p) for p in plan_models(shared, serve)] == [
        "eval_endpoints", "eval_endpoints", "model_endpoints"]
    assert [p.request_model for p in plan_models(shared, serve)][::2] == ["mine", "gpt-teacher"]


def test_the_endpoint_note_keeps_no_credentials() -> None:
    assert endpoint_note("model_endpoints", ["https://user:pw@api.x.example:8443/v1?key=abc#f", HOSTED],
                         "TEACHER_API_KEY") == {
        "kind": "model_endpoints", "endpoints": ["https://api.x.example:8443/v1", HOSTED],
        "api_key_env": "TEACHER_API_KEY"}
    assert endpoint_note("started_server", ["http://[::1]:8000/v1"]) == {
        "kind": "started_server", "endpoints": ["http://[::1]:8000/v1"], "api_key_env": None}


def test_endpoint_model_config_errors_name_the_key_and_never_a_pasted_key(tmp_path: Path) -> None:
    from hosted_fakes import KEY

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"eval": {"models": [
        {"label": "prompted"}, {"label": "teacher", "model": "gpt-teacher", "api_key_env": "TEACHER_API_KEY"}]}}))
    with pytest.raises(ConfigError, match=r"eval.models.1: Value error, api_key_env: is the key of this model's own "
                                          r"endpoints, and none are given"):
        load_config(RunConfig, path)
    path.write_text(yaml.safe_dump({"eval": {"models": [
        {"label": "teacher", "model": "gpt-teacher", "endpoints": [HOSTED], "api_key_env": KEY}]}}))
    with pytest.raises(ConfigError, match=r"eval.models.0.api_key_env: Value error, must be the NAME of an "
                                          r"environment variable") as e:
        load_config(RunConfig, path)
    assert KEY not in str(e.value)
    # a run config's model: fills the local models' base, not the one a hosted model names
    path.write_text(yaml.safe_dump({"model": "qwen2.5-0.5b", "eval": {"models": [
        {"label": "prompted"},
        {"label": "teacher", "model": "gpt-teacher", "endpoints": [HOSTED], "api_key_env": "TEACHER_API_KEY"}]}}))
    assert [m.model for m in load_config(RunConfig, path).eval.models] == ["qwen2.5-0.5b", "gpt-teacher"]


def test_the_shipped_teacher_student_config_plans_one_server_for_the_students(tmp_path: Path) -> None:
    cfg = load_config(RunConfig, Path(__file__).parents[2] / "configs" / "teacher-student.yaml")
    assert (cfg.bootstrap.endpoints, cfg.bootstrap.model, cfg.bootstrap.api_key_env) == (
        ["https://api.openai.com/v1"], "gpt-4o-mini", "TEACHER_API_KEY")
    adapter = fake_adapter_folder(tmp_path / "adapter")
    save_prompt_spec(PromptSpec(), adapter)
    models = [m.model_copy(update={"adapter": adapter}) if m.adapter else m for m in cfg.eval.models]
    groups = plan_groups(cfg.eval.model_copy(update={"models": models}), cfg.serve)
    assert [(g.base, [p.label for p in g.models], g.endpoints) for g in groups] == [
        ("smollm2-135m", ["prompted", "tuned"], []),
        ("gpt-4o-mini", ["teacher"], ["https://api.openai.com/v1"])]
    teacher = groups[1].models[0]
    assert (teacher.agent.wire, teacher.agent.chat_prefill, teacher.api_key_env) == ("chat", False, "TEACHER_API_KEY")
    # the hosted teacher's long rate-limit windows: about an hour of retries, in bootstrap and in eval
    assert [p.retries.model_dump() for p in (*groups[0].models, teacher)] == [
        {"max_retries": 4, "backoff_s": 0.5, "max_backoff_s": 60.0}] * 2 + [
        {"max_retries": 30, "backoff_s": 0.5, "max_backoff_s": 120.0}]
    assert cfg.bootstrap.retries == teacher.retries
