"""The catalog of planning errors a PreFlect reflector checks plans against (data, not code).

Format (``actune/prompts/preflect_catalog.json`` is the default, the paper's three types)::

    {"source": "...", "errors": [{"name": "insufficient constraint verification",
      "description": "...", "failure_pattern": "...", "success_pattern": "...",
      "examples": [{"question": "...", "analysis": "..."}]}, ...],
     "evidence": [{"error": "insufficient constraint verification", "examples": [{"question": "...",
      "analysis": "...", ...}]}, ...]}

``examples`` (optional, in an entry or in the top-level ``evidence`` that ``actune distill-errors`` writes,
matched to an entry by ``error``): tasks where the error separated a failed run from a successful one, each
its ``question`` and the ``analysis`` of what separated them (other keys, such as the episodes cited, are
not read). The reflector sees them under their entry, beside its failure and success patterns.

A catalog distilled from one's own trajectory stores can replace it (``AgentConfig.preflect_catalog``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from actune.agent.exemplars import BUILTIN_DIR
from actune.records.jsonl import read_json

__all__ = ["PlanningError", "ErrorExample", "PlanningErrorCatalog", "CatalogError", "DEFAULT_CATALOG",
           "load_catalog"]

DEFAULT_CATALOG = BUILTIN_DIR / "preflect_catalog.json"

_FIELDS = ("name", "description", "failure_pattern", "success_pattern")
_EXAMPLE_FIELDS = ("question", "analysis")


class CatalogError(ValueError):
    """A catalog file is malformed; the message names the file and key."""


@dataclass(frozen=True)
class ErrorExample:
    """One task on which the error separated a failed run from a successful one: the task's question and
    the analysis of what separated the two runs."""

    question: str
    analysis: str


@dataclass(frozen=True)
class PlanningError:
    name: str
    description: str
    failure_pattern: str
    success_pattern: str
    examples: tuple[ErrorExample, ...] = ()

    def render(self, number: int) -> str:
        """The entry as the reflector's prompts show it: what it is, its failure and success patterns, and
        the examples that show both."""
        lines = [f"{number}. {self.name}: {self.description}", f"   Failure pattern: {self.failure_pattern}",
                 f"   Success pattern: {self.success_pattern}"]
        lines += [f'   Example on "{x.question}": {x.analysis}' for x in self.examples]
        return "\n".join(lines)


def _norm(name: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", name.lower()).split())


@dataclass(frozen=True)
class PlanningErrorCatalog:
    errors: tuple[PlanningError, ...]
    source: str = ""

    def find(self, name: str) -> PlanningError | None:
        """The catalog entry a reflector meant by ``name`` (case, spaces, underscores and a leading
        number such as "1." ignored); None when it names no entry."""
        n = _norm(re.sub(r"^\s*\(?\d+[.)]?\s*", "", name))
        for e in self.errors:
            if _norm(e.name) == n:
                return e
        for e in self.errors:  # "constraint verification" or "insufficient constraint verification error"
            if n and (n in _norm(e.name) or _norm(e.name) in n):
                return e
        return None

    def render(self) -> str:
        """The catalog as the reflector's prompt shows it."""
        return "\n".join(e.render(i) for i, e in enumerate(self.errors, 1))


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{where}: must be a non-empty string")
    return " ".join(value.split())


def _examples(value: Any, where: str) -> tuple[ErrorExample, ...]:
    if not isinstance(value, list):
        raise CatalogError(f"{where}: must be a list")
    out = []
    for i, x in enumerate(value):
        if not isinstance(x, dict):
            raise CatalogError(f"{where}[{i}]: must be an object")
        out.append(ErrorExample(*(_text(x.get(k), f"{where}[{i}].{k}") for k in _EXAMPLE_FIELDS)))
    return tuple(out)


def _entry(e: Any, where: str) -> PlanningError:
    if not isinstance(e, dict):
        raise CatalogError(f"{where}: must be an object")
    extra = sorted(set(e) - set(_FIELDS) - {"examples"})
    if extra:
        raise CatalogError(f"{where}: unknown key {extra[0]!r}")
    texts = [_text(e.get(k), f"{where}.{k}") for k in _FIELDS]
    return PlanningError(*texts, _examples(e.get("examples", []), f"{where}.examples"))


def _with_evidence(entries: list[PlanningError], evidence: Any, p: Path) -> list[PlanningError]:
    """``entries`` with the examples of a distilled catalog's ``evidence`` added to the entry each names."""
    if evidence is None:
        return entries
    if not isinstance(evidence, list):
        raise CatalogError(f"{p}: evidence: must be a list")
    index = {_norm(e.name): k for k, e in enumerate(entries)}
    for i, ev in enumerate(evidence):
        where = f"{p}: evidence[{i}]"
        if not isinstance(ev, dict):
            raise CatalogError(f"{where}: must be an object")
        name = _text(ev.get("error"), f"{where}.error")
        if _norm(name) not in index:
            raise CatalogError(f"{where}.error: {name!r} names no entry of 'errors'")
        k = index[_norm(name)]
        entries[k] = replace(entries[k], examples=entries[k].examples
                             + _examples(ev.get("examples", []), f"{where}.examples"))
    return entries


def load_catalog(path: str | Path | None = None) -> PlanningErrorCatalog:
    """Load a catalog file (None: the default, the paper's three error types), with each entry's examples."""
    p = Path(path) if path is not None else DEFAULT_CATALOG
    data = read_json(p, CatalogError, "planning-error catalog")
    if not isinstance(data, dict) or not isinstance(data.get("errors"), list) or not data["errors"]:
        raise CatalogError(f"{p}: expected an object with a non-empty 'errors' list")
    entries = [_entry(e, f"{p}: errors[{i}]") for i, e in enumerate(data["errors"])]
    if len({_norm(e.name) for e in entries}) != len(entries):
        raise CatalogError(f"{p}: error names must be distinct")
    return PlanningErrorCatalog(tuple(_with_evidence(entries, data.get("evidence"), p)), str(data.get("source", "")))
