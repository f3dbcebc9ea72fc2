"""What each round trains on: its stores, base model and epochs, per method."""

from __future__ import annotations

from pathlib import Path

from actune.quickstart.config import load_quickstart
from actune.quickstart.layout import Layout
from actune.quickstart.round_inputs import (
    export_stores,
    round_train_config,
    train_base,
)


def _touch_stores(layout: Layout, methods: tuple[str, ...], rounds: tuple[int, ...]) -> None:
    for method in methods:
        for r in rounds:
            layout.store(method, r).parent.mkdir(parents=True, exist_ok=True)
            layout.store(method, r).touch()


def test_round_start_previous_trains_round_r_on_its_new_stores_and_the_previous_merged_model(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    _touch_stores(layout, ("react", "reflact"), (1, 2))
    base = load_quickstart("full", ["mix_methods=true"])
    prev = load_quickstart("full", ["mix_methods=true", "round_start=previous"])
    assert export_stores(base, layout, "react", 2) == [layout.store("react", 1), layout.store("react", 2),
                                                       layout.store("reflact", 1), layout.store("reflact", 2)]
    assert export_stores(prev, layout, "react", 2) == [layout.store("react", 2), layout.store("reflact", 2)]
    assert export_stores(prev, layout, "react", 1) == [layout.store("react", 1), layout.store("reflact", 1)]
    assert train_base(base, layout, "react", 2) == "smollm2-135m"
    assert train_base(prev, layout, "react", 1) == "smollm2-135m"
    assert train_base(prev, layout, "reflact", 2) == str(layout.adapter("reflact", 1) / "merged")


def test_round_start_and_round_epochs_per_method(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    _touch_stores(layout, ("react", "reflact"), (1, 2))
    cfg = load_quickstart("full", ["mix_methods=true", "round_start={react: previous}", "round_epochs={react: 2}"])
    assert export_stores(cfg, layout, "react", 2) == [layout.store("react", 2), layout.store("reflact", 2)]
    assert export_stores(cfg, layout, "reflact", 2) == [layout.store("reflact", 1), layout.store("reflact", 2)]
    react, reflact = (round_train_config(cfg, layout, m, 2) for m in ("react", "reflact"))
    assert (react.base_model, react.num_train_epochs) == (str(layout.adapter("react", 1) / "merged"), 2.0)
    assert (reflact.base_model, reflact.num_train_epochs) == ("smollm2-135m", 3.0)
    assert round_train_config(cfg, layout, "react", 1).num_train_epochs == 3.0


def test_round_train_config_sets_each_rounds_data_base_and_epochs(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    cfg = load_quickstart("full", ["seed=8", "round_start=previous", "round_epochs=2"])
    one, two = (round_train_config(cfg, layout, "react", r) for r in (1, 2))
    assert (one.dataset, one.output_dir, one.base_model, one.num_train_epochs, one.seed) == (
        layout.dataset("react", 1), layout.adapter("react", 1), "smollm2-135m", 3.0, 8)
    assert (two.dataset, two.output_dir, two.base_model, two.num_train_epochs, two.seed) == (
        layout.dataset("react", 2), layout.adapter("react", 2), str(layout.adapter("react", 1) / "merged"), 2.0, 8)
    assert round_train_config(load_quickstart("full"), layout, "react", 2).num_train_epochs == 3.0
