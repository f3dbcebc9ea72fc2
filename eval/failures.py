"""Failure modes of finished episodes, read off the records automatically (the ReAct paper's Table 2,
without the hand labelling).

Every record falls in exactly one mode:

- ``correct``: the task's metric says right (whatever ended the episode: an ALFWorld win ends it too);
- ``answered_wrong_grounded``: a wrong answer although every supporting page was read (a reasoning or
  reading error);
- ``answered_wrong_ungrounded``: a wrong answer and a supporting page never read (a search error);
- ``answered_wrong_unchecked``: a wrong answer to a task that names no supporting pages, or by a method that
  reads none (Standard, CoT: grounding does not apply);
- ``no_answer_<reason>``: no answer; the finish reason says why (``max_steps``, ``repetition``,
  ``parse_errors``, ``context_overflow``, ``server_error``, ``env_done``); a record that says
  ``answered`` but holds no prediction counts as ``no_answer_parse_errors`` (nothing could be read as one).

Grounded or not is the bootstrap judge's rule (:func:`actune.judge.judge`): every supporting page
read, or for FEVER any one whole evidence set, so the outcome table and the headline never disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from actune.judge import judge
from actune.records.trajectory import FINISH_REASONS, Trajectory

__all__ = ["FAILURE_MODES", "failure_mode", "failure_counts"]

FAILURE_MODES = (
    "correct",
    "answered_wrong_grounded",
    "answered_wrong_ungrounded",
    "answered_wrong_unchecked",
    *(f"no_answer_{r}" for r in FINISH_REASONS if r != "answered"),
)
"""Every mode, in report order."""


def failure_mode(traj: Trajectory) -> str:
    """The one mode of ``traj`` (see the module docstring)."""
    if traj.correct:
        return "correct"
    if traj.prediction is None:
        reason = traj.finish_reason if traj.finish_reason != "answered" else "parse_errors"
        return f"no_answer_{reason}"
    verdict = judge(traj)
    if not (verdict.grounding_checked and verdict.grounding_applies):
        return "answered_wrong_unchecked"
    return "answered_wrong_grounded" if verdict.grounded else "answered_wrong_ungrounded"


def failure_counts(records: Iterable[Trajectory]) -> dict[str, int]:
    """Records per mode: every mode of :data:`FAILURE_MODES`, in order, zeros included."""
    counts = Counter(failure_mode(t) for t in records)
    return {mode: counts.get(mode, 0) for mode in FAILURE_MODES}
