"""What a method's round trains on: the stores it exports (its own rounds, the methods mixed in, the imported
sets), the model it starts from (``round_start``) and its epochs (``round_epochs``)."""

from __future__ import annotations

from pathlib import Path

from actune.bootstrap.export import convertible
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.layout import Layout
from actune.train.common import MERGED_DIR
from actune.train.config import TrainConfig

__all__ = ["export_methods", "export_stores", "imported_stores", "trains_on_previous", "round_epochs", "train_base",
           "round_train_config"]


def export_methods(cfg: QuickstartConfig, method: str) -> list[str]:
    """The methods whose stores feed ``method``'s adapter: its own first (the per-task cap keeps the first
    episodes), then, with ``mix_methods``, every other method whose steps convert into ``method``'s."""
    others = [m for m in cfg.methods if m != method and convertible(m, method)] if cfg.mix_methods else []
    return [method, *others]


def export_stores(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> list[Path]:
    """The stores exported for ``method``'s round-``r`` adapter, in order: every round so far of each method
    of :func:`export_methods` (with ``round_start=previous``, round ``r``'s only: the earlier rounds are in
    the model it trains on), then the imported ones (:func:`imported_stores`; with every round that trains from
    the base model)."""
    first = r if trains_on_previous(cfg, r, method) else 1
    own = [layout.store(m, k) for m in export_methods(cfg, method) for k in range(first, r + 1)
           if layout.store(m, k).exists()]
    return own + (imported_stores(cfg, layout, method) if first == 1 else [])


def imported_stores(cfg: QuickstartConfig, layout: Layout, method: str = "react") -> list[Path]:
    """The stores of ``cfg.imports``, in order (an imported set's store under the run, or a store as it is), then
    with ``cfg.gold_paths`` the gold paths' store ``method`` trains on (:meth:`Layout.gold_paths_of`)."""
    stores = [Path(src.path) if src.format == "store" else layout.imported(i) for i, src in enumerate(cfg.imports)]
    return stores + ([layout.gold_paths_of(method)] if cfg.gold_paths else [])


def trains_on_previous(cfg: QuickstartConfig, r: int, method: str) -> bool:
    """Whether ``method``'s round ``r`` trains on round r-1's merged model with its own data only
    (``round_start``)."""
    return r > 1 and cfg.round_start_of(method) == "previous"


def round_epochs(cfg: QuickstartConfig, r: int, method: str) -> float:
    """``train.num_train_epochs`` of ``method``'s round ``r``: its ``round_epochs`` for rounds >= 2 when set."""
    epochs = cfg.round_epochs_of(method)
    return epochs if r > 1 and epochs is not None else cfg.train.num_train_epochs


def train_base(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> str:
    """The model ``method``'s round-``r`` adapter trains on: the preset's base model, or with
    ``round_start=previous`` (rounds >= 2) round r-1's merged model."""
    if not trains_on_previous(cfg, r, method):
        return cfg.train.base_model

    return str(layout.adapter(method, r - 1) / MERGED_DIR)


def round_train_config(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> TrainConfig:
    """The training section of ``method``'s round-``r`` training: the preset's recipe on the round's dataset, base
    model (:func:`train_base`) and epochs (:func:`round_epochs`), the run's seed."""
    return cfg.train.model_copy(update={"dataset": layout.dataset(method, r), "output_dir": layout.adapter(method, r),
                                        "base_model": train_base(cfg, layout, method, r),
                                        "num_train_epochs": round_epochs(cfg, r, method), "seed": cfg.seed})
