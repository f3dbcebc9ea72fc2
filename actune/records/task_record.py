"""The task record every environment, method and metric shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Task:
    """One question or goal.

    ``env`` names the environment that serves it (``wiki``, ``fever``, ``docqa``, ``alfworld``...),
    ``answer`` is the gold answer (FEVER: the label; ALFWorld: empty, success is the game's win),
    ``aliases`` are other accepted answers, ``meta`` keeps source fields (type, level,
    supporting titles...). Grounding checks read ``meta["supporting_titles"]`` when present. An episode's
    record keeps a copy of its own as :class:`actune.records.trajectory.TaskRecord`, this class by inheritance.
    """

    id: str
    question: str
    answer: str = ""
    env: str = "wiki"
    split: str = "train"
    aliases: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Task":
        return cls(**d)
