"""``actune import``: outside trajectory sets (FireAct's OpenAI-messages and Alpaca files, LLaMA-Factory's
ShareGPT, a ``datasets`` dataset) become store records that export and train like bootstrapped ones; every
record is imported or rejected with a reason and its ``file:line``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import pytest

from actune.bootstrap.config import ExportConfig
from actune.bootstrap.export import export_dataset, export_rows, kept_records, text_example
from actune.bootstrap.importers import (
    FORMATS,
    IMPORT_ENVS,
    ImportSetError,
    import_methods,
    import_set,
    task_id_for,
)
from actune.cli import main, stages
from actune.judge import verdict_of
from actune.records.store import TrajectoryStore
from actune.records.trajectory import Step, read_trajectories

DATA = Path(__file__).resolve().parents[1] / "data" / "import"
GPT = DATA / "fireact_gpt_hotpotqa.jsonl"
ALPACA = DATA / "fireact_alpaca_hotpotqa.json"
MULTI = DATA / "fireact_gpt_multimethod.jsonl"
DEFECTS = DATA / "fireact_gpt_defects.jsonl"
SHAREGPT = DATA / "sharegpt_react.json"
FIREACT = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "peer" / "fireact"


def shape(traj) -> list[tuple]:
    return [(s.type, s.text, s.iteration, s.action_name, s.action_arg) for s in traj.steps]



# --- FireAct's files --------------------------------------------------------------------------------

def test_fireact_messages_become_the_records_the_loop_writes(tmp_path):
    store = tmp_path / "s.jsonl"
    summary = import_set(GPT, store, "openai")
    assert (summary.total, summary.imported, summary.rejected) == (3, 3, {})
    recs = list(read_trajectories(store))
    t = recs[0]
    question = ("Who was once considered the best kick boxer in the world, however he has been involved in a number "
                "of controversies relating to his \"unsportsmanlike conducts\" in the sport and crimes of violence "
                "outside of the ring.")
    assert t.task.question == question and t.task.id == task_id_for(question) == task_id_for(question.upper())
    assert t.method == "react" and t.attempt == 0 and t.prediction == t.task.answer == "Badr Hari"
    assert [s.type for s in t.steps] == ["thought", "action", "observation", "thought", "answer"]
    assert shape(t)[1] == ("action", "search[best kick boxer in the world unsportsmanlike conducts crimes of "
                                     "violence]", 1, "search",
                           "best kick boxer in the world unsportsmanlike conducts crimes of violence")
    assert t.steps[2].text.startswith("Badr Hari (born 8 December 1984)")  # the label is the renderer's
    assert shape(t)[4] == ("answer", "finish[Badr Hari]", 2, "finish", "Badr Hari")
    verdict = verdict_of(t)
    assert verdict.kept and verdict.correct and not verdict.grounding_checked and not verdict.require_grounded
    imp = t.info["import"]
    assert imp["where"] == f"{GPT}:1" and (imp["format"], imp["line"], imp["index"]) == ("openai", 1, 0)
    assert imp["reward"] == "True" and imp["after_answer"] == ["Observation: Episode finished, reward = True"]
    assert "already filtered" in imp["kept_because"]
    text = text_example(t)["text"]
    assert text.endswith(f"Question: {question}\nThought 1: I need to search for the best kick boxer in the world "
                         "who has been involved in unsportsmanlike conducts and crimes of violence outside of the "
                         "ring.\nAction 1: search[best kick boxer in the world unsportsmanlike conducts crimes of "
                         "violence]\nObservation 1: Badr Hari (born 8 December 1984) is a Moroccan-Dutch kickboxer. "
                         "He is a former K-1 Heavyweight World Champion (2007\u20132008), It's Showtime Heavyweight "
                         "World ...\nThought 2: Badr Hari is the person who fits the description.\n"
                         "Action 2: finish[Badr Hari]\n")
    assert text.startswith("Solve a question answering task with interleaving Thought, Action, Observation steps.")


def test_alpaca_copies_give_the_same_steps_and_tasks(tmp_path):
    import_set(GPT, tmp_path / "gpt.jsonl", "openai")
    summary = import_set(ALPACA, tmp_path / "alpaca.jsonl", "alpaca")
    assert (summary.total, summary.imported) == (3, 3)
    gpt, alpaca = list(read_trajectories(tmp_path / "gpt.jsonl")), list(read_trajectories(tmp_path / "alpaca.jsonl"))
    assert [shape(t) for t in alpaca] == [shape(t) for t in gpt]
    assert [t.task.id for t in alpaca] == [t.task.id for t in gpt]
    assert alpaca[2].info["import"]["where"] == f"{ALPACA}[2]" and alpaca[2].info["import"]["line"] is None


def test_one_store_two_sets_and_a_rerun(tmp_path):
    store = tmp_path / "s.jsonl"
    import_set(GPT, store, "openai")
    summary = import_set(ALPACA, store, "alpaca")
    assert summary.imported == 3  # another set: the same questions are the same tasks, next attempt
    attempts: dict[str, list[int]] = {}
    for t in read_trajectories(store):
        attempts.setdefault(t.task.id, []).append(t.attempt)
    assert len(attempts) == 3 and all(a == [0, 1] for a in attempts.values())
    again = import_set(GPT, store, "openai")
    assert (again.total, again.imported, again.rejected) == (3, 0, {"already_imported": 3})
    assert again.examples["already_imported"][0] == f"{GPT}:1: imported before from {GPT}:1"
    # export's dedupe sees the two copies of each trajectory as one
    rows, export = export_rows(store, "text")
    assert (export.exported, export.methods["react"].duplicates) == (3, 3)


def test_multimethod_records_and_a_failed_one(tmp_path):
    summary = import_set(MULTI, tmp_path / "s.jsonl", "openai")
    assert (summary.total, summary.imported, summary.rejected) == (4, 3, {"failed_episode": 1})
    assert summary.examples["failed_episode"] == [
        f"{MULTI}:4: its last observation says it failed ('Observation: Episode finished, reward = False')"]
    react, reflexion, cot = read_trajectories(tmp_path / "s.jsonl")
    assert len(react.steps) == 8 and len(cot.steps) == 2 and cot.prediction == "1798"
    # FireAct's Reflexion writes its reflection inside a thought: it stays one ReAct thought
    assert "let me do a reflection" in reflexion.steps[-2].text and reflexion.steps[-2].type == "thought"
    assert "\n\n" not in reflexion.steps[-2].text


def test_defects_of_the_released_multitask_set_are_named(tmp_path):
    summary = import_set(DEFECTS, tmp_path / "s.jsonl", "openai")
    assert (summary.total, summary.imported) == (3, 0)
    assert summary.rejected == {"after_answer": 1, "no_action": 1, "no_question": 1}
    assert summary.examples["after_answer"] == [f"{DEFECTS}:1: turn 16: an assistant turn after the answer"]
    assert summary.examples["no_action"][0].startswith(f"{DEFECTS}:2: assistant turn 13: no action ('Thought: There")
    assert summary.examples["no_question"][0].startswith(f"{DEFECTS}:3: the first turn")
    table = summary.table()
    assert "3 records, 0 imported, 3 rejected" in table and "rejected      1  no_action" in table


# --- ShareGPT and malformed records ---------------------------------------------------------------

def test_sharegpt_turns_calls_and_observations(tmp_path):
    summary = import_set(SHAREGPT, tmp_path / "s.jsonl", "sharegpt")
    assert (summary.total, summary.imported) == (3, 2)
    assert summary.rejected == {"invalid_action": 1}
    assert "unknown action 'calculator'" in summary.examples["invalid_action"][0]
    walkman, danube = read_trajectories(tmp_path / "s.jsonl")
    assert walkman.task.question == "Who makes the Walkman?"  # the label is the renderer's
    assert walkman.steps[2].text == "Walkman is a brand of portable audio players made by Sony."  # one line
    assert walkman.info["import"]["system"] == ["You are a research agent."]
    # a function call is the action (no thought), a prose last turn with "Answer:" the answer
    assert shape(danube) == [("thought", "", 1, None, None), ("action", "search[Danube]", 1, "search", "Danube"),
                             ("observation", "The Danube is about 2,850 km long.", 1, None, None),
                             ("thought", "The page says it is about 2,850 km long.", 2, None, None),
                             ("answer", "finish[2,850 km]", 2, "finish", "2,850 km")]


def lines(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def msgs(*turns: tuple[str, str]) -> dict:
    return {"messages": [{"role": r, "content": c} for r, c in turns]}


Q = ("user", "Who makes the Walkman?")
SEARCH = ("assistant", "Thought: Search it.\nAction: search[Walkman]")
OBS = ("user", "Observation: Walkman is made by Sony.")
FINISH = ("assistant", "Thought: Sony.\nAction: finish[Sony]")


def test_every_malformed_record_is_counted_with_its_line(tmp_path):
    src = lines(tmp_path / "bad.jsonl", [
        msgs(Q, SEARCH, OBS, FINISH),                          # 1 fine
        '{"messages": [',                                      # 2 not JSON
        "[1, 2]",                                              # 3 not an object
        {"conversations": []},                                 # 4 no messages
        msgs(Q, ("robot", "hi")),                              # 5 unknown role
        msgs(Q, SEARCH, FINISH),                               # 6 no observation after the search
        msgs(Q, SEARCH, OBS),                                  # 7 no answer
        msgs(Q, ("assistant", "Thought: x\nAction: finish[]")),  # 8 empty answer
        msgs(Q, ("assistant", "Thought: x\nAction: search[Walkman")),  # 9 unreadable action
        msgs(Q, ("user", "more context"), FINISH),             # 10 a second user turn before any action
        "",                                                    # a blank line is no record
        msgs(Q, FINISH, SEARCH),                               # 12 a step after the answer
        msgs(Q, SEARCH, OBS, FINISH),                          # 13 the same record as line 1
    ])
    summary = import_set(src, tmp_path / "s.jsonl", "openai")
    assert summary.total == 12 and summary.imported == 1
    assert summary.imported + sum(summary.rejected.values()) == summary.total
    first = {reason: ex[0] for reason, ex in summary.examples.items()}
    assert summary.rejected == {"invalid_json": 1, "not_a_record": 1, "missing_field": 1, "bad_turn": 1,
                                "missing_observation": 1, "no_answer": 2, "invalid_action": 1, "missing_action": 1,
                                "after_answer": 1, "duplicate": 1}
    assert first["invalid_json"].startswith(f"{src}:2: not valid JSON")
    assert first["not_a_record"] == f"{src}:3: expected a JSON object, got list"
    assert first["bad_turn"].startswith(f"{src}:5: messages[1]: unknown role 'robot'")
    assert first["missing_observation"] == f"{src}:6: turn 2: two assistant turns with no observation between"
    assert summary.examples["no_answer"] == [f"{src}:7: the record ends without a final answer (finish[...])",
                                             f"{src}:8: the final answer is empty"]
    assert "has no closing ']'" in first["invalid_action"]
    assert first["duplicate"] == f"{src}:13: the same record as {src}:1"


def test_a_source_that_cannot_be_read_names_file_and_line(tmp_path, monkeypatch):
    with pytest.raises(ImportSetError, match="nope.jsonl: file not found"):
        import_set(tmp_path / "nope.jsonl", tmp_path / "s.jsonl", "openai")
    # a mistyped local path is never looked up on the Hub (which would send it out and retry for half a minute)
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    for local in [tmp_path / "fireact", "./fireact", "data/fireact", "runs/a/b", "fireact.parquet"]:
        with pytest.raises(ImportSetError, match=rf"^{local}: file not found$"):
            import_set(str(local), tmp_path / "s.jsonl", "openai")
    fifo = tmp_path / "pipe.jsonl"  # a FIFO or a device reads forever
    os.mkfifo(fifo)
    with pytest.raises(ImportSetError, match="pipe.jsonl: not a regular file or a dataset folder"):
        import_set(fifo, tmp_path / "s.jsonl", "openai")
    assert not (tmp_path / "s.jsonl").exists()
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"instruction": "q", "output": "x"},\n  {"instruction": \n]\n')
    with pytest.raises(ImportSetError, match=r"broken.json:4: not valid JSON"):
        import_set(broken, tmp_path / "s.jsonl", "alpaca")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"messages": []}\n{"messages": "caf\xe9"}\n')
    with pytest.raises(ImportSetError, match=r"latin1.jsonl:2: not UTF-8"):
        import_set(tmp_path / "latin1.jsonl", tmp_path / "s.jsonl", "openai")
    with pytest.raises(ImportSetError, match="unknown format 'csv'"):
        import_set(GPT, tmp_path / "s.jsonl", "csv")
    with pytest.raises(ImportSetError, match="env 'alfworld'"):
        import_set(GPT, tmp_path / "s.jsonl", "openai", env="alfworld")
    assert not (tmp_path / "s.jsonl").exists() or (tmp_path / "s.jsonl").read_text() == ""


def test_a_dataset_that_does_not_load_is_one_error(tmp_path, monkeypatch):
    import datasets

    def offline(*args, **kwargs):  # what load_dataset raises for a Hub id it cannot reach (after 25 s of retries)
        raise ConnectionError("Couldn't reach 'no/such-dataset' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(ImportSetError, match="no/such-dataset: cannot load it as a dataset .split 'train'.: "
                                             "ConnectionError: Couldn't reach"):
        import_set("no/such-dataset", tmp_path / "s.jsonl", "openai")


def test_a_dataset_folder_goes_through_datasets_load_dataset(tmp_path):
    """The Hub path (``datasets.load_dataset(id)``) on a local folder: the same records, where = id[split][i]."""
    folder = tmp_path / "fireact-set"
    folder.mkdir()
    shutil.copy(GPT, folder / "train.jsonl")
    summary = import_set(str(folder), tmp_path / "s.jsonl", "openai")
    assert (summary.total, summary.imported) == (3, 3)
    import_set(GPT, tmp_path / "file.jsonl", "openai")
    from_folder, from_file = list(read_trajectories(tmp_path / "s.jsonl")), list(read_trajectories(tmp_path / "file.jsonl"))
    assert [shape(t) for t in from_folder] == [shape(t) for t in from_file]
    assert from_folder[1].info["import"]["where"] == f"{folder}[train][1]"
    with pytest.raises(ImportSetError, match="split 'test'"):
        import_set(str(folder), tmp_path / "s2.jsonl", "openai", split="test")


# --- imported records in the rest of the pipeline ---------------------------------------------------

def test_imported_records_export_and_mask_like_bootstrapped_ones(tmp_path, embedded_model):
    from datasets import load_from_disk
    from transformers import AutoTokenizer

    from actune.train.masking import tokenize_messages, tokenize_segments, trained_spans

    store = tmp_path / "s.jsonl"
    import_set(GPT, store, "openai")
    export_dataset(store, tmp_path / "text", "text")
    export_dataset(store, tmp_path / "chat", "chat")
    text, chat = load_from_disk(str(tmp_path / "text")), load_from_disk(str(tmp_path / "chat"))
    assert len(text) == len(chat) == 3 and set(text["steps_method"]) == {"react"}
    # the card says where they came from: an import-only export is not "bootstrapped"
    card = (tmp_path / "text" / "README.md").read_text()
    assert "3 agent episodes over 3 tasks (imported from trajectories made elsewhere (`actune import`))" in card
    assert "bootstrapped" not in card.split("## Source")[0]
    tok = AutoTokenizer.from_pretrained(embedded_model)
    segs = text[0]["segments"]
    assert [s["train"] for s in segs] == [False, True, True, False, True, True]
    enc = tokenize_segments(tok, segs)
    full, spans = trained_spans(segs)
    trained = tok.decode([i for i, lab in zip(enc.input_ids, enc.labels) if lab != -100])
    assert trained == "".join(full[a:b] for a, b in spans) and "Observation" not in trained
    msgs_ = chat[0]["messages"]
    assert [(m["role"], m["train"]) for m in msgs_] == [("system", False), ("user", False), ("assistant", True),
                                                        ("user", False), ("assistant", True)]
    enc = tokenize_messages(tok, msgs_)
    assert 0 < enc.trained_tokens < len(enc.input_ids)


def hand_react(task_id: str, question: str, entity: str, answer: str):
    """A bootstrapped-style kept ReAct record (as tests/bootstrap/test_export_mixing builds them)."""
    from actune.agent.render import instruction_for
    from actune.judge import judge, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    steps = [Step("thought", f"Search {entity}.", 1), Step("action", f"search[{entity}]", 1, "search", entity),
             Step("observation", f"{entity}: {answer}.", 1), Step("thought", f"It is {answer}.", 2),
             Step("answer", f"finish[{answer}]", 2, action_name="finish", action_arg=answer)]
    t = Trajectory(task=TaskRecord(task_id, question, answer), method="react", steps=steps, prediction=answer,
                   correct=True, run_id="r", episode_id=task_id,
                   info={"prompt": {"method": "react", "env": "wiki",
                                    "instruction": instruction_for("react", "wiki", "search[x]\nfinish[x]"),
                                    "question": f"Question: {question}", "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def test_imported_records_mix_with_bootstrapped_ones_at_a_share(tmp_path):
    boot = tmp_path / "boot.jsonl"
    with TrajectoryStore.open(boot) as st:
        for i, (entity, answer) in enumerate([("Walkman", "Sony"), ("Danube", "Europe"), ("Rhine", "Europe")]):
            st.append(hand_react(f"b{i}", f"Where is {entity}?", entity, answer))
    imported = tmp_path / "cot.jsonl"
    summary = import_set(MULTI, imported, "openai", method="cot")
    # only FireAct's one-step CoT record is a well-ordered CoT episode
    assert summary.imported == 1 and summary.rejected == {"order_problems": 2, "failed_episode": 1}
    cfg = ExportConfig(stores=[imported], method_shares={"react": 2, "cot": 1})
    rows, export = export_rows([boot, imported], "chat", cfg)
    assert sorted(r["method"] for r in rows) == ["cot", "react", "react"]
    assert export.methods["react"].shares == 1
    cot_row = next(r for r in rows if r["method"] == "cot")
    assert cot_row["steps_method"] == "react" and cot_row["messages"][-1]["content"].endswith("finish[1798]")


# --- the command ------------------------------------------------------------------------------------

def test_import_command_prints_counts_and_fails_in_one_line(tmp_path, capsys):
    store = tmp_path / "s.jsonl"
    assert main(["import", str(MULTI), "--format", "openai", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"{MULTI} (openai): 4 records, 3 imported, 1 rejected -> {store} (method react, env wiki)" in out
    assert "rejected      1  failed_episode" in out and f"e.g. {MULTI}:4:" in out
    assert len(kept_records(store)) == 3
    assert main(["import", str(tmp_path / "none.jsonl"), "--format", "openai", "--store", str(store)]) == 1
    assert capsys.readouterr().err == f"actune import: {tmp_path / 'none.jsonl'}: file not found\n"


def test_the_command_offers_what_the_importer_knows():
    parser = argparse.ArgumentParser(prog="actune")
    stages.register(parser.add_subparsers(dest="command"))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["import"]
    choices = {a.dest: tuple(a.choices) for a in sub._actions if a.choices}
    assert choices == {"format": FORMATS, "method": tuple(import_methods())}
    # --env takes any environment name (tests/cli/test_env_argument.py), the built-ins of IMPORT_ENVS among them
    assert all(next(a for a in sub._actions if a.dest == "env").type(name) == name for name in IMPORT_ENVS)


# --- the full released files ------------------------------------------------------------------------

@pytest.mark.shared
@pytest.mark.skipif(not FIREACT.exists(), reason="../shared is absent")
@pytest.mark.parametrize(("name", "fmt", "total", "imported", "rejected"), [
    ("gpt_format/hotpotqa.jsonl", "openai", 500, 500, {}),
    ("alpaca_format/hotpotqa.json", "alpaca", 500, 500, {}),
    ("gpt_format/hotpotqa_multimethod.jsonl", "openai", 733, 693, {"failed_episode": 40}),
])
def test_fireact_released_files_are_accounted_for(tmp_path, name, fmt, total, imported, rejected):
    summary = import_set(FIREACT / name, tmp_path / "s.jsonl", fmt)
    assert (summary.total, summary.imported, summary.rejected) == (total, imported, rejected)
    assert len(kept_records(tmp_path / "s.jsonl")) == imported


@pytest.mark.slow
def test_a_lora_trains_on_an_imported_set(tmp_path, embedded_model):
    """actune's own recipe, one step of a rank-4 LoRA on the embedded model, on FireAct records only."""
    from actune.agent.prompt_spec import load_prompt_spec
    from actune.train.config import LoraSettings, TrainConfig
    from actune.train.sft import train

    store = tmp_path / "s.jsonl"
    import_set(GPT, store, "openai")
    export_dataset(store, tmp_path / "ds", "text")
    cfg = TrainConfig(base_model=str(embedded_model), dataset=tmp_path / "ds", output_dir=tmp_path / "adapter",
                      lora=LoraSettings(r=4, alpha=8, dropout=0.0), learning_rate=5e-3, warmup_ratio=0.0, max_steps=1,
                      per_device_train_batch_size=3, max_length=256, dtype="float32", save_steps=1000,
                      eval_fraction=0)
    res = train(cfg, log=lambda line: None)
    assert res.steps == 1 and res.examples == 3 and 0 < res.trained_tokens < res.tokens
    assert load_prompt_spec(tmp_path / "adapter").method == "react"
    tasks = json.loads((tmp_path / "adapter" / "training_tasks.json").read_text())
    assert sorted(t["id"] for t in tasks) == sorted(t.task.id for t in read_trajectories(store))


