"""The quickstart's report: headline verdicts against the bar, what each tuned model learnt from, by phrasing,
the command that reruns the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.config import ConfigError
from actune.quickstart.config import load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.report import headline_rows, training_rows, write_quickstart_report, yardstick_rows


def _report(prompted: tuple[float, float, float], tuned: tuple[float, float, float], b: int, c: int,
            p: float) -> dict:
    def est(x: tuple[float, float, float]) -> dict:
        return {"mean": x[0], "low": x[1], "high": x[2], "n": 300}

    cmp = {"metric": "correct_grounded", "tasks": 300, "pairs": 300, "mean_a": prompted[0], "mean_b": tuned[0],
           "diff": est((tuned[0] - prompted[0], 0.0, 0.0)), "b": b, "c": c, "p_value": p}
    return {"models": [
        {"label": "prompted", "model": "m", "metrics": {"correct_grounded": est(prompted), "correct": est(prompted)},
         "vs_first": None},
        {"label": "tuned-r1", "model": "m", "metrics": {"correct_grounded": est(tuned), "correct": est(tuned)},
         "vs_first": {"correct_grounded": cmp}},
    ]}


def test_headline_bar_met_and_missed() -> None:
    met = headline_rows(_report((0.10, 0.07, 0.13), (0.30, 0.25, 0.35), b=5, c=65, p=1e-12), "react")
    assert met[1]["bar"] == {"ratio": True, "points": True, "p": True, "met": True}
    assert met[1]["vs_prompted"]["ratio"] == pytest.approx(3.0)
    assert "bar" not in met[0]
    # +10 points but only 1.5x, and not significant: a miss on two counts
    missed = headline_rows(_report((0.20, 0.15, 0.25), (0.30, 0.25, 0.35), b=20, c=35, p=0.058), "react")
    assert missed[1]["bar"] == {"ratio": False, "points": True, "p": False, "met": False}


def test_the_bar_asks_for_five_points_over_the_best_yardstick_and_shows_its_row() -> None:
    report = _report((0.00, 0.0, 0.0), (0.13, 0.10, 0.16), b=1, c=40, p=1e-10)
    y = {"mean": 0.11, "low": 0.08, "high": 0.14, "n": 300}
    report["yardsticks"] = [{"label": "yardstick:question-only+search", "policy": "(no model)", "best": True,
                             "metrics": {"correct_grounded": y, "correct": y}}]
    vs = {"metric": "correct_grounded", "tasks": 300, "pairs": 300, "mean_a": 0.11, "mean_b": 0.13,
          "diff": {"mean": 0.02, "low": -0.02, "high": 0.06, "n": 300}, "b": 23, "c": 29, "p_value": 0.49}
    report["models"][1]["vs_yardstick"] = {"label": "yardstick:question-only+search", "correct_grounded": vs}
    rows = headline_rows(report, "react")
    # the gain over the prompted model is met; over the script that reads nothing it is not: a miss
    assert [r["label"] for r in rows] == ["prompted", "tuned-r1"]
    assert rows[1]["bar"] == {"ratio": True, "points": True, "p": True, "yardstick": False, "met": False}
    assert rows[1]["vs_yardstick"]["b"] == 23
    ys = yardstick_rows(report, "react")
    assert [(y["label"], y["correct_grounded"]["mean"], "bar" in y) for y in ys] == [
        ("yardstick:question-only+search", 0.11, False)]


def test_report_json_is_written_with_rows(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke")
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    paths = write_quickstart_report(cfg, layout)
    data = json.loads(paths["json"].read_text())
    assert [r["label"] for r in data["rows"]] == ["prompted", "tuned-r1"]
    md = paths["md"].read_text()
    assert "| tuned-r1 | 0.300 [0.200, 0.400] |" in md
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"
    # the smoke preset says what its scale can show, before any score; the report ends with where it came from
    assert md.splitlines()[2].startswith("**Smoke scale: every stage ran for real") and "not a result" not in md[:60]
    assert "it cannot show whether\ntuning helps" not in md and "it cannot show whether tuning helps" in md
    assert data["provenance"]["packages"]["trl"] and md.rstrip().splitlines()[-1].startswith("- dtype: ")
    # every row label it shows is defined, and only those (issue #49 item 8: "prompted-oracle" was never said)
    rows_line = next(line for line in md.splitlines() if line.startswith("Rows: "))
    assert "`prompted`: the base model" in rows_line and "`tuned-rN`: the model tuned after round N" in rows_line
    assert "prompted-oracle" not in rows_line
    full = write_quickstart_report(load_quickstart("full", ["methods=[react]"]), layout)
    assert "Smoke scale" not in full["md"].read_text()


def test_report_says_what_each_tuned_model_learnt_from(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke", ["rounds=2"])
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    layout.dataset("react", 1).mkdir(parents=True)
    (layout.dataset("react", 1) / "export_summary.json").write_text(json.dumps({
        "exported": 161, "tasks": 131,
        "methods": {"react": {"exported": 109}, "reflact": {"exported": 52}, "cot": {"exported": 0}},
        "by_store": {str(layout.store("react", 1)): 70, str(layout.store("reflact", 1)): 52,
                     str(layout.imported(0)): 39, "/data/world/trajectories.jsonl": 0}}))
    layout.adapter("react", 1).mkdir(parents=True)
    (layout.adapter("react", 1) / "training_meta.json").write_text(json.dumps({
        "train_examples": 147, "dev_examples": 14, "steps": 111, "best_step": 95}))
    layout.dataset("react", 2).mkdir(parents=True)  # round 2 exported but not trained yet: left out
    (layout.dataset("react", 2) / "export_summary.json").write_text(json.dumps({"exported": 1, "tasks": 1, "methods": {}}))
    paths = write_quickstart_report(cfg, layout)
    assert json.loads(paths["json"].read_text())["training"] == [{
        "method": "react", "round": 1, "exported": 161, "tasks": 131, "by_source": {"react": 109, "reflact": 52},
        "by_store": {"react/round1": 70, "reflact/round1": 52, "imports/0": 39, "/data/world/trajectories.jsonl": 0},
        "train_examples": 147, "dev_examples": 14, "steps": 111, "best_step": 95, "trained_on": "base",
        "epochs": 1.0, "lora_r": 16}]
    assert ("| react tuned-r1 | base | 161 (react 109, reflact 52) | react/round1 70, reflact/round1 52, imports/0 39, "
            "/data/world/trajectories.jsonl 0 | 131 | 147 / 14 | 111 (95) | 1 | 16 |") in paths["md"].read_text()


def test_report_says_a_later_round_trained_on_the_previous_model_for_its_epochs(tmp_path: Path) -> None:
    cfg = load_quickstart("smoke", ["rounds=2", "round_start=previous", "round_epochs=2"])
    layout = Layout(tmp_path)
    for r in (1, 2):
        layout.dataset("react", r).mkdir(parents=True)
        (layout.dataset("react", r) / "export_summary.json").write_text(json.dumps(
            {"exported": 10 * r, "tasks": 5 * r, "methods": {"react": {"exported": 10 * r}}}))
        layout.adapter("react", r).mkdir(parents=True)
        (layout.adapter("react", r) / "training_meta.json").write_text(json.dumps(
            {"train_examples": 9 * r, "dev_examples": r, "steps": 7 * r, "best_step": 7 * r}))
    assert [(t["round"], t["trained_on"], t["exported"], t["epochs"]) for t in training_rows(cfg, layout)] == [
        (1, "base", 10, cfg.train.num_train_epochs), (2, "tuned-r1", 20, 2.0)]


def test_report_rows_per_phrasing_pair_the_tuned_model_with_the_prompted_one(tmp_path: Path) -> None:
    report = _report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)
    est = {"mean": 0.25, "low": 0.2, "high": 0.3, "n": 120}
    cmp = {"metric": "correct_grounded", "tasks": 120, "pairs": 120, "mean_a": 0.1, "mean_b": 0.25,
           "diff": {"mean": 0.15, "low": 0.05, "high": 0.25, "n": 120}, "b": 4, "c": 22, "p_value": 0.00018}
    report["models"][0]["by_phrasing"] = {"new_phrasing": {"metrics": {"correct_grounded": {**est, "mean": 0.1, "low": 0.05,
                                                                                     "high": 0.16}},
                                                           "tasks": 120, "vs_first": None}}
    report["models"][1]["by_phrasing"] = {"new_phrasing": {"metrics": {"correct_grounded": est}, "tasks": 120,
                                                           "vs_first": {"correct_grounded": cmp}}}
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(json.dumps(report))
    paths = write_quickstart_report(load_quickstart("smoke"), layout)
    md = paths["md"].read_text()
    assert "| model | new_phrasing |" in md
    assert "| tuned-r1 | 0.250 [0.200, 0.300] (n=120); +15.0 pts, 4 / 22, p 0.00018 |" in md
    rows = json.loads(paths["json"].read_text())["rows"]
    assert rows[1]["by_phrasing"]["new_phrasing"]["vs_prompted"]["c"] == 22
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_the_report_gives_the_command_that_reruns_the_run_with_secrets_masked(tmp_path: Path) -> None:
    from actune.cli.quickstart import reproduce_command
    command = reproduce_command("full", tmp_path / "run", ["world.phrasings=families", "serve.api_key=sk-123"], 21,
                                None)
    assert command == (f"actune quickstart --preset full --seed 21 --out {tmp_path / 'run'} world.phrasings=families "
                       "'serve.api_key=***'")
    layout = Layout(tmp_path / "run")
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    layout.state.write_text(json.dumps({"done": {}, "command": command}))
    md = write_quickstart_report(load_quickstart("smoke"), layout)["md"].read_text()
    assert f"Reproduce: `{command}` (the same folder resumes)." in md and "sk-123" not in md
    # a secret inside a mapping given as a value is masked too; a special token's name is not a secret
    assert reproduce_command("full", "o", ["serve={api_key: sk-9, port: 1}", "train.sft.eos_token=<e>"], None,
                             None) == "actune quickstart --preset full --out o 'serve=***' 'train.sft.eos_token=<e>'"
    # as JSON, as a flag's value in vLLM's arguments, and as a password written into an endpoint's URL
    leaky = ['serve={"api_key": "SEK1"}', "serve.extra_args=[--api-key, SEK2]", "serve.extra_args=[--api_key=SEK4]",
             "bootstrap.endpoints=[http://u:SEK3@h/v1]", "serve.extra_args=[--max-num-seqs, 4]"]
    assert reproduce_command("full", "o", leaky, None, None) == (
        "actune quickstart --preset full --out o 'serve=***' 'serve.extra_args=***' 'serve.extra_args=***' "
        "'bootstrap.endpoints=[http://***@h/v1]' 'serve.extra_args=[--max-num-seqs, 4]'")


def test_fever_refuses_the_oracle_prompt_and_a_pilot_report_says_dev(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="oracle_baseline: FEVER claims have no kind"):
        load_quickstart("fever", ["oracle_baseline=true"])
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    md = write_quickstart_report(load_quickstart("smoke", ["eval_split=dev"]), layout)["md"].read_text()
    assert "Means over held-out dev questions (a pilot: not a result)" in md


def test_a_dpo_model_is_reported_against_the_sft_model_it_started_from(tmp_path: Path) -> None:
    report = _report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)
    dpo = json.loads(json.dumps(report["models"][1]))
    against_sft = {"metric": "correct_grounded", "tasks": 300, "pairs": 300, "mean_a": 0.3, "mean_b": 0.36,
                   "diff": {"mean": 0.06, "low": 0.01, "high": 0.11, "n": 300}, "b": 9, "c": 27, "p_value": 0.004}
    dpo.update(label="tuned-dpo", vs_reference={"label": "tuned-r1", "correct_grounded": against_sft})
    report["models"].append(dpo)
    rows = headline_rows(report, "react")
    assert "vs_reference" not in rows[1]
    assert rows[2]["vs_reference"] == {"label": "tuned-r1", **against_sft}
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(json.dumps(report))
    md = write_quickstart_report(load_quickstart("smoke"), layout)["md"].read_text()
    assert "| tuned-dpo | tuned-r1 | 0.060 [0.010, 0.110] | 9 / 27 | 0.004 |" in md


def test_a_users_own_run_gets_the_figures_and_tests_but_not_our_bar(tmp_path: Path) -> None:
    """The shipped presets set ``bar: true``; a config of the user's own (here the smoke preset with bar=false)
    gets the same rows, pairs and yardsticks, and no verdict column of ours (issue #49 item 8)."""
    layout = Layout(tmp_path)
    layout.eval_dir("react").mkdir(parents=True)
    (layout.eval_dir("react") / "report.json").write_text(
        json.dumps(_report((0.1, 0.05, 0.15), (0.3, 0.2, 0.4), b=1, c=20, p=1e-5)))
    assert load_quickstart("smoke").bar and all(load_quickstart(p).bar for p in ("full", "hotpotqa", "fever"))
    own = write_quickstart_report(load_quickstart("smoke", ["bar=false"]), layout)
    data, md = json.loads(own["json"].read_text()), own["md"].read_text()
    assert data["bar"] is None and all("bar" not in r for r in data["rows"])
    assert "| tuned-r1 | 0.300 [0.200, 0.400] |" in md and "met" not in md and "The bar" not in md
    assert md.count("| model | correct & grounded |") == 1 and "vs best yardstick (diff, b / c, p) |\n" in md
    ours = write_quickstart_report(load_quickstart("smoke"), layout)
    assert "**met**" in ours["md"].read_text() and json.loads(ours["json"].read_text())["bar"]["points"] == 0.10


def test_the_oracle_row_is_defined_where_it_is_shown() -> None:
    from actune.quickstart.report import _row_labels

    said = _row_labels([{"label": "prompted"}, {"label": "prompted-oracle"}, {"label": "tuned-r2"}])
    assert "`prompted-oracle`: the same model given exemplars of each question's own type" in said
    assert said.startswith("Rows: `prompted`") and said.endswith(".")


def test_every_row_label_a_report_can_have_is_defined() -> None:
    """DPO's and GRPO's rows and the yardsticks' are defined where they are shown, as the rounds' are."""
    from actune.quickstart.report import _row_labels

    said = _row_labels([{"label": "prompted"}, {"label": "tuned-r1"}, {"label": "tuned-dpo"}, {"label": "tuned-grpo"},
                        {"label": "yardstick:constant"}])
    assert "`tuned-dpo`: the last round's model trained further by DPO" in said
    assert "`tuned-grpo`: the last round's model trained further by GRPO" in said
    assert "`yardstick:NAME`: a content-free policy, no model" in said
    assert "tuned-dpo" not in _row_labels([{"label": "prompted"}, {"label": "tuned-r1"}])
