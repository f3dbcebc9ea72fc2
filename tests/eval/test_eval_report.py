"""The report files: they exist, and the JSON holds exactly the numbers the stats give directly."""

from __future__ import annotations

import json
from pathlib import Path

from eval_records import record

from actune.eval.failures import failure_counts
from actune.eval.report import ModelResult, build_report, write_report
from actune.eval.stats import model_stats, paired_comparison

KW = {"samples": 400, "confidence": 0.9, "seed": 7}


def results() -> list[ModelResult]:
    kinds = ["single", "bridge", "comparison"]
    prompted = [record(f"q{i}", correct=i % 3 == 0, kind=kinds[i % 3], supporting=["P"], read=["P"] if i % 2 else [])
                for i in range(12)]
    tuned = [record(f"q{i}", correct=i % 2 == 0, kind=kinds[i % 3], adapter="tuned-abc") for i in range(12)]
    return [ModelResult("prompted", "smollm2-135m", records=prompted),
            ModelResult("tuned", "smollm2-135m", adapter="/a", adapter_name="tuned-abc", records=tuned)]


def test_report_files_hold_the_stats(tmp_path: Path) -> None:
    rs = results()
    paths = write_report(build_report(rs, title="tiny", **KW), tmp_path / "out")
    assert {p.name for p in paths.values()} == {"report.json", "report.md", "scores.png"}
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temp files left

    report = json.loads(paths["json"].read_text())
    assert report["metrics"] == ["correct", "em", "f1"]
    assert [m["label"] for m in report["models"]] == ["prompted", "tuned"]
    for m, r in zip(report["models"], rs):
        direct = model_stats(r.records, **KW)
        assert m["metrics"] == direct["metrics"]
        assert m["by_kind"] == direct["by_kind"]
        assert m["episodes"] == 12 and m["tasks"] == 12
        assert m["failures"] == failure_counts(r.records)
    assert report["models"][0]["metrics"]["correct"]["mean"] == 4 / 12
    assert report["models"][1]["metrics"]["correct"]["mean"] == 6 / 12
    assert report["models"][0]["vs_first"] is None
    cmp = paired_comparison(rs[0].records, rs[1].records, **KW)
    assert report["models"][1]["vs_first"] == json.loads(json.dumps(cmp.to_dict()))
    assert (cmp.b, cmp.c) == (2, 4)  # q3, q9 only prompted; q2, q4, q8, q10 only tuned
    assert report["models"][1]["adapter_name"] == "tuned-abc"

    md = paths["md"].read_text()
    assert "| prompted | – | 12 | 12 |" in md
    assert "| tuned | tuned-abc | 12 | 12 |" in md
    assert f"| tuned | 12 | {cmp.diff.mean:.3f} [" in md
    assert "answered_wrong_ungrounded" in md


def test_report_with_an_empty_model(tmp_path: Path) -> None:
    rs = [ModelResult("a", records=[record("q1", correct=True)]), ModelResult("b", records=[])]
    paths = write_report(build_report(rs, **KW), tmp_path)
    report = json.loads(paths["json"].read_text())
    assert report["metrics"] == ["correct", "em", "f1"]
    for metric in report["metrics"]:
        assert report["models"][1]["metrics"][metric] == {"mean": None, "low": None, "high": None, "n": 0}
    assert report["models"][1]["vs_first"]["tasks"] == 0
    assert paths["png"].stat().st_size > 0
