"""PreFlect's reflector: its prompts, and a tolerant reader of the JSON critique it answers.

The reflector is the same backbone under its own prompt: it gets the task, the plan, the tools and
a summary of past actions, and diagnoses the plan against a catalog of planning errors. Its answer is
data: only the first ``{...}`` block is read, with ``json.loads``. An unreadable answer is asked for once
more (:func:`retry_note`); unreadable again, it counts as PASS (the plan stands) with the reason recorded,
so a small model's malformed JSON never stops an episode. On FAIL a second turn of the same conversation
(:func:`revision_request`) has the reflector write the revised plan from the errors it named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from actune.agent.planning_errors import PlanningError, PlanningErrorCatalog
from actune.records.trajectory import Step

__all__ = ["Critique", "REFLECTOR_PREFILL", "REVISION_PREFIX", "reflector_instruction", "reflector_request",
           "retry_note", "revision_request", "summarize_actions", "parse_critique", "extract_json_object", "MAX_ERRORS"]

#: The paper keeps at most the two most critical errors.
MAX_ERRORS = 2

#: The analysis shown to the agent is cut here (the record keeps all of it).
MAX_ANALYSIS_CHARS = 300

#: The reflector's answer is started for it: a small model then writes JSON rather than prose.
REFLECTOR_PREFILL = '{"analysis": "'

#: Where the reflector's revised plan starts (its second turn after a FAIL).
REVISION_PREFIX = "Revised plan:"


@dataclass
class Critique:
    """A reflector's verdict on one plan."""

    verdict: str  # "PASS" | "FAIL"
    analysis: str = ""
    errors: list[str] = field(default_factory=list)  # catalog names, most critical first
    unknown_errors: list[str] = field(default_factory=list)  # names the catalog does not have
    parse_error: str | None = None
    raw: str = ""
    retry_of: Critique | None = None  # the unreadable first answer this one was asked for after

    def line(self, catalog: PlanningErrorCatalog) -> str:
        """The critique as one line in the agent's context. A FAIL names each error the reflector found
        with what it is, the failure pattern to avoid and the success pattern to follow, so the agent reads
        (with ``preflect_reviser: agent``, writes) the revision against that error, not the plan in general."""
        # an unreadable answer's "analysis" is noise the agent should not act on
        analysis = "" if self.parse_error else " ".join(self.analysis.split())
        if len(analysis) > MAX_ANALYSIS_CHARS:
            analysis = analysis[:MAX_ANALYSIS_CHARS].rstrip() + " ..."
        if self.verdict == "PASS":
            return "PASS" + (f". {analysis}" if analysis else "")
        found = self.found(catalog)
        named = "; ".join([e.name for e in found] + self.unknown_errors) or "planning error"
        parts = [f"FAIL ({named}).", analysis]
        for e in found:
            parts.append(f"{_sentence(e.name.capitalize())} {_sentence(e.description)} "
                         f"Avoid: {_sentence(e.failure_pattern)} Instead: {_sentence(e.success_pattern)}")
        if not found:  # nothing the catalog knows: every entry's patterns, what to avoid and what to do instead
            parts.append("Revise: " + " ".join(f"Avoid: {_sentence(e.failure_pattern)} "
                                               f"Instead: {_sentence(e.success_pattern)}" for e in catalog.errors))
        return " ".join(p for p in parts if p)

    def found(self, catalog: PlanningErrorCatalog) -> list[PlanningError]:
        """The catalog entries this critique names (its unknown names left out)."""
        return [e for e in (catalog.find(n) for n in self.errors) if e is not None]

    def as_json(self) -> str:
        """The verdict as read, as one JSON object: the reflector's own turn when it is asked to revise."""
        return json.dumps({"analysis": self.analysis, "verdict": self.verdict,
                           "errors": self.errors + self.unknown_errors})

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"verdict": self.verdict, "analysis": self.analysis, "errors": list(self.errors)}
        if self.unknown_errors:
            meta["unknown_errors"] = list(self.unknown_errors)
        if self.parse_error is not None:
            meta["parse_error"] = self.parse_error
        meta["raw"] = self.raw
        if self.retry_of is not None:
            meta["retry_of"] = {"parse_error": self.retry_of.parse_error, "raw": self.retry_of.raw}
        return meta


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def reflector_instruction(catalog: PlanningErrorCatalog) -> str:
    # A complete, valid example: small models copy the answer format they are shown verbatim.
    example = {"analysis": "The plan answers with the first match and never checks it against the question.",
               "verdict": "FAIL", "errors": [catalog.errors[0].name]}
    return (
        "You check an agent's plan before it acts. Diagnose the plan against the catalog of planning errors "
        "below, keeping in mind what the tools can and cannot do. Report at most the two most critical "
        "errors, as root causes. Answer with one JSON object with the keys \"analysis\" (one or two "
        "sentences), \"verdict\" (\"PASS\" or \"FAIL\") and \"errors\" (at most two catalog error names; [] "
        f"for PASS), e.g. {json.dumps(example)}\n\n"
        f"Catalog of planning errors:\n{catalog.render()}"
    )


