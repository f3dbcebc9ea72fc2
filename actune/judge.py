"""Judge one finished episode: is it correct, grounded and well-formed, and so worth keeping?

    verdict = judge(traj, require_grounded=True)
    record_verdict(traj, verdict)          # traj.info["verdict"], traj.scores["grounded"/"kept"]

A small model answers comparisons right by chance half the time, so an episode is kept only when it is correct
(the task metric's flag), grounded (it read what holds the answer: every sentence of one evidence set shown in
its observations where the task names them, else every supporting page opened; for FEVER any one evidence set)
and well-ordered (:func:`actune.agent.validate.step_order_problems`), so the record renders as a clean example.
Methods that read no pages (``standard``, ``cot``, ``cot_sc``) cannot be grounded: their verdict says
``grounding_applies: false`` and they are kept on correctness and step order alone. A ReflAct episode's
reflections that lack a part are noted (``reflection_problems``), not held against ``kept``.

The rules in full: docs/modules.md, actune.judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from actune.agent.method_registry import reads_no_pages
from actune.agent.reflection_parts import reflection_part_problems
from actune.agent.validate import step_order_problems
from actune.envs.titles import normalize_title
from actune.records.trajectory import Trajectory

__all__ = ["Verdict", "evidence_sets", "is_shown", "judge", "observations_text", "record_verdict",
           "shown_text", "titles_read", "verdict_of"]

@dataclass
class Verdict:
    """The judgement of one episode (stored whole in ``traj.info["verdict"]``)."""

    correct: bool
    grounded: bool
    kept: bool
    grounding_checked: bool = True
    """False when grounding was not checked: the task names no supporting titles (grounded is then
    vacuously true) or grounding does not apply to the method (grounded is then false)."""
    require_grounded: bool = True
    missing_titles: list[str] = field(default_factory=list)
    """Supporting titles the episode never read (as the task spells them; with evidence sets, those of
    the closest set)."""
    order_problems: list[str] = field(default_factory=list)
    grounding_applies: bool = True
    """False for a method that reads no pages (a spec's ``reads_pages``, :mod:`actune.agent.method_registry`): kept
    on correctness alone. Defaults to true so verdicts stored before this field existed load unchanged."""
    reflection_problems: list[str] = field(default_factory=list)
    """ReflAct reflections lacking a part (module docstring); not part of ``kept``."""
    grounding_level: str = "page"
    """``"evidence"``: ``grounded`` says the supporting sentences were shown; ``"page"``: that the supporting
    pages were opened (no sentences known for the task)."""
    pages_read: bool | None = None
    """The page-level check (every supporting page of one set opened), whatever ``grounding_level`` is; None in
    verdicts stored before it existed."""
    missing_evidence: list[str] = field(default_factory=list)
    """Evidence sentences never shown (those of the closest set), with ``grounding_level == "evidence"``."""
    evidence_known: bool = True
    """False when the task's source lacks the sentences that hold its answer (``meta["evidence_known"]``): its
    ``grounded`` is page-level only and reports leave it out of the evidence-level headline."""


def titles_read(traj: Trajectory) -> list[str]:
    """The page titles the episode's observations came from, in the order first read."""
    env_info = traj.info.get("env_info")
    titles = env_info.get("titles") if isinstance(env_info, dict) else None
    # a store edited by hand or written by another tool: what is not a list of titles names no page read
    return [t for t in titles if isinstance(t, str)] if isinstance(titles, list) else []


def _squash(text: str) -> str:
    return " ".join(text.split()).lower()


def shown_text(observations: Iterable[str]) -> str:
    """What ``observations`` showed, whitespace-squashed and lower-cased (one string: an evidence sentence is
    looked for in it whole, :func:`is_shown`)."""
    return _squash(" \n ".join(observations))


def is_shown(sentence: str, shown: str) -> bool:
    """Whether ``sentence`` is in ``shown`` (:func:`shown_text`), whatever its spacing and case."""
    return _squash(sentence) in shown


def observations_text(traj: Trajectory) -> str:
    """:func:`shown_text` of the episode's observations."""
    return shown_text(s.text for s in traj.steps if s.type == "observation")


def evidence_sets(task_meta: dict[str, Any]) -> list[list[str]]:
    """The task's evidence sets (lists of sentences; empty ones and non-strings dropped)."""
    sets = task_meta.get("evidence") or []
    out = [[x for x in s if isinstance(x, str) and x.strip()] for s in sets if isinstance(s, list)]
    return [s for s in out if s]


def _missing_evidence(sets: list[list[str]], shown: str) -> list[str]:
    """The sentences of the closest set (fewest unshown, the first on a tie) that ``shown`` lacks."""
    return min(([x for x in s if not is_shown(x, shown)] for s in sets), key=len)


def _missing(titles: list[Any], read: set[str]) -> list[str]:
    """The titles of ``titles`` not read, as the task spells them."""
    return [str(t) for t in titles if normalize_title(str(t)) not in read]


def judge(traj: Trajectory, require_grounded: bool = True) -> Verdict:
    """The verdict for ``traj`` (see the module docstring for the rules)."""
    correct = bool(traj.correct)
    problems = step_order_problems(traj)
    if reads_no_pages(traj.method):
        return Verdict(correct=correct, grounded=False, kept=correct and not problems, grounding_checked=False,
                       require_grounded=require_grounded, order_problems=problems, grounding_applies=False,
                       reflection_problems=reflection_part_problems(traj))
    read = {normalize_title(t) for t in titles_read(traj)}
    # An empty set would be read "in full" by every episode: ignore it rather than ground everything.
    sets = [s for s in traj.task.meta.get("evidence_sets") or [] if s]
    if sets:
        missing = min((_missing(s, read) for s in sets), key=len)  # min keeps the first of equals
        checked = True
    else:
        supporting = traj.task.meta.get("supporting_titles") or []
        missing = _missing(supporting, read)
        checked = bool(supporting)
    pages_read = not missing
    sentences = evidence_sets(traj.task.meta)
    missing_evidence = _missing_evidence(sentences, observations_text(traj)) if sentences else []
    grounded = not missing_evidence if sentences else pages_read
    kept = correct and (grounded or not require_grounded) and not problems
    return Verdict(correct=correct, grounded=grounded, kept=kept, grounding_checked=checked or bool(sentences),
                   require_grounded=require_grounded, missing_titles=missing, order_problems=problems,
                   reflection_problems=reflection_part_problems(traj),
                   grounding_level="evidence" if sentences else "page", pages_read=pages_read,
                   missing_evidence=missing_evidence,
                   evidence_known=traj.task.meta.get("evidence_known") is not False)


def record_verdict(traj: Trajectory, verdict: Verdict) -> Trajectory:
    """Write ``verdict`` into the record: whole in ``info["verdict"]``, and ``grounded``/``kept`` as 0/1
    scores beside the metric's (so filters over ``scores`` see them). Returns ``traj``."""
    traj.info["verdict"] = asdict(verdict)
    if verdict.evidence_known:
        traj.scores["grounded"] = float(verdict.grounded)
    else:  # page-level only where the source lacks the sentences: left out of the evidence-level headline
        traj.scores.pop("grounded", None)
    if verdict.pages_read is not None:
        traj.scores["pages_read"] = float(verdict.pages_read)
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
