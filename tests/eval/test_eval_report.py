"""The report files: they exist, and the JSON holds exactly the numbers the stats give directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_records import record

from actune.config import ConfigError
from actune.eval.config import EvalConfig
from actune.eval.failures import failure_counts
from actune.eval.report import ModelResult, build_report, foreign_report_file, format_markdown, write_report
from actune.eval.run import run_eval
from actune.eval.stats import model_stats, paired_comparison
from actune.records.trajectory import Trajectory
from actune.serve.config import ServeConfig

KW = {"samples": 400, "confidence": 0.9, "seed": 7}


def results() -> list[ModelResult]:
    kinds = ["single", "bridge", "comparison"]
    # prompted: right on q0, q3, q6, q9; grounded (read its page) on the odd ones -> correct_grounded on q3, q9
    prompted = [record(f"q{i}", correct=i % 3 == 0, kind=kinds[i % 3], supporting=["P"], read=["P"] if i % 2 else [],
                       grounded=bool(i % 2), prompt_tokens=900 + 10 * i, completion_tokens=40, wall_s=1.5)
                for i in range(12)]
    # tuned: right on the even ones, grounded on all but q4 and q8
    tuned = [record(f"q{i}", correct=i % 2 == 0, kind=kinds[i % 3], adapter="tuned-abc", grounded=i not in (4, 8),
                    prompt_tokens=300, completion_tokens=60 + i, wall_s=0.5)
             for i in range(12)]
    return [ModelResult("prompted", "smollm2-135m", records=prompted),
            ModelResult("tuned", "qwen-0.5b", adapter="/a", adapter_name="tuned-abc", records=tuned,
                        prompt_spec="/a/actune_prompt.json"),
            ModelResult("oracle", "smollm2-135m", records=prompted, agent_overrides={"exemplar_kinds": ["task"]})]


def test_report_files_hold_the_stats(tmp_path: Path) -> None:
    rs = results()
    paths = write_report(build_report(rs, title="tiny", **KW), tmp_path / "out")
    assert {p.name for p in paths.values()} == {"report.json", "report.md", "scores.png"}
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temp files left

    report = json.loads(paths["json"].read_text())
    assert report["headline"] == "correct_grounded"
    assert report["metrics"] == ["correct_grounded", "correct", "em", "f1"]
    assert report["paired_metrics"] == ["correct_grounded", "correct"]
    assert report["total_episodes"] == 36
    assert [m["label"] for m in report["models"]] == ["prompted", "tuned", "oracle"]
    assert [m["model"] for m in report["models"]] == ["smollm2-135m", "qwen-0.5b", "smollm2-135m"]
    for m, r in zip(report["models"], rs):
        direct = model_stats(r.records, **KW)
        assert list(m["metrics"]) == report["metrics"]
        assert m["metrics"] == direct["metrics"]
        assert m["by_kind"] == direct["by_kind"]
        assert all(list(b["metrics"])[0] == "correct_grounded" for b in m["by_kind"].values())
        assert m["episodes"] == 12 and m["tasks"] == 12
        assert m["failures"] == failure_counts(r.records)
    prompted, tuned, oracle = report["models"]
    assert prompted["metrics"]["correct_grounded"]["mean"] == 2 / 12
    assert prompted["metrics"]["correct"]["mean"] == 4 / 12
    assert tuned["metrics"]["correct_grounded"]["mean"] == 4 / 12  # q0, q2, q6, q10
    assert tuned["metrics"]["correct"]["mean"] == 6 / 12
    assert prompted["cost"] == {"episodes": 12, "prompt_tokens": 955.0, "completion_tokens": 40.0, "wall_s": 1.5}
    assert tuned["cost"] == {"episodes": 12, "prompt_tokens": 300.0, "completion_tokens": 65.5, "wall_s": 0.5}
    assert tuned["prompt_spec"] == "/a/actune_prompt.json" and prompted["prompt_spec"] is None
    assert oracle["agent_overrides"] == {"exemplar_kinds": ["task"]} and tuned["agent_overrides"] == {}
    assert prompted["vs_first"] is None
    assert list(tuned["vs_first"]) == ["correct_grounded", "correct"]
    for metric in ("correct_grounded", "correct"):
        cmp = paired_comparison(rs[0].records, rs[1].records, metric=metric, **KW)
        assert tuned["vs_first"][metric] == json.loads(json.dumps(cmp.to_dict()))
    cg = tuned["vs_first"]["correct_grounded"]
    assert (cg["b"], cg["c"], cg["pairs"]) == (2, 4, 12)  # q3, q9 only prompted; q0, q2, q6, q10 only tuned
    c = tuned["vs_first"]["correct"]
    assert (c["b"], c["c"], c["pairs"]) == (2, 4, 12)  # q3, q9 only prompted; q2, q4, q8, q10 only tuned
    assert oracle["vs_first"]["correct_grounded"]["b"] == oracle["vs_first"]["correct_grounded"]["c"] == 0
    assert tuned["adapter_name"] == "tuned-abc"

    md = paths["md"].read_text()
    assert md.splitlines()[2] == (
        f"**Headline, `correct_grounded`** (correct and grounded: the supporting sentences shown in the episode's observations where the task names them, else every supporting page opened): "
        f"`prompted` {score(prompted['metrics']['correct_grounded'])}, "
        f"`tuned` {score(tuned['metrics']['correct_grounded'])}, "
        f"`oracle` {score(oracle['metrics']['correct_grounded'])}; "
        f"`tuned` − `prompted` {signed(cg['diff'])} (McNemar p = {cg['p_value']:.4g}), "
        f"`oracle` − `prompted` +0.000 [+0.000, +0.000] (McNemar p = 1).")
    assert "| label | model | served by | adapter | prompt | episodes | tasks | correct_grounded | correct | em | f1 |" in md
    assert (f"| prompted | smollm2-135m | – | – | eval.agent | 12 | 12 | {score(prompted['metrics']['correct_grounded'])} "
            f"| {score(prompted['metrics']['correct'])} |") in md
    assert "| tuned | qwen-0.5b | – | tuned-abc | eval.agent + spec /a/actune_prompt.json | 12 | 12 |" in md
    assert '| oracle | smollm2-135m | – | – | eval.agent + exemplar_kinds=["task"] | 12 | 12 |' in md
    assert md.index("## Per task kind (`correct_grounded`)") < md.index("## Per task kind (`correct`)")
    assert "| prompted | 12 | 955.0 | 40.0 | 1.50 |" in md and "| tuned | 12 | 300.0 | 65.5 | 0.50 |" in md
    assert "Total: 36 episodes." in md
    assert (f"| tuned | correct_grounded | 12 | 12 | {signed(cg['diff'])} | 2 | 4 | {cg['p_value']:.4g} |") in md
    assert f"| tuned | correct | 12 | 12 | {signed(c['diff'])} | 2 | 4 | {c['p_value']:.4g} |" in md
    assert md.index("| tuned | correct_grounded |") < md.index("| tuned | correct |")
    assert "answered_wrong_ungrounded" in md


def score(est: dict) -> str:
    return f"{est['mean']:.3f} [{est['low']:.3f}, {est['high']:.3f}]"


def signed(est: dict) -> str:
    return f"{est['mean']:+.3f} [{est['low']:+.3f}, {est['high']:+.3f}]"


def test_report_with_an_empty_model(tmp_path: Path) -> None:
    rs = [ModelResult("a", records=[record("q1", correct=True)]), ModelResult("b", records=[])]
    paths = write_report(build_report(rs, **KW), tmp_path)
    report = json.loads(paths["json"].read_text())
    assert report["metrics"] == ["correct_grounded", "correct", "em", "f1"]
    for metric in report["metrics"]:
        assert report["models"][1]["metrics"][metric] == {"mean": None, "low": None, "high": None, "n": 0}
    # "a" holds an unjudged record: correct_grounded is absent, not 0
    assert report["models"][0]["metrics"]["correct_grounded"] == {"mean": None, "low": None, "high": None, "n": 0}
    assert report["models"][0]["metrics"]["correct"]["mean"] == 1.0
    assert report["models"][1]["vs_first"]["correct"]["tasks"] == 0
    assert report["models"][1]["vs_first"]["correct_grounded"]["pairs"] == 0
    assert report["models"][1]["cost"] == {"episodes": 0, "prompt_tokens": None, "completion_tokens": None,
                                           "wall_s": None}
    assert paths["png"].stat().st_size > 0
    md = format_markdown(report)
    assert "**Headline, `correct_grounded`** (correct and grounded: the supporting sentences shown in the episode's observations where the task names them, else every supporting page opened): `a` –, `b` –; " in md
    assert "| b | 0 | – | – | – |" in md


def _phrased(task_id: str, phrasing: str, *, correct: bool) -> "Trajectory":
    t = record(task_id, correct=correct, grounded=True)
    t.task.meta["phrasing"] = phrasing
    return t


def test_phrasing_rows_pair_each_group_against_the_first_model() -> None:
    # prompted: seen q0-q3 right on q0 only; new_phrasing q4-q7 right on q4, q5; new_relation q8 wrong
    groups = ["seen"] * 4 + ["new_phrasing"] * 4 + ["new_relation"]
    prompted = [_phrased(f"q{i}", g, correct=i in (0, 4, 5)) for i, g in enumerate(groups)]
    # tuned: every seen right; new_phrasing right on q6, q7 only; new_relation right
    tuned = [_phrased(f"q{i}", g, correct=i < 4 or i in (6, 7, 8)) for i, g in enumerate(groups)]
    report = build_report([ModelResult("prompted", records=prompted), ModelResult("tuned", records=tuned)], **KW)
    first, second = (m["by_phrasing"] for m in report["models"])
    assert list(first) == ["seen", "new_phrasing", "new_relation"]
    assert first["seen"]["metrics"]["correct_grounded"]["mean"] == 0.25 and first["seen"]["vs_first"] is None
    seen, phr, rel = (second[g]["vs_first"]["correct_grounded"] for g in ("seen", "new_phrasing", "new_relation"))
    assert (seen["b"], seen["c"], seen["mean_a"], seen["mean_b"]) == (0, 3, 0.25, 1.0)
    assert seen["p_value"] == 0.25
    assert (phr["b"], phr["c"], phr["diff"]["mean"]) == (2, 2, 0.0) and phr["p_value"] == 1.0
    assert (rel["tasks"], rel["c"]) == (1, 1)
    md = format_markdown(report)
    assert "## Per phrasing (`correct_grounded`)" in md
    assert ("| tuned | 1.000 [1.000, 1.000] (n=4), +0.750 [+0.250, +1.000], p = 0.25 | 0.500 [0.000, 1.000] (n=4), "
            "+0.000 [-1.000, +1.000], p = 1 | 1.000 [1.000, 1.000] (n=1), +1.000 [+1.000, +1.000], p = 1 |") in md


def test_phrasing_rows_are_empty_for_tasks_of_no_world() -> None:
    report = build_report(results(), **KW)
    assert all(m["by_phrasing"] == {} for m in report["models"])
    assert "Per phrasing" not in format_markdown(report)


def test_a_model_with_compare_to_is_also_paired_against_that_model() -> None:
    rs = results()
    rs[2].compare_to = "tuned"  # the oracle against the tuned model, beside the prompted one
    report = build_report(rs, **KW)
    first, tuned, oracle = report["models"]
    assert first["vs_reference"] is None and tuned["vs_reference"] is None
    ref = oracle["vs_reference"]
    assert ref["label"] == "tuned"
    expected = paired_comparison(rs[1].records, rs[2].records, metric="correct_grounded", **KW).to_dict()
    assert ref["correct_grounded"] == expected
    assert ref["correct_grounded"] != oracle["vs_first"]["correct_grounded"]
    md = format_markdown(report)
    assert "## Paired against the model each was trained on from" in md
    c = expected
    assert f"| oracle | tuned | correct_grounded | {c['tasks']} | {signed(c['diff'])} | {c['b']} | {c['c']} |" in md


def test_compare_to_must_name_another_model() -> None:
    import pytest

    from actune.eval.config import EvalConfig

    with pytest.raises(ValueError, match="tuned.compare_to: 'sft' is not another model's label"):
        EvalConfig(models=[{"label": "prompted"}, {"label": "tuned", "compare_to": "sft"}])
    with pytest.raises(ValueError, match="is not another model's label"):
        EvalConfig(models=[{"label": "prompted", "compare_to": "prompted"}])


def test_held_out_wordings_far_from_any_trained_one_are_a_group_of_their_own() -> None:
    def rec(i: int, correct: bool, far: bool) -> Trajectory:
        t = record(f"t{i}", correct=correct, grounded=True)
        t.task.meta.update(phrasing="new_phrasing", wording_far_half=far, fact_in_train=False)
        return t

    prompted = ModelResult("prompted", records=[rec(i, False, i < 2) for i in range(4)])
    tuned = ModelResult("tuned", records=[rec(0, True, True), rec(1, False, True), rec(2, True, False),
                                          rec(3, True, False)])
    report = build_report([prompted, tuned], samples=100, confidence=0.95, seed=0)
    groups = report["models"][1]["by_phrasing"]
    # a far-half task is in both groups; no held-out task shares a fact, so no fact-free group is drawn apart
    assert list(groups) == ["new_phrasing", "new_phrasing_far"]
    assert (groups["new_phrasing"]["tasks"], groups["new_phrasing_far"]["tasks"]) == (4, 2)
    assert groups["new_phrasing_far"]["metrics"]["correct_grounded"]["mean"] == 0.5
    assert groups["new_phrasing_far"]["vs_first"]["correct_grounded"]["c"] == 1


def test_report_files_no_eval_wrote_are_found_before_they_would_be_replaced(tmp_path: Path) -> None:
    assert foreign_report_file(tmp_path / "absent") is None
    out = tmp_path / "out"
    write_report(build_report(results(), title="tiny", **KW), out)
    assert foreign_report_file(out) is None  # an eval's own: replaced by the next
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("my notes")
    assert foreign_report_file(mine) == mine / "report.md"
    (mine / "report.json").write_text('{"mine": 1}')
    assert foreign_report_file(mine) == mine / "report.json"
    cfg = EvalConfig(out_dir=mine, tasks={"path": str(tmp_path / "no-tasks.jsonl")})
    with pytest.raises(ConfigError, match=r"mine/report.json: exists and no eval wrote it"):
        run_eval(cfg, ServeConfig(), show_progress=False)  # before the tasks are read, or any server started
    assert (mine / "report.md").read_text() == "my notes"
