"""What an export wrote: per source method, what each filter removed (``export_summary.json`` in the dataset
folder), read by the export, its dataset card and the quickstart's report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["MethodCounts", "ExportSummary"]


@dataclass
class MethodCounts:
    """What happened to the kept records of one source method."""

    kept: int = 0
    unconvertible: int = 0
    """Not convertible into the adapter's step format."""
    duplicates: int = 0
    """Near-duplicates of an earlier episode of the same task."""
    capped: int = 0
    """Over ``max_per_task``."""
    incomplete_reflections: int = 0
    """ReflAct-format records with a reflection lacking a part, left out by ``require_reflection_parts``."""
    shares: int = 0
    """Left out by ``method_shares`` or ``store_shares`` (a method or store not named, or more than its share)."""
    exported: int = 0


@dataclass
class ExportSummary:
    """What an export wrote (``export_summary.json`` in the dataset folder)."""

    steps_method: str
    wire: str
    stores: list[str]
    methods: dict[str, MethodCounts] = field(default_factory=dict)
    """Per source method, in order of first appearance."""
    exported: int = 0
    tasks: int = 0
    """Tasks with at least one exported example."""
    by_store: dict[str, int] = field(default_factory=dict)
    """Examples exported from each store, in the order the stores were given: where the data came from (the
    model's own rounds, a teacher's imported set, another run's store)."""
    judge: dict[str, int] = field(default_factory=dict)
    """How the kept records read were judged (:func:`actune.bootstrap.export.judge_counts`), from the same read
    as the examples: a store still being appended to cannot make the two disagree."""
    origins: dict[str, int] = field(default_factory=dict)
    """Exported examples by where the episode came from: ``bootstrapped`` (the agent loop run on a model),
    ``imported`` (``actune import``: trajectories from elsewhere), ``scripted`` (gold paths)."""

    def counts(self, method: str) -> MethodCounts:
        """The counts of source method ``method``, added on its first record."""
        return self.methods.setdefault(method, MethodCounts())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """The per-method counts as a small text table (what ``actune export`` prints)."""
        cols = ["kept", "unconvertible", "incomplete_reflections", "duplicates", "capped", "shares", "exported"]
        total = MethodCounts(**{c: sum(getattr(m, c) for m in self.methods.values()) for c in cols})
        rows = [[name] + [str(getattr(m, c)) for c in cols] for name, m in [*self.methods.items(), ("total", total)]]
        head = ["method"] + cols
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in [head, *rows]]
        return "\n".join(lines) + f"\ntasks covered: {self.tasks}"
