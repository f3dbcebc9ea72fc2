"""RunConfig names the model once: ``model`` fills every section field the file leaves unset."""

from __future__ import annotations

from pathlib import Path

from actune.cli.run_config import RunConfig
from actune.config import load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_model_fills_the_unset_fields_of_every_section() -> None:
    run = load_config(RunConfig, None, ["model=my-model"])
    assert (run.serve.model, run.train.base_model) == ("my-model", "my-model")
    assert [(m.label, m.model) for m in run.eval.models] == [("prompted", "my-model"), ("finetuned", "my-model")]


def test_a_section_that_names_its_own_model_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("model: student\nserve: {model: teacher}\n"
                    "eval: {models: [{label: p}, {label: t, model: teacher}]}\n")
    run = load_config(RunConfig, path, [])
    assert (run.serve.model, run.train.base_model) == ("teacher", "student")
    assert [m.model for m in run.eval.models] == ["student", "teacher"]


def test_without_model_each_section_keeps_its_default() -> None:
    run = RunConfig(train={"base_model": "x"})
    assert (run.model, run.serve.model, run.train.base_model) == (None, "smollm2-135m", "x")


def test_the_shipped_configs_name_their_models_once() -> None:
    cpu = load_config(RunConfig, CONFIGS / "smollm2-cpu.yaml", [])
    assert {cpu.serve.model, cpu.train.base_model, *(m.model for m in cpu.eval.models)} == {"smollm2-135m"}
    hotpot = load_config(RunConfig, CONFIGS / "hotpotqa-react.yaml", [])
    assert (hotpot.serve.model, hotpot.train.base_model) == ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct")
    assert {m.model for m in hotpot.eval.models} == {"Qwen/Qwen2.5-1.5B-Instruct"}
