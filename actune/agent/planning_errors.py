"""The catalog of planning errors a PreFlect reflector checks plans against (data, not code).

Format (``actune/prompts/preflect_catalog.json`` is the default, the paper's three types)::

    {"source": "...", "errors": [{"name": "insufficient constraint verification",
      "description": "...", "failure_pattern": "...", "success_pattern": "..."}, ...]}

A catalog distilled from one's own trajectory stores can replace it (``AgentConfig.preflect_catalog``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from actune.agent.exemplars import BUILTIN_DIR
from actune.jsonl import read_json

__all__ = ["PlanningError", "PlanningErrorCatalog", "CatalogError", "DEFAULT_CATALOG", "load_catalog"]

DEFAULT_CATALOG = BUILTIN_DIR / "preflect_catalog.json"

_FIELDS = ("name", "description", "failure_pattern", "success_pattern")


class CatalogError(ValueError):
    """A catalog file is malformed; the message names the file and key."""


@dataclass(frozen=True)
class PlanningError:
    name: str
    description: str
    failure_pattern: str
    success_pattern: str


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
        return "\n".join(
            f"{i}. {e.name}: {e.description}\n   Failure pattern: {e.failure_pattern}\n"
            f"   Success pattern: {e.success_pattern}"
            for i, e in enumerate(self.errors, 1)
        )


def load_catalog(path: str | Path | None = None) -> PlanningErrorCatalog:
    """Load a catalog file (None: the default, the paper's three error types)."""
    p = Path(path) if path is not None else DEFAULT_CATALOG
    data = read_json(p, CatalogError, "planning-error catalog")
    if not isinstance(data, dict) or not isinstance(data.get("errors"), list) or not data["errors"]:
        raise CatalogError(f"{p}: expected an object with a non-empty 'errors' list")
    out = []
    for i, e in enumerate(data["errors"]):
        where = f"{p}: errors[{i}]"
        if not isinstance(e, dict):
            raise CatalogError(f"{where}: must be an object")
        extra = sorted(set(e) - set(_FIELDS))
        if extra:
            raise CatalogError(f"{where}: unknown key {extra[0]!r}")
        for k in _FIELDS:
            if not isinstance(e.get(k), str) or not e[k].strip():
                raise CatalogError(f"{where}.{k}: must be a non-empty string")
        out.append(PlanningError(**{k: " ".join(e[k].split()) for k in _FIELDS}))
    if len({_norm(e.name) for e in out}) != len(out):
        raise CatalogError(f"{p}: error names must be distinct")
    return PlanningErrorCatalog(tuple(out), str(data.get("source", "")))
