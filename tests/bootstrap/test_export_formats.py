"""``actune export --format openai|sharegpt|alpaca``: the exported examples as one JSONL file for another
trainer, with per-turn loss flags where the format has them; an OpenAI-messages file loads with
``datasets.load_dataset("json")`` and trains in TRL's own ``SFTTrainer`` with no actune code."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import pytest
from agent.fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

from actune.agent import AgentConfig, run_episode
from actune.bootstrap.export import OutputRefused, chat_example, export_rows, text_example
from actune.bootstrap.export_formats import EXPORT_FORMATS, export_file
from actune.bootstrap.importers import import_set
from actune.cli import main, stages
from actune.judge import judge, record_verdict
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import read_trajectories

TASK = Task(id="t1", question="Who makes the Walkman?", answer="Sony")
TASK2 = Task(id="t2", question="How long is the Danube?", answer="2,850 km")
CLEAN = [" I need the maker of the Walkman.\nAction 1: search[Walkman]", " It is made by Sony.\nAction 2: finish[Sony]"]
# an unreadable action (the loop answered it with a format hint), then a good end
HINTED = [" Search the Danube.\nAction 1: look up Danube", " Search the Danube.\nAction 2: search[Danube]",
          " It is 2,850 km long.\nAction 3: finish[2,850 km]"]


def make_store(path: Path) -> Path:
    cfg = AgentConfig(method="react", regime="zero_shot", wire="chat", chat_prefill=False, reprompt_action=False)
    with TrajectoryStore.open(path) as store:
        for task, replies in [(TASK, CLEAN), (TASK2, HINTED)]:
            traj = asyncio.run(run_episode(task, FakeEnvironment(), ScriptedLLM(list(replies)), cfg,
                                           scorer=exact_match_scorer, run_id="r"))
            store.append(record_verdict(traj, judge(traj)))
    return path


def tiny_llama(embedded_model):
    """The embedded model's tokenizer and a tiny random model of its vocabulary (2 layers, hidden size 32)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(embedded_model)
    torch.manual_seed(0)
    return tok, LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                             max_position_embeddings=2048, tie_word_embeddings=True))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_openai_messages_carry_weights_on_assistant_turns_only(tmp_path):
    store = make_store(tmp_path / "s.jsonl")
    summary, unmasked = export_file(store, tmp_path / "out.jsonl", "openai")
    assert (summary.exported, unmasked) == (2, 0)
    clean, hinted = read_jsonl(tmp_path / "out.jsonl")
    assert list(clean) == ["messages"]
    assert [(m["role"], m.get("weight")) for m in clean["messages"]] == [
        ("system", None), ("user", None), ("assistant", 1), ("user", None), ("assistant", 1)]
    assert clean["messages"][1]["content"] == "Question: Who makes the Walkman?"
    assert clean["messages"][3]["content"].startswith("Observation 1: Walkman is a brand")
    assert [m.get("weight") for m in hinted["messages"] if m["role"] == "assistant"] == [0, 1, 1]
    # the same text as the chat export, flags and all
    rows, _ = export_rows(store, "chat")
    assert [[(m["role"], m["content"]) for m in r["messages"]] for r in rows] == \
        [[(m["role"], m["content"]) for m in r["messages"]] for r in (clean, hinted)]
    assert [m["weight"] == 1 for m in hinted["messages"] if "weight" in m] == \
        [m["train"] for m in rows[1]["messages"] if m["role"] == "assistant"]


def test_an_openai_export_imports_back_to_the_same_steps(tmp_path):
    store = make_store(tmp_path / "s.jsonl")
    export_file(store, tmp_path / "out.jsonl", "openai")
    summary = import_set(tmp_path / "out.jsonl", tmp_path / "back.jsonl", "openai")
    # the hinted episode's unreadable action cannot be imported as a step: it is named, not dropped
    assert (summary.imported, summary.rejected) == (1, {"invalid_action": 1})
    original = next(t for t in read_trajectories(store) if t.task.id == "t1")
    back = next(read_trajectories(tmp_path / "back.jsonl"))
    assert [(s.type, s.text, s.iteration, s.action_name, s.action_arg) for s in back.steps] == \
        [(s.type, s.text, s.iteration, s.action_name, s.action_arg) for s in original.steps]
    # all but the system turn: the instruction names the actions of the importing env (wiki), not the fake's
    assert chat_example(back)["messages"][1:] == chat_example(original)["messages"][1:]


def test_sharegpt_and_alpaca_layouts(tmp_path):
    store = make_store(tmp_path / "s.jsonl")
    _, unmasked = export_file(store, tmp_path / "sharegpt.jsonl", "sharegpt")
    assert unmasked == 1  # the unreadable action: ShareGPT has no flag to leave it untrained
    clean, hinted = read_jsonl(tmp_path / "sharegpt.jsonl")
    assert clean["system"].startswith("Solve a question answering task")
    assert [t["from"] for t in clean["conversations"]] == ["human", "gpt", "human", "gpt"]
    assert clean["conversations"][2]["value"].startswith("Observation 1:")
    _, unmasked = export_file(store, tmp_path / "alpaca.jsonl", "alpaca")
    assert unmasked == 1 + 2 + 1  # the observations in the outputs, and the unreadable action
    alpaca = read_jsonl(tmp_path / "alpaca.jsonl")
    recs = list(read_trajectories(store))
    for row, traj in zip(alpaca, recs):
        assert row["input"] == "" and row["instruction"].endswith(f"Question: {traj.task.question}")
        assert row["instruction"] + "\n" + row["output"] == text_example(traj)["text"]
    with pytest.raises(ValueError, match="format 'actune'"):
        export_file(store, tmp_path / "x.jsonl", "actune")


