"""bench/rank_sweep.py's own logic: the rows and the table it builds from an eval report (the sweep itself trains
and serves the real model and asserts nothing)."""

from __future__ import annotations

from bench_script import load

sweep = load("rank_sweep")


def _model(label, mean, low, high, vs=None):
    m = {"label": label, "metrics": {"correct_grounded": {"mean": mean, "low": low, "high": high, "n": 100}}}
    if vs:
        m["vs_first"] = {"correct_grounded": vs}
    return m


def test_rows_pair_each_rank_with_its_training_figures_and_the_table_shows_them():
    vs = {"diff": {"mean": 0.12, "low": 0.05, "high": 0.2}, "b": 3, "c": 15, "p_value": 0.0075}
    report = {"models": [_model("prompted", 0.1, 0.05, 0.16), _model("tuned-r4", 0.22, 0.14, 0.3, vs)]}
    figures = {"tuned-r4": {"rank": 4, "alpha": 8, "train_examples": 136, "best_step": 68, "best_eval_loss": 0.1234,
                   "steps": 102, "trainable_params": 1_221_120}}
    rows = sweep.sweep_rows(report, figures)
    assert rows[0] == {"label": "prompted", "dev_cg": 0.1, "dev_cg_low": 0.05, "dev_cg_high": 0.16, "n": 100}
    assert rows[1]["rank"] == 4 and rows[1]["b"] == 3 and rows[1]["p"] == 0.0075
    assert sweep.format_table(rows).splitlines()[2:] == [
        "| prompted | – | – | – | 0.100 [0.050, 0.160] | reference |  |",
        "| tuned-r4 | 1.22M | 68 (102) | 0.1234 | 0.220 [0.140, 0.300] | +12.0 pts [+5.0, +20.0], 3/15 | 0.0075 |",
    ]


def test_adapter_parameters_counts_every_saved_tensor(tmp_path):
    import torch
    from safetensors.torch import save_file

    save_file({"a.lora_A.weight": torch.zeros(4, 576), "a.lora_B.weight": torch.zeros(576, 4)},
              str(tmp_path / "adapter_model.safetensors"))
    assert sweep.adapter_parameters(tmp_path) == 2 * 4 * 576


def test_a_run_stored_by_an_older_actune_is_read_as_the_quickstart_reads_it(tmp_path):
    import json

    from actune.quickstart.config import load_quickstart
    from actune.quickstart.layout import STATE_FILE
    from actune.quickstart.state import comparable

    cfg = load_quickstart("smoke")
    old = comparable(cfg.model_dump(mode="json"))  # what the quickstart stores: no per-hardware table

    def rename(node):  # an agent section's episode_steps was called max_steps
        if isinstance(node, dict):
            node = {k: rename(v) for k, v in node.items()}
            if "episode_steps" in node and "regime" in node:
                node["max_steps"] = node.pop("episode_steps")
        return [rename(v) for v in node] if isinstance(node, list) else node

    stored = rename(old)
    assert stored != old  # the smoke preset has agent sections
    (tmp_path / STATE_FILE).write_text(json.dumps({"config": stored, "done": {}}))
    assert cfg.hardware_overrides  # the smoke preset has a table, which the stored run does not keep
    # neither the per-hardware table nor what only the report says (its scale note, our bar) is stored with a run
    assert sweep.load_run_config(tmp_path) == cfg.model_copy(update={"hardware_overrides": {}, "scale_note": None,
                                                                     "bar": False})
