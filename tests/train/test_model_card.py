"""The model cards of an adapter folder and of its ``merged/`` (:mod:`actune.train.model_card`), built from the
folder's own files and checked with huggingface_hub's ``ModelCard``; the adapter pushed with a fake Hub client.
(The real training run writes them too: ``test_train_run.py``.)"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from huggingface_hub import ModelCard
from runtime.test_hub_push import FakeHfApi, factory

from actune.agent.prompt_spec import PromptSpec, save_prompt_spec
from actune.cli import main
from actune.runtime.hub_push import PushError, push
from actune.train.model_card import CardError, hub_base_model, write_folder_card, write_model_card

META = {
    "config": {"base_model": "smollm2-135m", "dataset": "", "max_length": 1024, "mask_observations": True,
               "lora": {"r": 8, "alpha": 16, "dropout": 0.05, "target_modules": "all-linear"},
               "learning_rate": 5e-4, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
               "num_train_epochs": 3.0, "max_steps": -1, "seed": 2},
    "method": "reflact", "dtype": "bfloat16", "processes": 1, "examples": 229, "train_examples": 204,
    "dev_examples": 25, "dropped_examples": 0, "task_ids": 163, "dev_task_ids": ["a", "b"], "steps": 153,
    "final_loss": 0.0526, "eval_losses": [{"step": 26, "epoch": 0.51, "loss": 0.17}, {"step": 52, "epoch": 1.02,
                                                                                      "loss": 0.1174}],
    "best_step": 52, "best_eval_loss": 0.1174, "tokens": 76963, "trained_tokens": 28295,
    "masked_fraction": 0.6324, "truncated_examples": 0, "merged": {"dir": "merged", "dtype": "bfloat16"},
}
SUMMARY = {"steps_method": "reflact", "wire": "chat", "stores": ["runs/a.jsonl", "runs/b.jsonl"],
           "methods": {"reflact": {"exported": 200}, "cot": {"exported": 29}}, "exported": 229, "tasks": 163}


def adapter(tmp_path, with_summary: bool = True):
    folder = tmp_path / "adapter"
    ds = tmp_path / "ds"
    ds.mkdir()
    if with_summary:
        (ds / "export_summary.json").write_text(json.dumps(SUMMARY))
    meta = {**META, "config": {**META["config"], "dataset": str(ds)}}
    for f in (folder, folder / "merged"):
        f.mkdir(parents=True)
        (f / "training_meta.json").write_text(json.dumps(meta))
        save_prompt_spec(PromptSpec(method="reflact", wire="chat"), f)
    (folder / "adapter_config.json").write_text("{}")
    (folder / "merged" / "config.json").write_text("{}")
    (folder / "merged" / "model.safetensors").write_text("w")
    return folder


def test_the_adapter_card_is_a_hub_model_card(tmp_path):
    folder = adapter(tmp_path)
    card = ModelCard.load(write_model_card(folder))
    assert card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct" and card.data.library_name == "peft"
    assert {"actune", "lora", "agent", "reflact"} <= set(card.data.tags)
    text = card.text
    assert "`reflact`: each step is `Reflection i: ...`" in text
    assert "229 examples over 163 tasks: 204 trained on, 25 in the dev slice (held out by task: 2 tasks)" in text
    assert "28295 carrying loss (63.2% masked" in text
    assert "from `runs/a.jsonl`, `runs/b.jsonl`: 229 kept episodes (per source method: reflact 200, cot 29)" in text
    assert "| 52 | 1.02 | 0.1174 |" in text and "those of step 52, the lowest dev loss (0.1174)" in text
    assert "LoRA r=8, alpha=16" in text and "4 sequences x 2 accumulation x 1 processes" in text
    assert '"wire": "chat"' in text and "method `reflact`, regime `zero_shot`, wire `chat`" in text
    assert "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --enable-lora --max-lora-rank 16" in text
    assert "actune serve --model smollm2-135m --adapter tuned=adapter" in text


def test_the_merged_card_names_transformers(tmp_path):
    folder = adapter(tmp_path, with_summary=False)
    card = ModelCard.load(write_model_card(folder / "merged", merged=True))
    assert card.data.library_name == "transformers" and "merged" in card.data.tags
    assert card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert "vllm serve org/name" in card.text and "Merged in bfloat16." in card.text
    assert f"- Dataset: `{tmp_path / 'ds'}`" in card.text  # the export summary is gone: the path is named


def test_base_models_are_named_by_hub_id_or_left_out(tmp_path):
    assert hub_base_model("smollm2-135m") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert hub_base_model("Qwen/Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"
    assert hub_base_model(str(tmp_path)) is None
    (tmp_path / "actune_model.json").write_text('{"name": "smollm2-135m"}')  # the folder actune built it in
    assert hub_base_model(str(tmp_path)) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    folder = adapter(tmp_path)
    meta = json.loads((folder / "training_meta.json").read_text())
    meta["config"]["base_model"] = "/models/local-base"
    (folder / "training_meta.json").write_text(json.dumps(meta))
    card = ModelCard.load(write_model_card(folder))
    assert card.data.base_model is None and "a local model folder (`/models/local-base`)" in card.text


def test_the_adapter_and_merged_model_push_as_model_repos(tmp_path):
    folder = adapter(tmp_path)
    write_model_card(folder)
    write_model_card(folder / "merged", merged=True)
    api = FakeHfApi()
    push(folder, "org/agent", api_factory=factory(api))
    assert api.calls[0][1]["repo_type"] == "model"
    assert api.uploaded == ["README.md", "actune_prompt.json", "adapter_config.json", "training_meta.json"]
    push(folder / "merged", "org/agent-merged", api_factory=factory(api))
    assert "config.json" in api.uploaded and "README.md" in api.uploaded


PEFT_TEMPLATE = ("---\nbase_model: /root/.cache/actune/models/smollm2-135m\nlibrary_name: peft\n---\n\n"
                 "# Model Card for Model ID\n\n<!-- Provide a quick summary of what the model is/does. -->\n")


def test_actune_card_makes_an_old_adapter_pushable(tmp_path, capsys):
    """An adapter trained before actune wrote cards holds PEFT's template: push refuses it and names `actune
    card`, which writes actune's card from the folder's files; then the push goes through."""
    folder = adapter(tmp_path)
    (folder / "README.md").write_text(PEFT_TEMPLATE)
    api = FakeHfApi()
    with pytest.raises(PushError, match=rf"write actune's card with `actune card {re.escape(str(folder))}`"):
        push(folder, "org/agent", api_factory=factory(api))
    assert main(["card", str(folder)]) == 0
    assert capsys.readouterr().out == f"wrote {folder / 'README.md'} (replacing PEFT's template card)\n"
    card = ModelCard.load(folder / "README.md")
    assert card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct" and card.data.library_name == "peft"
    assert card.text == ModelCard.load(write_model_card(folder)).text  # the card actune train writes
    push(folder, "org/agent", api_factory=factory(api))
    assert "README.md" in api.uploaded
    assert main(["card", str(folder)]) == 0  # rewriting actune's own card is fine
    assert capsys.readouterr().out == f"wrote {folder / 'README.md'} (replacing actune's card)\n"
    assert main(["card", str(folder / "merged")]) == 0  # a model folder: the merged card
    assert capsys.readouterr().out == f"wrote {folder / 'merged' / 'README.md'}\n"
    assert ModelCard.load(folder / "merged" / "README.md").data.library_name == "transformers"


def adapter_without_meta(tmp_path, *states: dict):
    """An adapter folder with no training_meta.json: adapter_config.json naming a base folder actune built,
    the prompt spec, and a checkpoint-N/trainer_state.json per state (the Trainer's log)."""
    base = tmp_path / "models" / "smollm2-135m"
    base.mkdir(parents=True)
    (base / "actune_model.json").write_text('{"name": "smollm2-135m"}')
    folder = tmp_path / "old-adapter"
    save_prompt_spec(PromptSpec(method="react", regime="zero_shot", wire="text"), folder)
    (folder / "adapter_config.json").write_text(json.dumps({
        "base_model_name_or_path": str(base), "r": 8, "lora_alpha": 16, "lora_dropout": 0.05,
        "target_modules": ["q_proj", "v_proj"], "peft_type": "LORA"}))
    for state in states:
        (folder / f"checkpoint-{state['global_step']}").mkdir()
        (folder / f"checkpoint-{state['global_step']}" / "trainer_state.json").write_text(json.dumps(state))
    return folder


def test_a_card_from_adapter_config_and_the_trainer_log(tmp_path):
    log = [{"loss": 1.5, "step": 10, "epoch": 0.5}, {"eval_loss": 0.9, "step": 10, "epoch": 0.5},
           {"loss": 0.8, "step": 20, "epoch": 1.0}, {"eval_loss": 0.7, "step": 20, "epoch": 1.0}]
    early = {"global_step": 10, "log_history": log[:2]}
    last = {"global_step": 20, "log_history": log, "best_global_step": 20, "best_metric": 0.7}
    folder = adapter_without_meta(tmp_path, last, early)  # checkpoint-20's log is the latest: it is read
    path, replaced = write_folder_card(folder)
    card = ModelCard.load(path)
    assert replaced == "nothing" and card.data.base_model == "HuggingFaceTB/SmolLM2-135M-Instruct"
    text = card.text
    assert ("LoRA r=8, alpha=16, dropout=0.05, target modules ['q_proj', 'v_proj']; the trainer settings are not "
            "recorded (no training_meta.json).") in text
    assert "Final training loss 0.8000 after 20 steps." in text
    assert "| 10 | 0.50 | 0.9000 |\n| 20 | 1.00 | 0.7000 |" in text
    assert "The saved weights are those of step 20, the lowest dev loss (0.7000)." in text
    assert "Not recorded: the folder has no training_meta.json (which `actune train` writes)" in text
    assert "Which tokens carried loss is not recorded." in text
    assert "actune serve --model smollm2-135m --adapter tuned=adapter" in text
    bare = adapter_without_meta(tmp_path / "bare")
    assert "Losses: not recorded (no training_meta.json or trainer_state.json in the folder)." in (
        ModelCard.load(write_folder_card(bare)[0]).text)



def test_an_adapter_config_or_trainer_log_of_the_wrong_shape_is_a_named_error(tmp_path):
    folder = adapter_without_meta(tmp_path, {"global_step": 5, "log_history": 5})
    with pytest.raises(CardError, match=r"old-adapter: its adapter_config.json or trainer_state.json is not as PEFT"):
        write_folder_card(folder)
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "r": "x"}))
    (folder / "checkpoint-5").joinpath("trainer_state.json").unlink()
    with pytest.raises(CardError, match=r"is not as PEFT and the Trainer write them \(ValueError"):
        write_folder_card(folder)
    assert not (folder / "README.md").exists()


def test_a_card_is_not_written_over_someone_elses_or_without_a_spec(tmp_path, capsys):
    folder = adapter(tmp_path)
    mine = "---\nlicense: mit\n---\n\n# My adapter\n"
    (folder / "README.md").write_text(mine)
    assert main(["card", str(folder)]) == 1
    assert capsys.readouterr().err == (f"actune card: {folder / 'README.md'}: a card that is neither actune's nor "
                                       "PEFT's template is there; --force replaces it\n")
    assert (folder / "README.md").read_text() == mine
    assert main(["card", str(folder), "--force"]) == 0
    assert capsys.readouterr().out == f"wrote {folder / 'README.md'} (replacing a card of its own)\n"
    (folder / "actune_prompt.json").unlink()
    assert main(["card", str(folder)]) == 1
    assert f"actune card: {folder}: no actune_prompt.json, so the card cannot say how" in capsys.readouterr().err
    (folder / "merged" / "training_meta.json").unlink()
    with pytest.raises(CardError, match=r"merged: no training_meta.json: the merged model's card is written from"):
        write_folder_card(folder / "merged")
    assert main(["card", str(tmp_path / "missing")]) == 1
    assert "neither an adapter folder (adapter_config.json) nor a model folder" in capsys.readouterr().err


def quickstart_run(tmp_path, monkeypatch):
    """A quickstart run's layout (out/react/round1/adapter with merged/, out/eval/react/report.json, the state
    file), run from tmp_path as the quickstart writes its report: paths relative to the current folder."""
    from test_card_eval import report

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    folder = adapter(tmp_path)
    (out / "react" / "round1").mkdir(parents=True)
    folder = folder.rename(out / "react" / "round1" / "adapter")
    (out / "quickstart-state.json").write_text("{}")
    path = out / "eval" / "react" / "report.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(report("out/react/round1/adapter", "out/react/round1/adapter/merged")))
    return folder, path


def test_actune_card_report_puts_the_eval_table_in_the_card(tmp_path, monkeypatch, capsys):
    folder, path = quickstart_run(tmp_path, monkeypatch)
    elsewhere = tmp_path / "copy" / "adapter"
    (tmp_path / "copy").mkdir()
    shutil.copytree(folder, elsewhere)  # not a quickstart layout: no report unless named
    assert main(["card", str(elsewhere)]) == 0
    assert capsys.readouterr().out == f"wrote {elsewhere / 'README.md'}\n"
    assert "## Evaluation" not in (elsewhere / "README.md").read_text()
    assert main(["card", str(folder), "--report", str(path)]) == 0
    assert capsys.readouterr().out == f"wrote {folder / 'README.md'} with the eval table of {path}\n"
    card = ModelCard.load(folder / "README.md")  # still a card the Hub reads
    text = card.text
    assert f"## Evaluation\n\nFrom `{path}` (`actune eval`, report `react-test`)" in text
    assert ("| tuned-merged | this adapter merged into its base (`merged/`) | `correct_grounded` | "
            "0.375 [0.275, 0.475] | +0.275 [+0.175, +0.375] | 0.001235 | 40 |") in text
    assert text.index("## Training") < text.index("## Evaluation") < text.index("## Prompt")
    before = (elsewhere / "README.md").read_text()
    assert main(["card", str(elsewhere), "--report", str(path)]) == 1  # the report is about other adapters
    assert capsys.readouterr().err == (
        f"actune card: {path}: the eval report does not evaluate {elsewhere} (nor its adapter or merged folder); it "
        "evaluates prompted: model smollm2-135m; tuned: adapter out/react/round1/adapter; tuned-merged: model "
        "out/react/round1/adapter/merged; other: adapter runs/other/adapter (paths are read from the current "
        "folder, as eval wrote them)\n")
    assert (elsewhere / "README.md").read_text() == before  # nothing written


def test_a_quickstart_adapter_gets_its_runs_eval_table(tmp_path, monkeypatch, capsys):
    folder, path = quickstart_run(tmp_path, monkeypatch)
    assert main(["card", str(folder / "merged")]) == 0
    # named relative to the current folder, as a card on the Hub should (not this machine's absolute path)
    assert capsys.readouterr().out == (f"wrote {folder / 'merged' / 'README.md'} with the eval table of "
                                       "out/eval/react/report.json\n")
    text = (folder / "merged" / "README.md").read_text()
    assert "From `out/eval/react/report.json` (`actune eval`, report `react-test`)" in text
    assert "| tuned-merged | this merged model | `correct` | 0.500 [0.400, 0.600] | +0.300 [+0.200, +0.400] | " \
           "0.0456 | 40 |" in text
    # the run's eval has not reached this adapter (its report names others): a card without the table, said so
    path.write_text(path.read_text().replace("out/react/round1/adapter", "out/react/round2/adapter"))
    assert main(["card", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert out == f"wrote {folder / 'README.md'}\n"
    assert err.startswith("actune card: no eval table: out/eval/react/report.json: the eval report does not "
                          f"evaluate {folder}")
    assert "## Evaluation" not in (folder / "README.md").read_text()


@pytest.mark.parametrize("meta, problem", [
    ("[1", r"training_meta.json:1: invalid JSON"),
    ('{"config": 3}', r"config.base_model missing or not a string"),
    (json.dumps({**META, "examples": None, "final_loss": "low"}), r"not the training_meta.json actune train writes \("),
])
def test_a_corrupt_training_meta_is_a_named_error_not_a_traceback_or_a_silent_fallback(tmp_path, capsys, meta,
                                                                                       problem):
    folder = adapter(tmp_path)
    (folder / "training_meta.json").write_text(meta)
    with pytest.raises(CardError, match=problem):
        write_model_card(folder)
    assert main(["card", str(folder)]) == 1
    assert re.search(problem, capsys.readouterr().err) and not (folder / "README.md").exists()
