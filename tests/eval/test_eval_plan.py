"""Planning the models: an adapter's prompt spec configures its loop, requests go to its served name;
bad configs fail naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from actune.agent.config import AgentConfig
from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.cli.eval import qualify_overrides
from actune.config import ConfigError
from actune.eval.config import EvalConfig, EvalModel
from actune.eval.run import adapter_name, plan_models, store_path
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
    with pytest.raises(ConfigError, match="share one base model"):
        plan_models(EvalConfig(models=[EvalModel(label="a"), EvalModel(label="b", model="other")]), ServeConfig())
    with pytest.raises(ValidationError, match="appears twice"):
        EvalConfig(models=[EvalModel(label="a"), EvalModel(label="a")])
    with pytest.raises(ValidationError, match="names a folder"):
        EvalModel(label="../x")


def test_cli_overrides_may_omit_the_eval_prefix() -> None:
    assert qualify_overrides(["attempts=2", "serve.port=9", "eval.seed=1", "name=x"]) == [
        "eval.attempts=2", "serve.port=9", "eval.seed=1", "name=x"]
