"""The quickstart's eval: the models each method evaluates, on which split, and a later round's server as the
eval stage names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import estimate_stages
from actune.quickstart.evaluation import eval_config, eval_serving
from actune.quickstart.layout import Layout


@pytest.mark.parametrize("merged", [True, False], ids=["merged", "adapter"])
def test_a_later_round_serves_the_previous_model_as_the_eval_stage_names_it(tmp_path: Path, merged: bool) -> None:
    from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
    from actune.eval.run import adapter_name, plan_models

    cfg = load_quickstart("smoke", [f"train.merge={str(merged).lower()}"])
    layout = Layout(tmp_path)
    run = RunContext(cfg, layout, show_progress=False, log=lambda m: None)
    adapter = layout.adapter("react", 1)
    for folder in (adapter, adapter / "merged") if merged else (adapter,):
        folder.mkdir(parents=True)
        save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), folder)
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")

    serve, request = eval_serving(run, "react", "tuned-r1")
    # what round 2's server is started as and asked for is what the eval stage plans for tuned-r1, with round 2's
    # adapter not trained yet and with it trained (names are chosen among every model's bases, all known up front)
    planned = plan_models(eval_config(run, "react"), cfg.serve, ["tuned-r1"])[0]
    assert (serve.model, serve.served_name, request) == (planned.base, planned.record.name, planned.request_model)
    if merged:
        assert serve.model == serve.served_name == request == str(adapter / "merged") and serve.adapters == {}
    else:
        name = adapter_name("tuned-r1", adapter)
        assert (serve.model, serve.served_name) == (cfg.serve.model, cfg.serve.served_name)
        assert request == name and serve.adapters == {name: str(adapter)}
    prompted = plan_models(eval_config(run, "react"), cfg.serve, ["prompted"])[0]
    assert prompted.record.name == cfg.serve.served_name  # round 1's server, as bootstrap starts it
    round2 = layout.adapter("react", 2)
    for folder in (round2, round2 / "merged") if merged else (round2,):
        folder.mkdir(parents=True)
        save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), folder)
    later = plan_models(eval_config(run, "react"), cfg.serve, ["prompted", "tuned-r1"])  # the eval stage's plan
    assert [(p.base, p.record.name, p.request_model) for p in later] == [
        (prompted.base, prompted.record.name, prompted.request_model),
        (planned.base, planned.record.name, planned.request_model)]


def test_a_pilot_evaluates_on_the_dev_questions_and_never_reads_the_test_file(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke", ["eval_split=dev"])
    run = RunContext(cfg, Layout(tmp_path), show_progress=False, log=lambda m: None)
    assert eval_config(run, "react").tasks.path == str(tmp_path / "world" / "dev.jsonl")
    # the ETA counts the dev questions: 10 instead of 20
    assert cfg.split_sizes() == (40, 10) and load_quickstart("smoke").split_sizes() == (40, 20)
    assert estimate_stages(cfg, "cpu-bf16").eval < estimate_stages(load_quickstart("smoke"), "cpu-bf16").eval
