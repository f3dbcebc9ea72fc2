"""The eval table of a model card (:mod:`actune.train.card_eval`) from a small hand-written ``report.json`` in
the layout ``actune eval`` writes (``actune.eval.report``): this model's rows beside the report's reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.train.card_eval import ReportError, eval_section, matching_rows


def est(mean: float, low: float, high: float, n: int) -> dict:
    return {"mean": mean, "low": low, "high": high, "n": n}


def vs(diff: dict, p: float) -> dict:
    return {"metric": "", "tasks": diff["n"], "pairs": diff["n"], "mean_a": 0.0, "mean_b": 0.0, "diff": diff,
            "b": 1, "c": 9, "p_value": p}


def report(adapter: str, merged: str) -> dict:
    """The prompted base, this adapter, the same adapter merged, and another run's adapter."""
    prompted = {"label": "prompted", "model": "smollm2-135m", "adapter": None, "prompt_spec": None,
                "metrics": {"correct_grounded": est(0.1, 0.05, 0.15, 40), "correct": est(0.2, 0.1, 0.3, 40),
                            "em": est(0.2, 0.1, 0.3, 40)}, "vs_first": None}

    def tuned(label: str, model: str, adapter_dir: str | None, cg: float) -> dict:
        return {"label": label, "model": model, "adapter": adapter_dir, "prompt_spec": None,
                "metrics": {"correct_grounded": est(cg, cg - 0.1, cg + 0.1, 40), "correct": est(0.5, 0.4, 0.6, 40)},
                "vs_first": {"correct_grounded": vs(est(cg - 0.1, cg - 0.2, cg, 40), 0.00123456),
                             "correct": vs(est(0.3, 0.2, 0.4, 40), 0.0456)}}

    return {"title": "react-test", "confidence": 0.95, "bootstrap_samples": 1000, "seed": 0,
            "headline": "correct_grounded", "metrics": ["correct_grounded", "correct", "em"],
            "paired_metrics": ["correct_grounded", "correct"], "total_episodes": 160,
            "models": [prompted, tuned("tuned", "smollm2-135m", adapter, 0.4),
                       tuned("tuned-merged", merged, None, 0.375),
                       tuned("other", "smollm2-135m", "runs/other/adapter", 0.3)]}


def layout(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """An adapter folder with its merged/, and report.json naming them relative to the current folder, as eval
    writes paths."""
    monkeypatch.chdir(tmp_path)
    adapter = tmp_path / "runs" / "adapter"
    (adapter / "merged").mkdir(parents=True)
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "merged" / "config.json").write_text("{}")
    path = tmp_path / "runs" / "eval" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(report("runs/adapter", "runs/adapter/merged")))
    return adapter, path


HEAD = ["| model | evaluated | metric | score | Δ vs `prompted` | McNemar p | n |", "|---|---|---|---|---|---:|---:|",
        "| prompted | `smollm2-135m`, prompted | `correct_grounded` | 0.100 [0.050, 0.150] | – | – | 40 |",
        "| prompted | `smollm2-135m`, prompted | `correct` | 0.200 [0.100, 0.300] | – | – | 40 |"]


def test_the_adapter_card_table_has_its_rows_and_the_prompted_baseline(tmp_path, monkeypatch):
    adapter, path = layout(tmp_path, monkeypatch)
    lines = eval_section(path, adapter)
    assert lines[:2] == ["## Evaluation", ""]
    assert lines[2] == (
        f"From `{path}` (`actune eval`, report `react-test`): scores are means over tasks with 95% percentile "
        "bootstrap intervals (1000 resamples, seed 0); Δ is the paired difference from `prompted` (the report's "
        "reference) over the tasks both ran, p the exact McNemar test on the episodes, n the tasks scored. "
        "`correct_grounded`: the answer is correct and every supporting page was read (the judge's verdict); "
        "`correct`: the task's own success flag (exact match for QA, the label for FEVER, a win for ALFWorld).")
    assert lines[3:] == ["", *HEAD,
        "| tuned | this adapter, on its base model | `correct_grounded` | 0.400 [0.300, 0.500] | "
        "+0.300 [+0.200, +0.400] | 0.001235 | 40 |",
        "| tuned | this adapter, on its base model | `correct` | 0.500 [0.400, 0.600] | +0.300 [+0.200, +0.400] | "
        "0.0456 | 40 |",
        "| tuned-merged | this adapter merged into its base (`merged/`) | `correct_grounded` | 0.375 [0.275, 0.475] | "
        "+0.275 [+0.175, +0.375] | 0.001235 | 40 |",
        "| tuned-merged | this adapter merged into its base (`merged/`) | `correct` | 0.500 [0.400, 0.600] | "
        "+0.300 [+0.200, +0.400] | 0.0456 | 40 |"]  # the other run's adapter is not this model's