def test_an_openai_export_loads_with_datasets_and_trains_in_trl_sft_trainer(tmp_path, embedded_model):
    """No actune code below the export: datasets, transformers and TRL only, on a tiny random model (2
    layers, hidden size 32) with the embedded model's tokenizer, one optimiser step."""
    store = make_store(tmp_path / "s.jsonl")
    export_file(store, tmp_path / "openai.jsonl", "openai")

    import torch
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    ds = load_dataset("json", data_files=str(tmp_path / "openai.jsonl"), split="train")
    assert ds.column_names == ["messages"] and len(ds) == 2
    assert [m.get("weight") for m in ds[1]["messages"]] == [None, None, 0, None, 1, None, 1]
    tok, model = tiny_llama(embedded_model)
    args = SFTConfig(output_dir=str(tmp_path / "sft"), max_steps=1, per_device_train_batch_size=2,
                     learning_rate=1e-3, max_length=512, report_to="none", save_strategy="no", logging_steps=1,
                     use_cpu=True, dataloader_num_workers=0)
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)
    out = trainer.train()
    assert out.global_step == 1 and torch.isfinite(torch.tensor(out.training_loss))



# FakeEnvironment's pages, and the loop's hint after the unreadable action
OBSERVATIONS = ["Walkman is a brand of portable audio players made by Sony.", "The Danube is about 2,850 km long.",
                "Write exactly one action"]


def _completion_text(row: dict) -> str:
    """What a record of the trl form trains: the step's text, or the turn's thought and its tool call."""
    if isinstance(row["completion"], str):
        return row["completion"]
    turn = row["completion"][0]
    calls = [c["function"]["arguments"] for c in turn.get("tool_calls") or []]
    return "\n".join([turn["content"], *calls])


@pytest.mark.parametrize("wire", ["chat", "text", "tools"])
def test_trl_export_keeps_the_masks_in_plain_trl_with_the_embedded_models_template(tmp_path, embedded_model, wire):
    """Issue #49: plain TRL (no actune code below the export) on the ``trl`` form of each wire, the embedded model's
    tokenizer and chat template (actune's ChatML-with-tools one for the tools wire, through TRL's own
    ``chat_template_path``): every observation token's label is -100, every trained turn's token is a label once,
    and the turn actune leaves untrained (an unreadable action, with its thought) is never one."""
    from actune.runtime.chat_templates import CHATML_TOOLS_TEMPLATE

    store = make_store(tmp_path / "s.jsonl")
    export_file(store, tmp_path / "trl.jsonl", "trl", wire=wire)
    rows = read_jsonl(tmp_path / "trl.jsonl")
    # one line per trained turn: 2 of the clean episode, 2 of the hinted one (its unreadable turn left out)
    assert len(rows) == 4
    assert [_completion_text(r).splitlines()[-1] for r in rows] == {
        "text": ["Action 1: search[Walkman]", "Action 2: finish[Sony]", "Action 2: search[Danube]",
                 "Action 3: finish[2,850 km]"],
        "chat": ["Action 1: search[Walkman]", "Action 2: finish[Sony]", "Action 2: search[Danube]",
                 "Action 3: finish[2,850 km]"],
        "tools": ['{"entity": "Walkman"}', '{"answer": "Sony"}', '{"entity": "Danube"}', '{"answer": "2,850 km"}'],
    }[wire]
    assert ("tools" in rows[0]) == (wire == "tools")

    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    tok, model = tiny_llama(embedded_model)
    template = {"chat_template_path": str(CHATML_TOOLS_TEMPLATE)} if wire == "tools" else {}
    args = SFTConfig(output_dir=str(tmp_path / "sft"), max_steps=1, per_device_train_batch_size=4,
                     learning_rate=1e-3, max_length=2048, report_to="none", save_strategy="no",
                     use_cpu=True, dataloader_num_workers=0, **template)
    ds = load_dataset("json", data_files=str(tmp_path / "trl.jsonl"), split="train")
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(len(rows))])
    for i, row in enumerate(rows):
        ids, labels = batch["input_ids"][i].tolist(), batch["labels"][i].tolist()
        labelled = tok.decode([t for t, lab in zip(ids, labels) if lab != -100])
        # the labels are the turn (and the template's end of turn or EOS), nothing of the prompt
        for part in _completion_text(row).split("\n"):
            assert part.strip() in labelled
        if wire == "tools":
            assert '<tool_call>\n{"name": "' in labelled
        assert tok.decode(ids).count(_completion_text(row).splitlines()[0].strip()) >= 1
        for obs in OBSERVATIONS:
            assert obs not in labelled  # every observation: masked
        assert "Who makes the Walkman?" not in labelled and "look up Danube" not in labelled
        assert "Search the Danube." not in labelled or i == 2  # the unreadable turn's thought: only as turn 2's
    assert trainer.train().global_step == 1


