"""Export mixing (FireAct-style): records of several methods and stores converted into one step format,
near-duplicates dropped, tasks capped, method shares drawn, and a summary of what each filter removed.
Records are hand-built as the loop writes them (``info["prompt"]`` holds the prompt head; verdict kept)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from actune.agent.render import instruction_for, render_messages, render_text, trajectory_prompt_context
from actune.bootstrap.config import BootstrapConfig, ExportConfig
from actune.bootstrap.export import (
    SUMMARY_FILE,
    ExportError,
    _share_counts,
    convert_steps,
    export_dataset,
    export_rows,
    near_duplicates,
)
from actune.cli import stages
from actune.cli.stages import QUALIFY
from actune.judge import judge, record_verdict, verdict_of
from actune.records.trajectory import Step, TaskRecord, Trajectory, TrajectoryFormatError, write_trajectories

ACTIONS = "(1) search[entity]\n(2) finish[answer]"
REACT_INSTRUCTION = instruction_for("react", "wiki", ACTIONS)
REFLACT_INSTRUCTION = instruction_for("reflact", "wiki", ACTIONS)
QUESTIONS = {"t1": "Who makes the Walkman?", "t2": "How long is the Danube?", "t3": "Where is Liège?",
             "t4": "What does [SEP] mark?"}


def make(task_id: str, method: str, steps: list[Step], *, prompt_method: str | None = None, answer: str = "Sony",
         attempt: int = 0, info: dict | None = None) -> Trajectory:
    """A kept record of ``method`` whose steps are in ``prompt_method``'s format (default: the method's)."""
    fmt = prompt_method or method
    t = Trajectory(task=TaskRecord(task_id, QUESTIONS[task_id], answer), method=method, steps=steps,
                   prediction=answer, correct=True, attempt=attempt, run_id="r",
                   episode_id=f"{task_id}-{method}-{attempt}",
                   info={**(info or {}), "prompt": {"method": fmt, "env": "wiki",
                                                    "instruction": instruction_for(fmt, "wiki", ACTIONS),
                                                    "question": f"Question: {QUESTIONS[task_id]}",
                                                    "finish_action": "finish"}})
    return record_verdict(t, judge(t))


def react(task_id: str, thought: str = "Search Walkman.", entity: str = "Walkman", answer: str = "Sony",
          attempt: int = 0, method: str = "react") -> Trajectory:
    steps = [Step("thought", thought, 1, tokens=5, latency_s=0.1),
             Step("action", f"search[{entity}]", 1, action_name="search", action_arg=entity),
             Step("observation", f"{entity} is made by {answer}.", 1, tokens=6),
             Step("thought", f"It is {answer}.", 2, tokens=4, latency_s=0.2),
             Step("answer", f"finish[{answer}]", 2, action_name="finish", action_arg=answer)]
    return make(task_id, method, steps, prompt_method="react", answer=answer, attempt=attempt)


def reflact(task_id: str = "t1") -> Trajectory:
    steps = [Step("reflection", "Nothing is known yet; I need the maker.", 1, tokens=9, latency_s=0.3),
             Step("action", "search[Walkman]", 1, action_name="search", action_arg="Walkman", tokens=3),
             Step("observation", "Walkman is made by Sony.", 1, tokens=6),
             Step("reflection", "The maker is Sony: the goal is reached.", 2, tokens=10, latency_s=0.4),
             Step("answer", "FINAL ANSWER: Sony", 2, action_name="finish", action_arg="Sony", tokens=2)]
    return make(task_id, "reflact", steps)


def cot(task_id: str = "t1", reasoning: str = "Let's think step by step. The Walkman is a\nSony product.",
        answer: str = "Sony", method: str = "cot", attempt: int = 0) -> Trajectory:
    steps = [Step("thought", reasoning, 1, tokens=12, latency_s=0.5),
             Step("answer", answer, 1, action_name="answer", action_arg=answer)]
    return make(task_id, method, steps, prompt_method="cot", answer=answer, attempt=attempt)


# --- conversion -----------------------------------------------------------------------------------

def test_cot_converts_to_one_react_thought_and_finish():
    t = cot()
    before = t.to_dict()
    out = convert_steps(t, "react", REACT_INSTRUCTION)
    assert t.to_dict() == before  # the input is never changed
    assert out.steps == [Step("thought", "The Walkman is a Sony product.", 1, tokens=12, latency_s=0.5),
                         Step("answer", "finish[Sony]", 1, action_name="finish", action_arg="Sony")]
    assert out.info["prompt"] == {"method": "react", "env": "wiki", "instruction": REACT_INSTRUCTION,
                                  "question": "Question: Who makes the Walkman?", "finish_action": "finish"}
    assert out.info["converted_from"] == "cot" and out.method == "cot"
    assert render_text(trajectory_prompt_context(out), out.steps) == (
        f"{REACT_INSTRUCTION}\nQuestion: Who makes the Walkman?\n"
        "Thought 1: The Walkman is a Sony product.\nAction 1: finish[Sony]\n")


def test_cot_sc_and_a_hybrid_that_answered_by_cot_sc_convert_like_cot():
    t = cot(method="cot_sc")
    t.steps[0].meta, t.steps[1].meta = {"sample": 3}, {"votes": 5, "n": 7}
    out = convert_steps(t, "react", REACT_INSTRUCTION)
    assert out.steps == [Step("thought", "The Walkman is a Sony product.", 1, tokens=12, latency_s=0.5,
                              meta={"sample": 3}),
                         Step("answer", "finish[Sony]", 1, action_name="finish", action_arg="Sony",
                              meta={"votes": 5, "n": 7})]
    hybrid = cot(method="cotsc_react")
    assert convert_steps(hybrid, "react", REACT_INSTRUCTION).steps == convert_steps(cot(), "react",
                                                                                     REACT_INSTRUCTION).steps


def test_standard_converts_without_inventing_a_thought():
    t = make("t1", "standard", [Step("answer", "Sony", 1, action_name="answer", action_arg="Sony", tokens=2,
                                     latency_s=0.1)])
    out = convert_steps(t, "react", REACT_INSTRUCTION)
    assert out.steps == [Step("thought", "", 1),
                         Step("answer", "finish[Sony]", 1, action_name="finish", action_arg="Sony", tokens=2,
                              latency_s=0.1)]
    assert render_text(trajectory_prompt_context(out), out.steps).endswith(
        "Question: Who makes the Walkman?\nThought 1: \nAction 1: finish[Sony]\n")


def test_cot_converts_to_one_reflection_and_final_answer():
    out = convert_steps(cot(), "reflact", REFLACT_INSTRUCTION)
    assert out.steps == [Step("reflection", "The Walkman is a Sony product.", 1, tokens=12, latency_s=0.5),
                         Step("answer", "FINAL ANSWER: Sony", 1, action_name="finish", action_arg="Sony")]
    assert render_text(trajectory_prompt_context(out), out.steps) == (
        f"{REFLACT_INSTRUCTION}\nQuestion: Who makes the Walkman?\n"
        "Reflection 1: The Walkman is a Sony product.\nFINAL ANSWER: Sony\n")


def test_reflact_converts_to_react_and_renders_as_a_native_react_record():
    t = reflact()
    out = convert_steps(t, "react", REACT_INSTRUCTION)
    assert out.steps == [
        Step("thought", "Nothing is known yet; I need the maker.", 1, tokens=9, latency_s=0.3),
        Step("action", "search[Walkman]", 1, action_name="search", action_arg="Walkman", tokens=3),
        Step("observation", "Walkman is made by Sony.", 1, tokens=6),
        Step("thought", "The maker is Sony: the goal is reached.", 2, tokens=10, latency_s=0.4),
        Step("answer", "finish[Sony]", 2, action_name="finish", action_arg="Sony", tokens=2)]
    assert t.steps[0].type == "reflection" and t.steps[-1].text == "FINAL ANSWER: Sony"  # input unchanged
    native = make("t1", "react", [
        Step("thought", "Nothing is known yet; I need the maker.", 1),
        Step("action", "search[Walkman]", 1, action_name="search", action_arg="Walkman"),
        Step("observation", "Walkman is made by Sony.", 1),
        Step("thought", "The maker is Sony: the goal is reached.", 2),
        Step("answer", "finish[Sony]", 2, action_name="finish", action_arg="Sony")])
    for render in (render_text, render_messages):
        assert render(trajectory_prompt_context(out), out.steps) == \
            render(trajectory_prompt_context(native), native.steps)


def test_what_cannot_be_converted():
    assert convert_steps(react("t1"), "reflact", REFLACT_INSTRUCTION) is None
    act = make("t1", "act", [Step("answer", "finish[Sony]", 1, action_name="finish", action_arg="Sony")])
    assert convert_steps(act, "react", REACT_INSTRUCTION) is None
    pre = make("t1", "preflect", [Step("plan", "search[Walkman], then finish[answer].", 1),
                                  Step("critique", "PASS", 1), *react("t1").steps])
    assert convert_steps(pre, "react", REACT_INSTRUCTION) is None
    # a hybrid is decided by the format of its steps: react_cotsc that answered in its ReAct phase
    hybrid = react("t1", method="react_cotsc")
    assert convert_steps(hybrid, "react").steps == hybrid.steps
    assert convert_steps(hybrid, "reflact", REFLACT_INSTRUCTION) is None
    with pytest.raises(ValueError, match="needs the react instruction"):
        convert_steps(cot(), "react")


# --- dedupe, cap, shares --------------------------------------------------------------------------

def store(path: Path, records: list[Trajectory]) -> Path:
    write_trajectories(path, records)
    return path


def rows(out: Path) -> list[dict]:
    from datasets import load_from_disk

    return load_from_disk(str(out)).to_list()


def test_dedupe_drops_a_near_duplicate_and_keeps_a_different_one(tmp_path):
    a = react("t1", "I need to search the Walkman.", attempt=0)
    near = react("t1", "I need to  search the walkman!", attempt=1)  # case, spacing, one character
    other = react("t1", "I need to search the Walkman.", entity="Sony Walkman", attempt=2)  # another action
    assert near_duplicates(a, near, 0.9) and not near_duplicates(a, near, 1.0)
    assert not near_duplicates(a, other, 0.0)
    s = store(tmp_path / "s.jsonl", [a, near, other])
    summary = export_dataset(s, tmp_path / "ds", config=ExportConfig(max_per_task=None))
    assert [(r["task_id"], r["attempt"]) for r in rows(tmp_path / "ds")] == [("t1", 0), ("t1", 2)]
    assert summary.methods["react"].duplicates == 1 and summary.exported == 2
    summary = export_dataset(s, tmp_path / "ds", config=ExportConfig(max_per_task=None, dedupe_similarity=1.0))
    assert summary.exported == 3 and summary.methods["react"].duplicates == 0


def test_cap_per_task_keeps_the_first_ones(tmp_path):
    thoughts = ["Search the Walkman.", "Who made it? Look it up.", "A brand: find its page first.", "Hm."]
    recs = [react("t1", thought, attempt=i) for i, thought in enumerate(thoughts)] + [react("t2", entity="Danube", answer="2,850 km")]
    s = store(tmp_path / "s.jsonl", recs)
    summary = export_dataset(s, tmp_path / "ds", config=ExportConfig(max_per_task=2))
    assert [(r["task_id"], r["attempt"]) for r in rows(tmp_path / "ds")] == [("t1", 0), ("t1", 1), ("t2", 0)]
    assert (summary.methods["react"].capped, summary.exported, summary.tasks) == (2, 3, 2)
    assert export_dataset(s, tmp_path / "ds", config=ExportConfig(max_per_task=None)).exported == 5


def test_share_counts_are_the_largest_total_every_method_can_fill():
    assert _share_counts({"react": 0.7, "cot": 0.3}, {"react": 10, "cot": 10}) == {"react": 10, "cot": 4}
    assert _share_counts({"react": 0.7, "cot": 0.3}, {"react": 3, "cot": 10}) == {"react": 3, "cot": 1}
    assert _share_counts({"react": 7, "cot": 3}, {"react": 3, "cot": 10}) == {"react": 3, "cot": 1}
    assert _share_counts({"react": 0.5, "cot": 0.5}, {"react": 4}) == {"react": 0, "cot": 0}


def test_shares_pick_the_exact_counts_spread_across_tasks(tmp_path):
    reacts = [react(t, thought, attempt=a) for t in ("t1", "t2", "t3")
              for a, thought in enumerate(["Search the Walkman.", "Who made it? Look it up."])]  # two per task
    cots = [cot("t1"), cot("t4", "The token marks a boundary.", "a boundary")]
    acts = [make("t2", "act", [Step("answer", "finish[Sony]", 1, action_name="finish", action_arg="Sony")])]
    s = store(tmp_path / "s.jsonl", reacts + cots + acts)
    cfg = ExportConfig(method_shares={"react": 0.6, "cot": 0.4}, seed=3, max_per_task=None)
    summary = export_dataset(s, tmp_path / "ds", config=cfg)
    got = rows(tmp_path / "ds")
    # N = min(6 / 0.6, 2 / 0.4) = 5: 3 ReAct and 2 CoT, the ReAct ones one per task
    assert sorted(r["source_method"] for r in got) == ["cot", "cot", "react", "react", "react"]
    assert sorted(r["task_id"] for r in got if r["source_method"] == "react") == ["t1", "t2", "t3"]
    assert {r["steps_method"] for r in got} == {"react"}
    m = summary.methods
    assert (m["react"].kept, m["react"].shares, m["react"].exported) == (6, 3, 3)
    assert (m["cot"].kept, m["cot"].shares, m["cot"].exported) == (2, 0, 2)
    assert (m["act"].unconvertible, m["act"].exported) == (1, 0)
    # the draw is deterministic
    export_dataset(s, tmp_path / "ds2", config=cfg)
    assert [r["episode_id"] for r in rows(tmp_path / "ds2")] == [r["episode_id"] for r in got]


def test_two_stores_exported_together(tmp_path):
    react_store = store(tmp_path / "react.jsonl", [react("t1"), react("t2", entity="Danube", answer="2,850 km")])
    cot_store = store(tmp_path / "cot.jsonl", [cot("t1"), cot("t3", "Liège is in Belgium.", "Belgium")])
    summary = export_dataset([react_store, cot_store], tmp_path / "ds", "text")
    got = rows(tmp_path / "ds")
    assert [(r["task_id"], r["source_method"], r["source_store"], r["steps_method"]) for r in got] == [
        ("t1", "react", str(react_store), "react"), ("t2", "react", str(react_store), "react"),
        ("t1", "cot", str(cot_store), "react"), ("t3", "cot", str(cot_store), "react")]
    assert got[3]["text"] == (f"{REACT_INSTRUCTION}\nQuestion: Where is Liège?\n"
                              "Thought 1: Liège is in Belgium.\nAction 1: finish[Belgium]\n")
    assert [(s["text"], s["train"]) for s in got[3]["segments"][1:]] == [
        ("Thought 1: Liège is in Belgium.\n", True), ("Action 1: finish[Belgium]\n", True)]
    zero = {"unconvertible": 0, "incomplete_reflections": 0, "duplicates": 0, "capped": 0, "shares": 0}
    expected = {"steps_method": "react", "wire": "text", "stores": [str(react_store), str(cot_store)],
                "methods": {"react": {"kept": 2, **zero, "exported": 2}, "cot": {"kept": 2, **zero, "exported": 2}},
                "exported": 4, "tasks": 3, "by_store": {str(react_store): 2, str(cot_store): 2},
                "judge": {"kept": 4, "grounding_required": 2, "grounded_evidence": 0, "grounding_not_required": 0,
                          "grounding_not_applicable": 2, "grounding_unchecked": 2},
                "origins": {"bootstrapped": 4}}
    assert summary.to_dict() == expected
    written = json.loads((tmp_path / "ds" / SUMMARY_FILE).read_text())
    assert written.pop("provenance")["packages"]["trl"] and written == expected  # where it came from, then the counts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cot.jsonl", "ds", "react.jsonl"]


def test_store_shares_draw_the_exact_records_of_each_store(tmp_path, monkeypatch):
    # ReAct records in both stores: only a per-store share can set how much the imported set weighs
    boot = store(tmp_path / "boot.jsonl", [react("t1"), react("t1", "Who made it? Look it up.", attempt=1),
                                            react("t2", entity="Danube", answer="2,850 km"),
                                            react("t3", entity="Liège", answer="Belgium")])
    imported = store(tmp_path / "imported.jsonl", [
        react("t1", "The Walkman's maker: read its page.", attempt=5),
        react("t4", entity="SEP", answer="a boundary", attempt=5),
        react("t2", "Find the Danube's length.", entity="Danube", answer="2,850 km", attempt=5)])
    monkeypatch.chdir(tmp_path)  # a key names its store by any spelling of the same path
    cfg = ExportConfig(store_shares={str(boot): 0.5, "imported.jsonl": 0.5}, max_per_task=None)
    got, summary = export_rows([boot, imported], "text", cfg)
    # N = min(4 / 0.5, 3 / 0.5) = 6: 3 of each; boot's 3 are one per task (t1's first attempt), whatever the seed
    assert [(r["source_store"], r["task_id"], r["attempt"]) for r in got] == [
        (str(boot), "t1", 0), (str(boot), "t2", 0), (str(boot), "t3", 0),
        (str(imported), "t1", 5), (str(imported), "t4", 5), (str(imported), "t2", 5)]
    assert (summary.methods["react"].kept, summary.methods["react"].shares, summary.exported) == (7, 1, 6)
    # 2:1 for the bootstrapped store: N = min(4 / (2/3), 3 / (1/3)) = 6, 4 and 2, the imported two drawn
    # with seed 1 (the same every run: random.Random of a str seed)
    cfg = ExportConfig(store_shares={str(boot): 2, str(imported): 1}, max_per_task=None, seed=1)
    got, summary = export_rows([boot, imported], "text", cfg)
    assert [(Path(r["source_store"]).name, r["task_id"], r["attempt"]) for r in got] == [
        ("boot.jsonl", "t1", 0), ("boot.jsonl", "t1", 1), ("boot.jsonl", "t2", 0), ("boot.jsonl", "t3", 0),
        ("imported.jsonl", "t1", 5), ("imported.jsonl", "t2", 5)]
    assert summary.methods["react"].shares == 1
    # the draw follows the stores' order, not where they lie
    moved = [tmp_path / "elsewhere" / p.name for p in (boot, imported)]
    for src, dst in zip((boot, imported), moved):
        dst.parent.mkdir(exist_ok=True)
        dst.write_bytes(src.read_bytes())
    again, _ = export_rows(moved, "text", cfg.model_copy(update={"store_shares": {str(moved[0]): 2,
                                                                                 str(moved[1]): 1}}))
    assert [r["episode_id"] for r in again] == [r["episode_id"] for r in got]
    # only the named stores; the per-task cap (2) comes first: t1's imported episode is its third
    got, summary = export_rows([boot, imported], "text", ExportConfig(store_shares={"imported.jsonl": 1}))
    assert [(Path(r["source_store"]).name, r["task_id"]) for r in got] == [
        ("imported.jsonl", "t4"), ("imported.jsonl", "t2")]
    assert (summary.methods["react"].capped, summary.methods["react"].shares) == (1, 4)


def test_store_shares_name_exported_stores_only(tmp_path):
    boot = store(tmp_path / "boot.jsonl", [react("t1")])
    other = store(tmp_path / "other.jsonl", [react("t2", entity="Danube", answer="2,850 km")])
    with pytest.raises(ExportError, match=rf"store_shares\.nope\.jsonl: not one of the exported stores \({boot}, "
                                          rf"{other}: bootstrap.store and bootstrap.export.stores\)"):
        export_rows([boot, other], "text", ExportConfig(store_shares={str(boot): 1, "nope.jsonl": 1}))
    with pytest.raises(ExportError, match=rf"store_shares\.{tmp_path}/\./boot\.jsonl: the store {boot} has a share"):
        export_rows([boot, other], "text", ExportConfig(store_shares={str(boot): 1, f"{tmp_path}/./boot.jsonl": 2}))
    empty = store(tmp_path / "empty.jsonl", [])
    with pytest.raises(ExportError, match=r"store_shares .*: a named store has no records left .*"
                                          rf"\(available: {boot} 1, {empty} 0\)"):
        export_rows([boot, empty], "text", ExportConfig(store_shares={str(boot): 1, str(empty): 1}))


def test_converted_records_need_the_target_instruction(tmp_path):
    cot_store = store(tmp_path / "cot.jsonl", [cot("t1")])
    with pytest.raises(ExportError, match="env 'wiki' need converting into react steps"):
        export_dataset(cot_store, tmp_path / "ds")
    summary = export_dataset(cot_store, tmp_path / "ds", actions={"wiki": ACTIONS})
    assert summary.exported == 1 and rows(tmp_path / "ds")[0]["text"].startswith(REACT_INSTRUCTION + "\n")


def test_nothing_to_export_says_which_filter_removed_it(tmp_path):
    s = store(tmp_path / "s.jsonl", [react("t1")])
    with pytest.raises(ExportError, match="none of the 1 kept records can be converted into reflact steps"):
        export_dataset(s, tmp_path / "ds", config=ExportConfig(steps_method="reflact"))
    with pytest.raises(ExportError, match=r"method_shares .*available: react 1, cot 0"):
        export_dataset(s, tmp_path / "ds", config=ExportConfig(method_shares={"react": 1, "cot": 1}))
    with pytest.raises(ExportError, match="store listed twice"):
        export_dataset([s, s], tmp_path / "ds")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(react("t1").to_json() + "\n{not json\n")
    with pytest.raises(TrajectoryFormatError, match=r"bad.jsonl:2: invalid JSON"):
        export_dataset([s, bad], tmp_path / "ds")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "s.jsonl"]


def test_export_config_validation_names_the_key():
    with pytest.raises(ValidationError, match=r"method_shares\.reactt: unknown method"):
        ExportConfig(method_shares={"reactt": 1.0})
    with pytest.raises(ValidationError, match=r"method_shares\.cot: a share must be > 0"):
        ExportConfig(method_shares={"cot": 0})
    with pytest.raises(ValidationError, match=r"method_shares\.react: react records cannot be converted"):
        ExportConfig(steps_method="reflact", method_shares={"react": 1.0})
    for steps in ("react", "reflact"):  # plans and critiques have no place in either step format
        with pytest.raises(ValidationError, match=r"method_shares\.preflect_reflact: preflect_reflact records"):
            ExportConfig(steps_method=steps, method_shares={"preflect_reflact": 1.0})
    with pytest.raises(ValidationError, match=r"store_shares\.runs/a\.jsonl: a share must be > 0, got -1"):
        ExportConfig(store_shares={"runs/a.jsonl": -1})
    with pytest.raises(ValidationError, match="method_shares and store_shares: set one of them"):
        ExportConfig(method_shares={"react": 1}, store_shares={"runs/a.jsonl": 1})
    with pytest.raises(ValidationError, match="max_per_task"):
        ExportConfig(max_per_task=0)
    assert BootstrapConfig().export == ExportConfig()


# --- the command ----------------------------------------------------------------------------------

def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="actune")
    stages.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_export_command_mixes_the_configured_stores(tmp_path, capsys):
    react_store = store(tmp_path / "react.jsonl", [react("t1"), react("t2", entity="Danube", answer="2,850 km")])
    cot_store = store(tmp_path / "cot.jsonl", [cot("t1"), cot("t3", "Liège is in Belgium.", "Belgium")])
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {react_store}\n  export:\n    stores: [{cot_store}]\n"
                   f"train:\n  dataset: {tmp_path / 'ds'}\n")
    assert run_cli(["export", str(cfg), "max_per_task=1"]) == 0
    out = capsys.readouterr().out
    assert "exported 3 kept trajectories (text) in react steps" in out
    assert "react 2 0 0 0 0 0 2" in " ".join(out.split())  # kept, unconvertible, incomplete, dup, cap, shares, exported
    assert "cot 2 0 0 0 1 0 1" in " ".join(out.split())
    assert "tasks covered: 3" in out
    assert json.loads((tmp_path / "ds" / SUMMARY_FILE).read_text())["exported"] == 3
    # every record of a ReAct store is unconvertible into ReflAct steps, the CoT ones are not
    assert run_cli(["export", str(cfg), "steps_method=reflact", "stores=[]"]) == 1  # ran and stopped
    assert "none of the 2 kept records can be converted into reflact steps" in capsys.readouterr().err


def test_short_overrides_name_the_export_section():
    assert QUALIFY["export"](["steps_method=reflact", "max_per_task=3", "store=a", "name=x", "store_shares={a: 1}"]) \
        == ["bootstrap.export.steps_method=reflact", "bootstrap.export.max_per_task=3", "bootstrap.store=a", "name=x",
            "bootstrap.export.store_shares={a: 1}"]


def test_export_command_draws_store_shares_and_names_an_unknown_store(tmp_path, capsys):
    boot = store(tmp_path / "boot.jsonl", [react("t1"), react("t2", entity="Danube", answer="2,850 km")])
    imported = store(tmp_path / "imported.jsonl", [react("t3", entity="Liège", answer="Belgium", attempt=5),
                                                    react("t4", entity="SEP", answer="a boundary", attempt=5)])
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"bootstrap:\n  store: {boot}\n  export:\n    stores: [{imported}]\n"
                   f"train:\n  dataset: {tmp_path / 'ds'}\n")
    assert run_cli(["export", str(cfg), f"store_shares={{{boot}: 1, {imported}: 1}}"]) == 0
    assert "react 4 0 0 0 0 0 4" in " ".join(capsys.readouterr().out.split())
    assert run_cli(["export", str(cfg), f"store_shares={{{imported}: 1}}"]) == 0
    assert "react 4 0 0 0 0 2 2" in " ".join(capsys.readouterr().out.split())
    assert [r["source_store"] for r in rows(tmp_path / "ds")] == [str(imported)] * 2
    assert run_cli(["export", str(cfg), "store_shares={runs/typo.jsonl: 1}"]) == 1  # found by the export stage
    assert "store_shares.runs/typo.jsonl: not one of the exported stores" in capsys.readouterr().err


def test_require_reflection_parts_leaves_out_reflact_records_lacking_a_part(tmp_path):
    whole = make("t2", "reflact", [
        Step("reflection", "Current state: nothing is known. Latest discovery: none yet. Goal relation: I need "
             "the maker, so I read the page.", 1),
        Step("action", "search[Walkman]", 1, action_name="search", action_arg="Walkman"),
        Step("observation", "Walkman is made by Sony.", 1),
        Step("reflection", "Current state: the Walkman is made by Sony. Latest discovery: the maker is Sony. "
             "Goal relation: that is the answer.", 2),
        Step("answer", "FINAL ANSWER: Sony", 2, action_name="finish", action_arg="Sony")])
    partial = reflact("t1")  # reflections without their labelled parts
    assert verdict_of(whole).reflection_problems == []
    assert verdict_of(partial).reflection_problems == [
        "steps[0]: reflection 1 lacks current state, latest discovery, goal relation",
        "steps[3]: reflection 2 lacks current state, latest discovery, goal relation"]
    assert verdict_of(partial).kept  # noted, not held against kept
    s = store(tmp_path / "s.jsonl", [partial, whole])
    assert export_dataset(s, tmp_path / "ds", config=ExportConfig(steps_method="reflact")).exported == 2
    summary = export_dataset(s, tmp_path / "ds", config=ExportConfig(steps_method="reflact",
                                                                     require_reflection_parts=True))
    assert [r["task_id"] for r in rows(tmp_path / "ds")] == ["t2"]
    assert (summary.methods["reflact"].incomplete_reflections, summary.exported) == (1, 1)
    assert "incomplete_reflections" in summary.table()
    # a ReAct-format adapter gets reflections as thoughts: the parts do not apply
    r = store(tmp_path / "r.jsonl", [react("t3")])  # a ReAct record of the env brings its instruction
    summary = export_dataset([s, r], tmp_path / "ds", config=ExportConfig(steps_method="react",
                                                                          require_reflection_parts=True))
    assert (summary.methods["reflact"].incomplete_reflections, summary.exported) == (0, 3)
