"""bench/ablation.py's own logic: which stores and base model the other arm is trained from, and the rows and
table it builds from an eval report (the ablation itself trains and serves the real model and asserts nothing)."""

from __future__ import annotations

from bench_script import load

ablation = load("ablation")


def test_the_other_arm_reads_the_stores_the_run_did_not(tmp_path):
    from actune.quickstart.config import load_quickstart
    from actune.quickstart.layout import Layout
    from actune.quickstart.round_inputs import export_stores

    layout = Layout(tmp_path)
    for method in ("react", "reflact"):
        for r in (1, 2):
            layout.store(method, r).parent.mkdir(parents=True)
            layout.store(method, r).touch()
    mixed = load_quickstart("full", ["mix_methods=true"])
    flipped = mixed.model_copy(update={"mix_methods": False})
    assert export_stores(mixed, layout, "react", 2) == [layout.store("react", 1), layout.store("react", 2),
                                                        layout.store("reflact", 1), layout.store("reflact", 2)]
    assert export_stores(flipped, layout, "react", 2) == [layout.store("react", 1), layout.store("react", 2)]
    assert export_stores(mixed, layout, "reflact", 1) == [layout.store("reflact", 1)]


def test_the_flipped_choice_and_its_arm_labels():
    from actune.quickstart.config import load_quickstart

    cfg = load_quickstart("full", ["mix_methods=true"])
    assert ablation.flipped(cfg, "mix_methods", "react").mix_methods is False
    assert ablation.arm_label(cfg, "mix_methods", "react") == "tuned-mixed"
    other = ablation.flipped(cfg, "round_start", "react")
    assert other.round_start == {"react": "previous", "reflact": "base"}  # only the ablated method flips
    assert (ablation.arm_label(cfg, "round_start", "react"), ablation.arm_label(other, "round_start", "react")) == (
        "tuned-from-base", "tuned-from-previous")
    per_method = load_quickstart("full", ["round_start={react: previous}"])
    assert ablation.flipped(per_method, "round_start", "react").round_start == {"react": "base", "reflact": "base"}
    assert list(ablation.ARMS["round_start"].values()) == ["tuned-from-base", "tuned-from-previous"]


def test_rows_carry_training_figures_and_the_table_shows_both_arms():
    def model(label, mean, low, high, vs=None):
        m = {"label": label, "metrics": {"correct_grounded": {"mean": mean, "low": low, "high": high, "n": 100}}}
        if vs:
            m["vs_first"] = {"correct_grounded": vs}
        return m

    vs_own = {"diff": {"mean": 0.12, "low": 0.04, "high": 0.2}, "b": 3, "c": 15, "p_value": 0.0075}
    vs_mixed = {"diff": {"mean": 0.2, "low": 0.11, "high": 0.29}, "b": 2, "c": 22, "p_value": 3.6e-5}
    report = {"models": [model("prompted", 0.1, 0.05, 0.16), model("tuned-own", 0.22, 0.14, 0.3, vs_own),
                         model("tuned-mixed", 0.3, 0.21, 0.39, vs_mixed)]}
    figures = {"tuned-own": {"train_examples": 98, "best_step": 60, "best_eval_loss": 0.1234, "steps": 75},
               "tuned-mixed": {"train_examples": 140, "best_step": 105, "best_eval_loss": 0.1111, "steps": 105}}
    rows = ablation.sweep_rows(report, figures)
    assert rows[0] == {"label": "prompted", "dev_cg": 0.1, "dev_cg_low": 0.05, "dev_cg_high": 0.16, "n": 100}
    assert ablation.format_table(rows).splitlines()[2:] == [
        "| prompted | – | – | – | 0.100 [0.050, 0.160] | reference |  |",
        "| tuned-own | 98 | 60 (75) | 0.1234 | 0.220 [0.140, 0.300] | +12.0 pts, 3/15 | 0.0075 |",
        "| tuned-mixed | 140 | 105 (105) | 0.1111 | 0.300 [0.210, 0.390] | +20.0 pts, 2/22 | 3.6e-05 |",
    ]