def summarize_actions(steps: list[Step], max_chars: int = 160) -> str:
    """Past actions with the start of what each brought back, one line each."""
    lines: list[str] = []
    for k, s in enumerate(steps):
        if s.type != "action":
            continue
        nxt = steps[k + 1] if k + 1 < len(steps) else None
        obs = " ".join(nxt.text.split()) if nxt is not None and nxt.type == "observation" else ""
        if len(obs) > max_chars:
            obs = obs[:max_chars].rstrip() + " ..."
        lines.append(f"{s.iteration}. {s.text} -> {obs}" if obs else f"{s.iteration}. {s.text}")
    return "\n".join(lines) or "(none yet)"


def reflector_request(catalog: PlanningErrorCatalog, question: str, tools: str, steps: list[Step],
                      plan: str) -> tuple[str, str]:
    """(instruction, request): the system part and the per-plan part of the reflector's prompt."""
    request = (f"Task: {question.strip()}\nTools:\n{tools.strip()}\nPast actions:\n{summarize_actions(steps)}\n"
               f"Plan:\n{plan.strip()}")
    return reflector_instruction(catalog), request


def retry_note(unreadable: Critique) -> str:
    """What the reflector is told when asked again: why its answer could not be read. The same prompt
    again would bring the same answer under greedy decoding."""
    return (f"Your previous answer could not be read ({unreadable.parse_error}). Answer with one JSON object "
            'only, with the keys "analysis", "verdict" ("PASS" or "FAIL") and "errors".')


def revision_request(crit: Critique, catalog: PlanningErrorCatalog) -> str:
    """The reflector's second turn after a FAIL (the paper's revision turn): repair the errors it named, each
    shown with its failure and success patterns and examples; every entry when it named none the catalog knows."""
    entries = crit.found(catalog) or list(catalog.errors)
    errors = "\n".join(e.render(i) for i, e in enumerate(entries, 1))
    return ("Revise the plan. Repair each error below: avoid its failure pattern, follow its success pattern, keep "
            "the steps that are sound and use only the tools listed. Write the revised plan only, as the plan was "
            f"written.\nErrors to repair:\n{errors}")


def extract_json_object(text: str) -> str | None:
    """The first ``{...}`` block of ``text`` (strings and nesting respected). A block cut off by the
    token limit is closed (open string, arrays, objects) so its complete part can still be read."""
    start = text.find("{")
    if start < 0:
        return None
    stack: list[str] = []
    in_str = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return None
            stack.pop()
            if not stack:
                return text[start:i + 1]
    tail = text[start:].rstrip()
    if escaped:
        tail = tail[:-1]
    return tail + ('"' if in_str else "") + "".join(reversed(stack))


def _error_names(value: Any) -> list[str]:
    items = value if isinstance(value, list) else ([value] if value else [])
    names = []
    for it in items:
        if isinstance(it, dict):
            low = {str(k).lower(): v for k, v in it.items()}
            it = next((low[k] for k in ("name", "type", "error", "category") if isinstance(low.get(k), str)), "")
        if isinstance(it, str) and it.strip() and it.strip().lower() not in ("none", "n/a"):
            names.append(it.strip())
    return names


def parse_critique(text: str, catalog: PlanningErrorCatalog) -> Critique:
    """Read the reflector's answer; never raises. Unreadable -> PASS with ``parse_error`` set."""
    raw = str(text)
    block = extract_json_object(raw)
    if block is None:
        return Critique("PASS", parse_error="no JSON object in the critique", raw=raw)
    try:
        data = json.loads(block)
    except (json.JSONDecodeError, RecursionError) as e:
        return Critique("PASS", parse_error=f"invalid JSON: {getattr(e, 'msg', type(e).__name__)}", raw=raw)
    if not isinstance(data, dict):
        return Critique("PASS", parse_error="the critique is not a JSON object", raw=raw)
    low = {str(k).lower().replace(" ", "_"): v for k, v in data.items()}
    analysis = low.get("analysis")
    analysis = analysis if isinstance(analysis, str) else ""
    verdict_raw = low.get("verdict")
    verdict = str(verdict_raw).strip().upper() if isinstance(verdict_raw, (str, bool)) else ""
    if verdict.startswith("FAIL"):
        verdict = "FAIL"
    elif verdict.startswith("PASS"):
        verdict = "PASS"
    else:
        return Critique("PASS", analysis, parse_error=f"verdict is {verdict_raw!r}, not PASS or FAIL", raw=raw)
    names = _error_names(next((low[k] for k in ("errors", "detected_errors", "error") if k in low), []))
    known: list[str] = []
    unknown: list[str] = []
    for n in names:
        e: PlanningError | None = catalog.find(n)
        if e is None:
            unknown.append(n)
        elif e.name not in known:
            known.append(e.name)
    if verdict == "PASS":
        known, unknown = [], []
    return Critique(verdict, analysis, known[:MAX_ERRORS], unknown[:MAX_ERRORS], raw=raw)
