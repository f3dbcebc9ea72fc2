"""Export: kept records of a real store -> a datasets folder whose text is exactly what the loop
sent and the model wrote (episodes run by the real loop with a ScriptedLLM over a fake encyclopedia)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent.fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

from actune.agent import AgentConfig, run_episode
from actune.agent.render import render_messages, trajectory_prompt_context
from actune.bootstrap.export import (
    SUMMARY_FILE,
    ExportError,
    OutputRefused,
    chat_example,
    export_dataset,
    export_rows,
    kept_records,
    text_example,
    write_export,
)
from actune.judge import judge, record_verdict
from actune.records.atomic_write import output_lock
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task

TASK = Task(id="t1", question="Who makes the Walkman?", answer="Sony")
TASK2 = Task(id="t2", question="How long is the Danube?", answer="2,850 km")

REPLIES_T1 = [" I need the maker of the Walkman.\nAction 1: search[Walkman]",
              " It is made by Sony.\nAction 2: finish[Sony]"]
# a step without a readable action (the loop answers with a format hint), then a good episode end
REPLIES_T2 = [" Search the Danube.\nAction 1: look up Danube",
              " Search the Danube.\nAction 2: search[Danube]",
              " It is 2,850 km long.\nAction 3: finish[2,850 km]"]
REPLIES_WRONG = [" Guess.\nAction 1: finish[Panasonic]"]


def episode(task, replies, wire="text", attempt=0):
    llm = ScriptedLLM(list(replies))
    cfg = AgentConfig(method="react", regime="zero_shot", wire=wire, chat_prefill=False, reprompt_action=False)
    traj = asyncio.run(run_episode(task, FakeEnvironment(), llm, cfg, scorer=exact_match_scorer, attempt=attempt,
                                   run_id="r"))
    return record_verdict(traj, judge(traj)), llm


def make_store(path: Path) -> dict:
    """Three episodes, two kept. Returns the ScriptedLLMs by (task id, attempt)."""
    llms = {}
    with TrajectoryStore.open(path) as store:
        for task, replies, attempt in [(TASK, REPLIES_T1, 0), (TASK, REPLIES_WRONG, 1), (TASK2, REPLIES_T2, 0)]:
            traj, llm = episode(task, replies, attempt=attempt)
            store.append(traj)
            llms[(task.id, attempt)] = llm
        assert (store.records, store.kept) == (3, 2)
    return llms


def test_text_segments_are_exactly_what_the_loop_sent_and_received(tmp_path):
    store = tmp_path / "store.jsonl"
    llms = make_store(store)
    recs = kept_records(store)
    assert [(t.task.id, t.attempt) for t in recs] == [("t1", 0), ("t2", 0)]
    ex = text_example(recs[0])
    # the last request held everything before the final reply; the reply is what the model wrote
    last = llms[("t1", 0)].calls[-1]
    assert ex["text"] == last.prompt + REPLIES_T1[-1] + "\n"
    assert "".join(s["text"] for s in ex["segments"]) == ex["text"]
    assert [s["train"] for s in ex["segments"]] == [False, True, True, False, True, True]
    assert ex["segments"][0]["text"] == llms[("t1", 0)].calls[0].prompt.removesuffix("Thought 1:")
    assert ex["segments"][3]["text"] == \
        "Observation 1: Walkman is a brand of portable audio players made by Sony.\n"
    assert ex["segments"][4]["text"] == "Thought 2: It is made by Sony.\n"
    assert ex["steps_method"] == "react" and ex["wire"] == "text" and ex["task_id"] == "t1"
    assert "Here are some examples" not in ex["text"]  # zero-shot: instruction + question only

    ex2 = text_example(recs[1])
    assert ex2["text"] == llms[("t2", 0)].calls[-1].prompt + REPLIES_T2[-1] + "\n"
    flags = [(s["text"].split(":", 1)[0], s["train"]) for s in ex2["segments"][1:]]
    # the unreadable action and the format hint after it are not trained; its thought is
    assert flags == [("Thought 1", True), ("Action 1", False), ("Observation 1", False),
                     ("Thought 2", True), ("Action 2", True), ("Observation 2", False),
                     ("Thought 3", True), ("Action 3", True)]


def test_chat_messages_match_what_the_loop_sent(tmp_path):
    traj, llm = episode(TASK, REPLIES_T1, wire="chat")
    ex = chat_example(traj)
    msgs = ex["messages"]
    last = llm.calls[-1].prompt
    assert [{"role": m["role"], "content": m["content"]} for m in msgs] == \
        last + [{"role": "assistant", "content": "Thought 2:" + REPLIES_T1[-1]}]
    assert [m["train"] for m in msgs] == [False, False, True, False, True]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant"]
    assert msgs[3]["content"].startswith("Observation 1: Walkman")
    assert [{"role": m["role"], "content": m["content"]} for m in msgs] == \
        render_messages(trajectory_prompt_context(traj), traj.steps)


def test_export_writes_a_dataset_atomically(tmp_path):
    from datasets import load_from_disk

    store = tmp_path / "store.jsonl"
    make_store(store)
    out = tmp_path / "ds"
    assert export_dataset(store, out, "text").exported == 2
    ds = load_from_disk(str(out))
    assert ds["task_id"] == ["t1", "t2"] and set(ds["wire"]) == {"text"}
    assert ds[0]["text"] == text_example(kept_records(store)[0])["text"]
    assert ds[0]["segments"][1] == {"text": "Thought 1: I need the maker of the Walkman.\n", "train": True}
    # re-export in chat format replaces the folder; no temp folders are left beside it
    assert export_dataset(store, out, "chat").exported == 2
    ds = load_from_disk(str(out))
    assert set(ds["wire"]) == {"chat"} and ds[0]["messages"][2]["role"] == "assistant"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "store.jsonl"]



def test_an_export_cut_between_its_two_renames_loses_no_dataset(tmp_path, monkeypatch):
    from datasets import load_from_disk

    from actune.records import atomic_write

    store = tmp_path / "store.jsonl"
    make_store(store)
    out = tmp_path / "ds"
    export_dataset(store, out, "text")
    real = atomic_write.os.replace
    calls = []

    def replace(src, dst):  # the new dataset cannot move in, nor the old one back: as if killed between
        calls.append(dst)
        if len(calls) >= 2:
            raise OSError("killed")
        real(src, dst)

    monkeypatch.setattr(atomic_write.os, "replace", replace)
    with pytest.raises(OSError, match="killed"):
        export_dataset(store, out, "chat")
    monkeypatch.undo()
    assert not out.exists() and len(list(tmp_path.iterdir())) == 2  # the store, and the old dataset aside
    # the next export puts the old dataset back first, even one that fails
    with pytest.raises(ExportError, match="store not found"):
        export_dataset(tmp_path / "missing.jsonl", out)
    assert set(load_from_disk(str(out))["wire"]) == {"text"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "store.jsonl"]

# --- an export replaces only its own earlier output (issue #47) --------------------------------------

def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_export_never_replaces_the_folder_holding_its_store(tmp_path):
    runs = tmp_path / "runs"
    store = runs / "t.jsonl"
    make_store(store)
    (runs / "notes.md").write_text("mine")
    before = _tree(runs)
    for overwrite in (False, True):  # not even when told to overwrite: it would delete what it reads
        with pytest.raises(OutputRefused, match=r"runs: the output contains the input .*t\.jsonl"):
            export_dataset(store, runs, overwrite=overwrite)
        with pytest.raises(OutputRefused, match="the output is the input"):
            export_dataset(store, store, overwrite=overwrite)
    assert _tree(runs) == before and sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_an_existing_folder_no_export_wrote_is_refused_unless_overwrite(tmp_path):
    store = tmp_path / "store.jsonl"
    make_store(store)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(OutputRefused, match=rf"mine: exists and is not this command's earlier output .*"
                                            rf"{SUMMARY_FILE}.*--overwrite"):
        export_dataset(store, out)
    assert _tree(out) == {"thesis.tex": b"years of work"}
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(OutputRefused, match="a_file: exists"):
        export_dataset(store, a_file)
    assert export_dataset(store, out, overwrite=True).exported == 2  # the user meant it
    assert (out / SUMMARY_FILE).is_file() and not (out / "thesis.tex").exists()


def test_its_own_earlier_output_and_an_empty_folder_are_replaced_as_before(tmp_path):
    store = tmp_path / "store.jsonl"
    make_store(store)
    out = tmp_path / "ds"
    out.mkdir()  # made beforehand, empty: nothing to lose
    assert export_dataset(store, out, "text").exported == 2
    assert export_dataset(store, out, "chat").exported == 2  # its own output: a rerun replaces it
    rows, summary = export_rows(store, "text")  # and so does the quickstart's way, on its resume
    assert write_export(rows, summary, out).exported == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "store.jsonl"]


def test_a_second_export_into_one_folder_is_refused_naming_the_holder(tmp_path):
    store = tmp_path / "store.jsonl"
    make_store(store)
    out = tmp_path / "ds"
    export_dataset(store, out, "text")
    before = _tree(out)
    with output_lock(out, ExportError):  # the first export, still writing
        with pytest.raises(ExportError, match=rf"ds: another process is writing it \(pid {os.getpid()}, .*lock "
                                              rf".*\.ds\.actune-lock\)"):
            export_dataset(store, out, "chat")
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "store.jsonl"]  # no .swap-old, no lock left
    assert export_dataset(store, out, "chat").exported == 2  # once the first is done


def test_export_errors_name_the_problem(tmp_path):
    with pytest.raises(ExportError, match="store not found"):
        export_dataset(tmp_path / "missing.jsonl", tmp_path / "ds")
    store = tmp_path / "store.jsonl"
    with TrajectoryStore.open(store) as s:
        s.append(episode(TASK, REPLIES_WRONG)[0])
    with pytest.raises(ExportError, match="no kept records"):
        export_dataset(store, tmp_path / "ds")
    assert not (tmp_path / "ds").exists()
    old = tmp_path / "old.jsonl"  # a kept record without info.prompt (written before the loop kept it)
    traj = episode(TASK, REPLIES_T1)[0]
    del traj.info["prompt"]
    with TrajectoryStore.open(old) as s:
        s.append(traj)
    with pytest.raises(ExportError, match=r"old.jsonl:1: episode '\w+' \(task 't1'\): .*has no info.prompt"):
        export_dataset(old, tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "store.jsonl"]
    # a record without a verdict is refused, as the store refuses it, not dropped without a word
    unjudged = tmp_path / "unjudged.jsonl"
    traj = episode(TASK, REPLIES_T1)[0]
    del traj.info["verdict"]
    unjudged.write_text(traj.to_json() + "\n")
    with pytest.raises(ExportError, match=r"unjudged.jsonl:1: record has no judge verdict"):
        export_dataset([store, unjudged], tmp_path / "ds")
