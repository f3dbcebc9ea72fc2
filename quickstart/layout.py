"""Where each file of one quickstart run goes, under one output folder::

    world/ or tasks/                     corpus and train/dev/test questions
    <method>/round<r>/trajectories.jsonl the round's bootstrap store (round >= 2: tasks.jsonl, the unsolved ones)
    <method>/round<r>/dataset/           the exported training set
    <method>/round<r>/adapter/           the adapter (+ merged/ when train.merge)
    <method>/round<r>/same_as_round.json a round that added no training data: not trained, its model is that round's
    <method>/dpo/, <method>/grpo/        after_sft: exploration store, pairs, adapter (+ adapter.rollouts/)
    imports/<i>/, gold_paths/            outside trajectories, imported into stores of the run
    eval/<method>/                       report.md/json, scores.png, per-model stores
    formats/<format>/                    formats (Figure 3): dataset/, adapter/, eval/ of one step format
    report.md, report.json, scores.png   the headline: tuned vs prompted, per method and round
    quickstart-state.json                stages done, their wall time, the config they ran with
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from actune.agent.method_registry import convertible

__all__ = ["STATE_FILE", "SAME_AS_FILE", "Layout", "gold_form", "served_tuned_model"]

STATE_FILE = "quickstart-state.json"
SAME_AS_FILE = "same_as_round.json"
"""In a round's folder when the round added no training data: ``{"round": k, "why": ...}``, round k's model is its."""


@dataclass(frozen=True)
class Layout:
    """Where each file of one quickstart run goes."""

    out: Path
    source: str = "world"
    """``QuickstartConfig.source``: where :attr:`tasks_dir` is."""

    @property
    def world(self) -> Path:
        return self.out / "world"

    @property
    def tasks_dir(self) -> Path:
        """The corpus and the train/dev/test questions: ``world/`` for a synthetic world, ``tasks/`` for real
        data (``source: hotpotqa``)."""
        return self.world if self.source == "world" else self.out / "tasks"

    @property
    def state(self) -> Path:
        return self.out / STATE_FILE

    def round_dir(self, method: str, r: int) -> Path:
        return self.out / method / f"round{r}"

    def store(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "trajectories.jsonl"

    def round_tasks(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "tasks.jsonl"

    def dataset(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "dataset"

    def trained_round(self, method: str, r: int) -> int:
        """The round whose model is round ``r``'s: ``r``, or an earlier one when round ``r`` added no training data
        and was not trained (:data:`SAME_AS_FILE`)."""
        marker = self.round_dir(method, r) / SAME_AS_FILE
        if r > 1 and marker.is_file():
            return self.trained_round(method, int(json.loads(marker.read_text(encoding="utf-8"))["round"]))
        return r

    def adapter(self, method: str, r: int) -> Path:
        """Round ``r``'s adapter folder (the trained round's, for a round that added no data)."""
        return self.round_dir(method, self.trained_round(method, r)) / "adapter"

    def objective_dir(self, method: str, objective: str) -> Path:
        """What ``objective`` (``after_sft``) trains for ``method``: ``<method>/<objective>/``."""
        return self.out / method / objective

    def explore_store(self, method: str) -> Path:
        """The SFT model's exploration episodes, DPO's pairs come from."""
        return self.objective_dir(method, "dpo") / "explore.jsonl"

    def pairs(self, method: str) -> Path:
        return self.objective_dir(method, "dpo") / "pairs"

    def objective_adapter(self, method: str, objective: str) -> Path:
        return self.objective_dir(method, objective) / "adapter"

    def eval_dir(self, method: str) -> Path:
        return self.out / "eval" / method

    def format_dir(self, fmt: str) -> Path:
        """What ``formats`` makes for step format ``fmt``: ``formats/<fmt>/``."""
        return self.out / "formats" / fmt

    def format_dataset(self, fmt: str) -> Path:
        return self.format_dir(fmt) / "dataset"

    def format_adapter(self, fmt: str) -> Path:
        return self.format_dir(fmt) / "adapter"

    def format_eval_dir(self, fmt: str) -> Path:
        """The eval of ``fmt``'s prompted and tuned models: report.md/json, per-model stores."""
        return self.format_dir(fmt) / "eval"

    def imported(self, i: int) -> Path:
        """The store of ``QuickstartConfig.imports[i]`` when it is imported (not a store used as it is)."""
        return self.out / "imports" / f"{i}" / "trajectories.jsonl"

    def imported_as_released(self, i: int) -> Path:
        """``imports[i]`` as imported, before its replay (``replay: true``) writes :meth:`imported`."""
        return self.out / "imports" / f"{i}" / "as_released.jsonl"

    @property
    def gold_paths(self) -> Path:
        """The store of the scripted teacher's episodes (``QuickstartConfig.gold_paths``), ReAct's form."""
        return self.out / "gold_paths" / "trajectories.jsonl"

    def gold_paths_of(self, method: str) -> Path:
        """The gold paths ``method`` trains on: ReAct's (which export converts into most formats), or the method's
        own form where a ReAct record cannot become one (ReflAct's: :func:`gold_form`)."""
        form = gold_form(method)
        return self.gold_paths if form == "react" else self.out / "gold_paths" / form / "trajectories.jsonl"


def gold_form(method: str) -> str:
    """The form of the scripted teacher's episodes ``method`` trains on: ReAct's, which export converts, else the
    method's own (written by :func:`actune.bootstrap.gold_paths.write_gold_paths`)."""
    return "react" if convertible("react", method) else method


def served_tuned_model(adapter: Path, base: str) -> tuple[str, Path | None]:
    """(model to serve, adapter or None) of a trained adapter folder: its merged weights when trained with
    ``train.merge`` (served at base speed), else the base model with the LoRA adapter."""
    merged = adapter / "merged"
    if merged.is_dir():
        return str(merged), None
    return base, adapter