def test_a_file_export_never_replaces_a_store_or_a_file_it_did_not_write(tmp_path):
    store = make_store(tmp_path / "s.jsonl")
    kept = store.read_bytes()
    for overwrite in (False, True):  # the store, never
        with pytest.raises(OutputRefused, match=r"s\.jsonl: the output is the input"):
            export_file(store, store, "openai", overwrite=overwrite)
    assert store.read_bytes() == kept
    notes = tmp_path / "notes.jsonl"
    notes.write_text("mine\n")
    with pytest.raises(OutputRefused, match=r"notes\.jsonl: exists and is not .* card notes\.README\.md .*--overwrite"):
        export_file(store, notes, "openai")
    card = tmp_path / "new.README.md"  # a file of the user's where the card would go
    card.write_text("my readme")
    with pytest.raises(OutputRefused, match=r"new\.README\.md: exists"):
        export_file(store, tmp_path / "new.jsonl", "openai")
    assert notes.read_text() == "mine\n" and card.read_text() == "my readme" and not (tmp_path / "new.jsonl").exists()
    export_file(store, notes, "openai", overwrite=True)
    assert len(read_jsonl(notes)) == 2
    export_file(store, notes, "alpaca")  # now its own output: replaced as before
    assert list(read_jsonl(notes)[0]) == ["instruction", "input", "output"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.README.md", "notes.README.md", "notes.jsonl", "s.jsonl"]
    # notes.json shares notes.jsonl's card name: that card names notes.jsonl, so the user's notes.json is not an export's
    (tmp_path / "notes.json").write_text("mine too")
    with pytest.raises(OutputRefused, match=r"notes\.json: exists and is not"):
        export_file(store, tmp_path / "notes.json", "openai")
    assert (tmp_path / "notes.json").read_text() == "mine too"


def test_an_export_killed_after_its_card_is_resumed_by_the_same_command(tmp_path, monkeypatch):
    import actune.bootstrap.export_formats as formats

    store = make_store(tmp_path / "s.jsonl")
    out = tmp_path / "train.jsonl"

    def killed(path, **kw):
        raise KeyboardInterrupt
    monkeypatch.setattr(formats, "atomic_writer", killed)
    with pytest.raises(KeyboardInterrupt):
        export_file(store, out, "openai")
    monkeypatch.undo()
    assert (tmp_path / "train.README.md").is_file() and not out.exists()
    export_file(store, out, "openai")  # no --overwrite needed: the card says the file is its own
    assert len(read_jsonl(out)) == 2


def test_export_command_writes_the_chosen_format(tmp_path, capsys):
    store = make_store(tmp_path / "s.jsonl")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {store}\ntrain:\n  dataset: {tmp_path / 'ds'}\n")
    assert main(["export", str(cfg), "--format", "openai"]) == 0
    out = capsys.readouterr().out
    assert f"exported 2 kept trajectories (openai) in react steps from {store} to {tmp_path / 'ds'}.openai.jsonl" in out
    assert len(read_jsonl(tmp_path / "ds.openai.jsonl")) == 2 and not (tmp_path / "ds").exists()
    assert main(["export", str(cfg), "--format", "alpaca", "--out", str(tmp_path / "a.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "note: alpaca has no loss flag for 4 observation or unreadable-action turns" in out
    # trl in the run's wire: tools says which template a model without tools in its own must train with
    assert main(["export", str(cfg), "wire_format=tools", "--format", "trl", "--out", str(tmp_path / "t.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "(trl, tools wire)" in out and "SFTConfig(chat_template_path=" in out and "chatml_tools.jinja" in out
    assert all("tools" in r for r in read_jsonl(tmp_path / "t.jsonl"))
    assert main(["export", str(cfg), "--format", "trl", "--out", str(tmp_path / "x.jsonl")]) == 0
    assert "(trl, text wire)" in capsys.readouterr().out  # train.wire_format's default
    assert all(isinstance(r["prompt"], str) for r in read_jsonl(tmp_path / "x.jsonl"))
    assert main(["export", str(cfg)]) == 0  # the default is the datasets folder, as before
    assert (tmp_path / "ds" / "export_summary.json").is_file()
    cfg.write_text(f"bootstrap:\n  store: {tmp_path / 'none.jsonl'}\ntrain:\n  dataset: {tmp_path / 'ds'}\n")
    assert main(["export", str(cfg), "--format", "sharegpt"]) == 1
    assert "store not found" in capsys.readouterr().err


def test_the_command_offers_every_export_format():
    parser = argparse.ArgumentParser(prog="actune")
    stages.register(parser.add_subparsers(dest="command"))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["export"]
    assert next(a for a in sub._actions if a.dest == "format").choices == EXPORT_FORMATS
