"""Judge one finished episode: is it correct, grounded and well-formed, and so worth keeping?

    verdict = judge(traj, require_grounded=True)
    record_verdict(traj, verdict)          # traj.info["verdict"], traj.scores["grounded"/"kept"]

- correct: the task metric's flag (``traj.correct``, set by the agent loop from
  ``actune.tasks.metrics.score_prediction``).
- grounded: every ``task.meta["supporting_titles"]`` entry, normalised with
  :func:`actune.envs.titles.normalize_title`, is among the pages the episode actually read
  (``traj.info["env_info"]["titles"]``: the ``titles`` of every observation's ``StepResult.info``,
  collected by the loop). A small model answers comparisons right by chance half the time; grounding
  keeps only answers that were looked up. Tasks without supporting titles cannot be checked: they
  count as grounded and the verdict says ``grounding_checked: false``.
- kept: correct, grounded (unless grounding is not required) and no step-order problems
  (:func:`actune.agent.validate.step_order_problems`), so the record renders as a clean example.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from actune.agent.validate import step_order_problems
from actune.envs.titles import normalize_title
from actune.trajectory import Trajectory

__all__ = ["Verdict", "judge", "record_verdict", "titles_read", "verdict_of"]


@dataclass
class Verdict:
    """The judgement of one episode (stored whole in ``traj.info["verdict"]``)."""

    correct: bool
    grounded: bool
    kept: bool
    grounding_checked: bool = True
    """False when the task names no supporting titles (grounded is then vacuously true)."""
    require_grounded: bool = True
    missing_titles: list[str] = field(default_factory=list)
    """Supporting titles the episode never read (as the task spells them)."""
    order_problems: list[str] = field(default_factory=list)


def titles_read(traj: Trajectory) -> list[str]:
    """The page titles the episode's observations came from, in the order first read."""
    env_info = traj.info.get("env_info") or {}
    return [t for t in env_info.get("titles") or [] if isinstance(t, str)]


def judge(traj: Trajectory, require_grounded: bool = True) -> Verdict:
    """The verdict for ``traj`` (see the module docstring for the rules)."""
    supporting = traj.task.meta.get("supporting_titles") or []
    read = {normalize_title(t) for t in titles_read(traj)}
    missing = [t for t in supporting if normalize_title(str(t)) not in read]
    grounded = not missing
    problems = step_order_problems(traj)
    kept = bool(traj.correct) and (grounded or not require_grounded) and not problems
    return Verdict(correct=bool(traj.correct), grounded=grounded, kept=kept,
                   grounding_checked=bool(supporting), require_grounded=require_grounded,
                   missing_titles=missing, order_problems=problems)


def record_verdict(traj: Trajectory, verdict: Verdict) -> Trajectory:
    """Write ``verdict`` into the record: whole in ``info["verdict"]``, and ``grounded``/``kept`` as 0/1
    scores beside the metric's (so filters over ``scores`` see them). Returns ``traj``."""
    traj.info["verdict"] = asdict(verdict)
    traj.scores["grounded"] = float(verdict.grounded)
    traj.scores["kept"] = float(verdict.kept)
    return traj


def verdict_of(traj: Trajectory) -> Verdict | None:
    """The verdict stored in a record (None when it has none)."""
    data: Any = traj.info.get("verdict")
    if not isinstance(data, dict):
        return None
    try:
        return Verdict(**data)
    except TypeError:
        return None
