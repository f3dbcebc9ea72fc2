"""Parse what a (small) model wrote for one agent step.

Tolerant by design: labels in any case (``Action``, ``ACTION``), with or without step numbers,
``Search[...]`` or ``search[...]``, text after the action, THOUGHT where REFLECTION is expected,
``FINAL ANSWER: ...`` or ``finish[...]``. Anything the model writes after its action that looks like
an observation (even a fragment such as ``\\nObserv`` left by a stop string) is cut off: an
observation the model made up is never trusted. Never raises on any input string; what cannot be
parsed comes back with ``error`` set, which the loop turns into a format hint for the model. (A crash
inside the parser is caught and logged as a bug; the fuzz test runs the parser without that net.)
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from actune.envs.base import Action

__all__ = ["ParsedStep", "parse_step", "parse_action", "parse_answer", "strip_made_up_observation"]

log = logging.getLogger(__name__)

# A made-up observation, a new question/claim, or a stop string cut mid-token ("\nObserv").
_CUT = re.compile(r"(?:^|\n)[ \t]*+(?:observation[ \t]*+(?:\d+[ \t]*+)?:|question[ \t]*+:|claim[ \t]*+:)",
                  re.IGNORECASE)
# A label cut off by a stop string or max_tokens at the very end: "\nObserv", "\nObservation 2".
_CUT_TAIL = re.compile(r"\n[ \t]*+O(?:b(?:s(?:e(?:r(?:v(?:a(?:t(?:i(?:o(?:n)?)?)?)?)?)?)?)?)?)?[ \t]*+(?:\d+[ \t]*+)?$")
_LEAD_LABEL = re.compile(r"^\s*+(?:thought|reflection|think)\s*+(?:\d+\s*+)?:\s*+", re.IGNORECASE)
_ACTION_LABEL = re.compile(r"(?:^|\n)[ \t]*+action[ \t]*+(?:\d+[ \t]*+)?:[ \t]*+(.*)", re.IGNORECASE)
# "final" at the start or after any whitespace. A lookbehind, not a leading (?:^|\s)[ \t]*: that form
# starts a match attempt at every character of a whitespace run and rescans the run from each, which
# took seconds on 20k spaces. The match starts at "final" itself; callers strip what precedes it.
_FINAL = re.compile(r"(?<!\S)final[ \t]++answer[ \t]*+:[ \t]*+(.*)", re.IGNORECASE | re.DOTALL)
_LABELLED_LINE = re.compile(r"^\s*+(?:thought|reflection|action|observation)\s*+(?:\d+\s*+)?:", re.IGNORECASE)
# The name keeps its trailing spaces (callers normalise it): a lazy name followed by \s* retried the
# rest of a long run of spaces once per character.
_BRACKET = re.compile(r"([A-Za-z_][A-Za-z_ ]*+)\s*+\[")


@dataclass
class ParsedStep:
    """One parsed model step.

    ``thought`` is the reasoning text (a thought or a reflection); ``action_text`` the action as
    written (None: no action line at all, the loop may re-prompt with ``Action i:``); ``action``
    the parsed action; ``answer`` is set for ``finish[...]`` or ``FINAL ANSWER:``; ``error`` says
    why the action could not be used.
    """

    thought: str = ""
    action_text: str | None = None
    action: Action | None = None
    answer: str | None = None
    error: str | None = None


def strip_made_up_observation(text: str) -> str:
    """Cut the text at the first line that starts an observation, question or claim."""
    m = _CUT.search(text)
    if m:
        return text[: m.start()]
    m = _CUT_TAIL.search(text)
    return text[: m.start()] if m else text


def _bracket_arg(s: str, start: int) -> tuple[str, int] | None:
    """The text between the '[' at ``start`` and its matching ']' (nested brackets allowed)."""
    depth = 0
    for i in range(start, len(s)):
        if s[i] == "[":
            depth += 1
        elif s[i] == "]":
            depth -= 1
            if depth == 0:
                return s[start + 1 : i], i
    return None


def parse_action(
    text: str,
    action_names: tuple[str, ...] | None = None,
    finish_action: str | None = "finish",
    free_text: bool = False,
) -> tuple[Action | None, str | None]:
    """Parse ``name[argument]`` (or, with ``free_text``, ``verb rest``) -> (action, error)."""
    line = text.strip()
    valid = _valid_list(action_names)
    if not line:
        return None, f"Invalid action: the action is empty. Valid actions: {valid}."
    m = _BRACKET.match(line)
    if m:
        got = _bracket_arg(line, m.end() - 1)
        name = " ".join(m.group(1).split()).lower()
        if got is None:
            return None, f"Invalid action: {line!r} has no closing ']'. Valid actions: {valid}."
        arg = got[0].strip()
        if action_names and name not in action_names:
            return None, f"Invalid action: unknown action {name!r}. Valid actions: {valid}."
        return Action(name, arg), None
    if free_text:
        first = line.split("\n", 1)[0].strip()
        verb, _, rest = first.partition(" ")
        verb = verb.lower().rstrip(":")
        if action_names and verb not in action_names:
            return None, f"Invalid action: unknown action {verb!r}. Valid actions: {valid}."
        return Action(verb, rest.strip()), None
    return None, f"Invalid action: {line[:80]!r} is not of the form name[argument]. Valid actions: {valid}."


def _valid_list(action_names: tuple[str, ...] | None) -> str:
    if not action_names:
        return "name[argument]"
    return ", ".join(f"{n}[...]" for n in action_names)


def parse_step(
    text: str,
    action_names: tuple[str, ...] | None = None,
    finish_action: str | None = "finish",
    free_text: bool = False,
) -> ParsedStep:
    """Parse a generated step: optional leading label, thought, ``Action i: ...`` or ``FINAL ANSWER:``."""
    try:
        return _parse_step(text, action_names, finish_action, free_text)
    except Exception as e:
        # A safety net, not a code path: the parser must never take an episode down, but a crash here is
        # a parser bug (the fuzz test calls _parse_step without this net), so it is logged with its traceback.
        log.exception("parse_step crashed on %r", text)
        return ParsedStep(thought="", error=f"Invalid step: could not parse ({type(e).__name__}).")


def _parse_step(
    text: str, action_names: tuple[str, ...] | None, finish_action: str | None, free_text: bool
) -> ParsedStep:
    body = _LEAD_LABEL.sub("", str(text), count=1)
    body = strip_made_up_observation(body)
    a = _ACTION_LABEL.search(body)
    f = _FINAL.search(body)
    if f and (a is None or f.start() < a.start()):
        thought = body[: f.start()].strip()
        answer = f.group(1).strip().split("\n", 1)[0].strip()
        return ParsedStep(thought=_clean_thought(thought), action_text=f"FINAL ANSWER: {answer}", answer=answer)
    if a is None:
        # No action label: accept a bare ``finish[...]``/``search[...]`` written inside the thought.
        names = action_names or ((finish_action,) if finish_action else ())
        for name in names:
            m = re.search(rf"\b{re.escape(name)}\s*+\[", body, re.IGNORECASE)
            if m and _bracket_arg(body, m.end() - 1) is not None:
                thought = body[: m.start()].strip()
                return _with_action(thought, body[m.start():], action_names, finish_action, free_text)
        return ParsedStep(thought=_clean_thought(body.strip()), action_text=None, error="no action")
    thought = body[: a.start()].strip()
    action_line = a.group(1).split("\n", 1)[0]
    return _with_action(thought, action_line, action_names, finish_action, free_text)


def _with_action(
    thought: str, action_line: str, action_names: tuple[str, ...] | None, finish_action: str | None,
    free_text: bool,
) -> ParsedStep:
    action, error = parse_action(action_line, action_names, finish_action, free_text)
    shown = action_line.strip()
    if action is not None and "[" in shown:
        # Drop text after the action: keep exactly "Name[arg]" as written.
        start = shown.index("[")
        got = _bracket_arg(shown, start)
        if got is not None:
            shown = shown[: got[1] + 1]
    step = ParsedStep(thought=_clean_thought(thought), action_text=shown, action=action, error=error)
    if action is not None and finish_action and action.name == finish_action:
        step.answer = action.argument
    return step


def _clean_thought(thought: str) -> str:
    # A second "Thought 2:" line inside one step is the model running ahead: keep the first thought.
    lines = thought.split("\n")
    kept = [lines[0]]
    for line in lines[1:]:
        if _LABELLED_LINE.match(line):
            break
        kept.append(line)
    return "\n".join(kept).strip()


_ANSWER = re.compile(r"(?:^|\n)[ \t]*+(?:final[ \t]++)?answer[ \t]*+:[ \t]*+(.*)", re.IGNORECASE)
_ANSWER_IS = re.compile(r"the answer is[ \t:]*(.+?)(?:\.\s|\.$|\n|$)", re.IGNORECASE)


def parse_answer(text: str) -> tuple[str, str | None]:
    """Split a CoT/Standard completion into (reasoning, answer); answer None when none is found.

    Looks for an ``Answer:`` line, then for "the answer is X".
    """
    try:
        return _parse_answer(text)
    except Exception:
        log.exception("parse_answer crashed on %r", text)  # a parser bug; see parse_step
        return "", None


def _parse_answer(text: str) -> tuple[str, str | None]:
    body = strip_made_up_observation(str(text))
    m = _ANSWER.search(body)
    if m:
        answer = m.group(1).strip()
        return _LEAD_LABEL.sub("", body[: m.start()]).strip(), (answer or None)
    m2 = None
    for m2 in _ANSWER_IS.finditer(body):  # noqa: B007 - the last "the answer is" wins
        pass
    if m2 is not None:
        return _LEAD_LABEL.sub("", body).strip(), m2.group(1).strip() or None
    return _LEAD_LABEL.sub("", body).strip(), None