def test_the_import_command_exits_non_zero_when_nothing_could_be_imported(tmp_path: Path, capsys) -> None:
    openai_file = DATA / "fireact_gpt_hotpotqa.jsonl"
    # the wrong layout for the file: every record rejected, exit 1 with a hint
    assert main(["import", str(openai_file), "--format", "alpaca", "--store", str(tmp_path / "a.jsonl")]) == 3
    assert "none of the 3 records was imported" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["import", str(empty), "--format", "openai", "--store", str(tmp_path / "b.jsonl")]) == 3
    assert "holds no records" in capsys.readouterr().err
    assert not (tmp_path / "b.jsonl").exists()  # no empty store is left behind
    # the right one: 0; again: nothing new but nothing wrong, 0
    assert main(["import", str(openai_file), "--format", "openai", "--store", str(tmp_path / "c.jsonl")]) == 0
    assert main(["import", str(openai_file), "--format", "openai", "--store", str(tmp_path / "c.jsonl")]) == 0


def test_malformed_tool_calls_are_rejected_records_not_a_crash(tmp_path):
    def with_calls(calls) -> dict:
        return {"messages": [{"role": "user", "content": Q[1]},
                             {"role": "assistant", "content": "", "tool_calls": calls}]}

    deep = "[" * 100_000 + "]" * 100_000  # nested past Python's recursion limit
    src = lines(tmp_path / "calls.jsonl", [
        with_calls(5), with_calls(True), with_calls({"function": {"name": "search", "arguments": "{}"}}),
        with_calls([deep]), with_calls([{"function": {"name": "search", "arguments": '{"q": ' + deep + "}"}}]),
    ])
    summary = import_set(src, tmp_path / "s.jsonl", "openai")
    # the deep arguments are kept as the text they are: a search, and then no answer
    assert (summary.total, summary.imported, summary.rejected) == (5, 0, {"invalid_action": 4, "no_answer": 1})
    assert summary.examples["invalid_action"] == [  # the first three of a reason are shown
        f"{src}:{i}: messages[1]: tool_calls must be a list of calls, got {kind}" for i, kind in
        ((1, "int"), (2, "bool"), (3, "dict"))]