def test_the_merged_card_table_names_it_and_the_adapter_it_came_from(tmp_path, monkeypatch):
    adapter, path = layout(tmp_path, monkeypatch)
    rows = [line for line in eval_section(path, adapter / "merged") if line.startswith("| tuned")]
    assert [r.split(" | ")[:3] for r in rows] == [
        ["| tuned", "the adapter it was merged from, on its base model", "`correct_grounded`"],
        ["| tuned", "the adapter it was merged from, on its base model", "`correct`"],
        ["| tuned-merged", "this merged model", "`correct_grounded`"],
        ["| tuned-merged", "this merged model", "`correct`"]]
    assert matching_rows(json.loads(path.read_text()), adapter / "merged") == [(1, "adapter"), (2, "merged")]


def test_a_report_about_other_models_is_an_error_naming_them(tmp_path, monkeypatch):
    _, path = layout(tmp_path, monkeypatch)
    stranger = tmp_path / "elsewhere"
    stranger.mkdir()
    (stranger / "adapter_config.json").write_text("{}")
    with pytest.raises(ReportError) as e:
        eval_section(path, stranger)
    assert str(e.value) == (
        f"{path}: the eval report does not evaluate {stranger} (nor its adapter or merged folder); it evaluates "
        "prompted: model smollm2-135m; tuned: adapter runs/adapter; tuned-merged: model runs/adapter/merged; "
        "other: adapter runs/other/adapter (paths are read from the current folder, as eval wrote them)")


def test_a_bad_report_is_named_with_its_problem(tmp_path, monkeypatch):
    adapter, path = layout(tmp_path, monkeypatch)
    with pytest.raises(ReportError, match=r"missing.json: cannot read the eval report"):
        eval_section(tmp_path / "missing.json", adapter)
    path.write_text("{not json")
    with pytest.raises(ReportError, match=r"report.json: not valid JSON"):
        eval_section(path, adapter)
    path.write_text(json.dumps({"rows": []}))
    with pytest.raises(ReportError, match=r"report.json: not an eval report \(`actune eval` writes report.json"):
        eval_section(path, adapter)
    bad = report("runs/adapter", "runs/adapter/merged")
    del bad["models"][1]["vs_first"]
    path.write_text(json.dumps(bad))
    with pytest.raises(ReportError, match=r"report.json: models\[1\] has no 'vs_first' key"):
        eval_section(path, adapter)


def test_model_index_holds_this_folders_first_row_and_nothing_for_another_folder(tmp_path, monkeypatch):
    from actune.train.card_eval import model_index

    adapter, path = layout(tmp_path, monkeypatch)
    assert model_index(path, adapter, "actune-react-smollm2-135m") == [{
        "name": "actune-react-smollm2-135m",
        "results": [{"task": {"type": "text-generation", "name": "agent episodes"},
                     "dataset": {"type": "custom", "name": "react-test"},
                     "metrics": [{"type": "correct_grounded", "name": "correct grounded", "value": 0.4},
                                 {"type": "correct", "name": "correct", "value": 0.5}]}]}]
    # the Hub's own reader takes it (huggingface_hub parses a card's model-index into EvalResults)
    from huggingface_hub.repocard_data import model_index_to_eval_results

    name, results = model_index_to_eval_results(model_index(path, adapter, "n"))
    assert name == "n" and [(r.metric_type, r.metric_value) for r in results] == [("correct_grounded", 0.4),
                                                                                 ("correct", 0.5)]
    # the merged folder's first row is the adapter's too (the same trained weights, the report's first match)
    assert model_index(path, adapter / "merged", "m")[0]["results"][0]["metrics"][0]["value"] == 0.4
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "adapter_config.json").write_text("{}")
    assert model_index(path, other, "x") == []
