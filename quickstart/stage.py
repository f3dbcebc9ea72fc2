"""A stage: one named step of a run, skipped on a resume once done, with its share of the ETA."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Stage"]


@dataclass
class Stage:
    name: str
    """Its key in the resume state, and what the progress lines call it."""
    estimate_s: float
    run: Callable[[], None]
