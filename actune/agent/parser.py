"""Parse what a (small) model wrote for one agent step.

Tolerant by design: labels in any case (``Action``, ``ACTION``), with or without step numbers, on their
own line or inline after the reflection, ``Search[...]`` or ``search[...]`` or the call form
``rag_search("query")``, text after the action, THOUGHT where REFLECTION is expected, a ``GOAL:`` line
(LLARS states its goal; kept apart, never part of the reflection, and recorded in the step's meta:
:meth:`ParsedStep.goal_meta`), ``FINAL ANSWER: ...`` or ``finish[...]``. In LLARS' format
(``answer_to_label``) a ``FINAL ANSWER`` wins over an action in the same output, as LLARS reads it.
Anything the model writes after its action that looks like an observation (even a fragment such as
``\\nObserv`` left by a stop string) is cut off: an observation the model made up is never trusted. Never
raises on any input string; what cannot be parsed comes back with ``error`` set, which the loop turns into a
format hint for the model. (A crash inside the parser is caught and logged as a bug; the fuzz test runs the
parser without that net.)
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
# An action label anywhere after whitespace: "REFLECTION: ... ACTION: search[x]" on one line.
_INLINE_ACTION = re.compile(r"(?<!\S)action[ \t]*+(?:\d+[ \t]*+)?:[ \t]*+(.*)", re.IGNORECASE)
_GOAL = re.compile(r"(?:^|\n)[ \t]*+goal[ \t]*+:[ \t]*+", re.IGNORECASE)
# Where a LLARS label's text ends: at the next line that starts with a label.
_NEXT_LABEL = re.compile(r"\n[ \t]*+(?:thought|reflection|action|observation|goal|final[ \t]++answer)[ \t]*+"
                         r"(?:\d+[ \t]*+)?:", re.IGNORECASE)
_LABELLED_LINE = re.compile(r"^\s*+(?:thought|reflection|action|observation)\s*+(?:\d+\s*+)?:", re.IGNORECASE)
# The name keeps its trailing spaces (callers normalise it): a lazy name followed by \s* retried the
# rest of a long run of spaces once per character.
_BRACKET = re.compile(r"([A-Za-z_][A-Za-z_ ]*+)\s*+\[")
# LLARS writes tool calls as calls: rag_search("query"), search('x').
_CALL = re.compile(r"([A-Za-z_]\w*+)[ \t]*+\([ \t]*+([\"'])")


@dataclass
class ParsedStep:
    """One parsed model step.

    ``thought`` is the reasoning text (a thought or a reflection); ``action_text`` the action as
    written (None: no action line at all, the loop may re-prompt with ``Action i:``); ``action``
    the parsed action; ``answer`` is set for ``finish[...]`` or ``FINAL ANSWER:``; ``error`` says
    why the action could not be used; ``goal`` is the text of a ``GOAL:`` label (None: none).
    """

    thought: str = ""
    action_text: str | None = None
    action: Action | None = None
    answer: str | None = None
    error: str | None = None
    goal: str | None = None

    def goal_meta(self) -> dict[str, str]:
        """The meta of the step that records this one's thought or reflection: its ``GOAL:``, when it wrote one."""
        return {} if self.goal is None else {"goal": self.goal}


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


def _call_arg(s: str, quote_at: int) -> tuple[str, int] | None:
    """The quoted argument of a call whose quote opens at ``quote_at`` and the index of its ')'
    (backslash escapes allowed); None when the string or the call is not closed."""
    quote = s[quote_at]
    i = quote_at + 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s[i] == quote:
            break
        i += 1
    else:
        return None
    arg = re.sub(r"\\(.)", r"\1", s[quote_at + 1 : i])
    j = i + 1
    while j < len(s) and s[j] in " \t":
        j += 1
    return (arg, j) if j < len(s) and s[j] == ")" else None


def _action_span(line: str) -> tuple[str, str, int] | None:
    """(name, argument, index of the closing bracket or parenthesis) of ``name[arg]`` or ``name("arg")``
    at the start of ``line``; None when neither form is there, or when it is not closed."""
    m = _BRACKET.match(line)
    if m:
        got = _bracket_arg(line, m.end() - 1)
        return None if got is None else (m.group(1), got[0], got[1])
    m = _CALL.match(line)
    if m:
        got = _call_arg(line, m.end() - 1)
        return None if got is None else (m.group(1), got[0], got[1])
    return None


def parse_action(
    text: str,
    action_names: tuple[str, ...] | None = None,
    finish_action: str | None = "finish",
    free_text: bool = False,
) -> tuple[Action | None, str | None]:
    """Parse ``name[argument]`` or ``name("argument")`` (or, with ``free_text``, ``verb rest``) ->
    (action, error)."""
    line = text.strip()
    valid = _valid_list(action_names)
    if not line:
        return None, f"Invalid action: the action is empty. Valid actions: {valid}."
    span = _action_span(line)
    if span is None and _BRACKET.match(line):
        return None, f"Invalid action: {_quoted(line)} has no closing ']'. Valid actions: {valid}."
    if span is not None:
        name = " ".join(span[0].split()).lower()
        if action_names and name not in action_names:
            return None, f"Invalid action: unknown action {_quoted(name)}. Valid actions: {valid}."
        return Action(name, span[1].strip()), None
    if free_text:
        first = line.split("\n", 1)[0].strip()
        verb, _, rest = first.partition(" ")
        verb = verb.lower().rstrip(":")
        if action_names and verb not in action_names:
            return None, f"Invalid action: unknown action {_quoted(verb)}. Valid actions: {valid}."
        return Action(verb, rest.strip()), None
    return None, f"Invalid action: {line[:80]!r} is not of the form name[argument]. Valid actions: {valid}."


def _quoted(text: str, limit: int = 80) -> str:
    """What an error echoes of the model's text: the hint is an observation the model reads next, so a
    megabyte-long unclosed action must not come back as a megabyte-long observation."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def _valid_list(action_names: tuple[str, ...] | None) -> str:
    if not action_names:
        return "name[argument]"
    return ", ".join(f"{n}[...]" for n in action_names)


def parse_step(
    text: str,
    action_names: tuple[str, ...] | None = None,
    finish_action: str | None = "finish",
    free_text: bool = False,
    *,
    answer_to_label: bool = False,
) -> ParsedStep:
    """Parse a generated step: optional leading label, thought, ``Action i: ...`` or ``FINAL ANSWER:``.

    ``answer_to_label``: LLARS' reading. A ``FINAL ANSWER`` keeps everything up to the next label (a cited,
    multi-line answer), and wins over an action written before it (LLARS answers when a final answer is there).
    Otherwise the answer is its first line, so text a model adds after a short answer does not spoil an exact
    match, and whichever of the action and the answer comes first counts.
    """
    try:
        return _parse_step(text, action_names, finish_action, free_text, answer_to_label)
    except Exception as e:
        # A safety net, not a code path: the parser must never take an episode down, but a crash here is
        # a parser bug (the fuzz test calls _parse_step without this net), so it is logged with its traceback.
        log.exception("parse_step crashed on %r", text)
        return ParsedStep(thought="", error=f"Invalid step: could not parse ({type(e).__name__}).")


def _until_next_label(text: str, start: int = 0) -> int:
    """Where the text of a label that starts at ``start`` ends: at the next labelled line, or the end."""
    m = _NEXT_LABEL.search(text, start)
    return m.start() if m else len(text)


def _split_goal(body: str) -> tuple[str, str | None]:
    """``body`` without its ``GOAL:`` labels, and the first goal's text."""
    goal: str | None = None
    kept: list[str] = []
    pos = 0
    while (m := _GOAL.search(body, pos)) is not None:
        kept.append(body[pos : m.start()])
        pos = _until_next_label(body, m.end())
        if goal is None:
            goal = " ".join(body[m.end() : pos].split())
    kept.append(body[pos:])
    return "".join(kept), goal


def _parse_step(
    text: str, action_names: tuple[str, ...] | None, finish_action: str | None, free_text: bool,
    answer_to_label: bool = False,
) -> ParsedStep:
    body, goal = _split_goal(str(text))
    body = _LEAD_LABEL.sub("", body, count=1)
    body = strip_made_up_observation(body)
    # An action label on its own line wins over one inline: prose may say "my next action: ...".
    a = _ACTION_LABEL.search(body) or _INLINE_ACTION.search(body)
    f = _FINAL.search(body)
    if f is not None and _answer_wins(a, f, answer_to_label):
        thought = body[: f.start() if a is None else min(a.start(), f.start())].strip()
        if answer_to_label:
            answer = body[f.start(1) : _until_next_label(body, f.start(1))].strip()
        else:
            answer = f.group(1).strip().split("\n", 1)[0].strip()
        return ParsedStep(thought=_clean_thought(thought), action_text=f"FINAL ANSWER: {answer}", answer=answer,
                          goal=goal)
    if a is None:
        # No action label: accept a bare ``finish[...]``/``search("...")`` written inside the thought.
        names = action_names or ((finish_action,) if finish_action else ())
        for name in names:
            m = re.search(rf"\b{re.escape(name)}[ \t]*+(?:\[|\()", body, re.IGNORECASE)
            if m and _action_span(body[m.start():]) is not None:
                thought = body[: m.start()].strip()
                step = _with_action(thought, body[m.start():], action_names, finish_action, free_text)
                step.goal = goal
                return step
        return ParsedStep(thought=_clean_thought(body.strip()), action_text=None, error="no action", goal=goal)
    thought = body[: a.start()].strip()
    action_line = a.group(1).split("\n", 1)[0]
    step = _with_action(thought, action_line, action_names, finish_action, free_text)
    step.goal = goal
    return step


def _answer_wins(a: re.Match[str] | None, f: re.Match[str], llars: bool) -> bool:
    """Whether the ``FINAL ANSWER`` label ``f`` is the step's outcome rather than the action label ``a``: when it
    comes first, and in LLARS' reading when it comes on a later line too. Words after an action on its own line
    are never read (:func:`_with_action`), a "final answer:" among them included."""
    return a is None or f.start() < a.start() or (llars and f.start() >= a.end(1))


def _with_action(
    thought: str, action_line: str, action_names: tuple[str, ...] | None, finish_action: str | None,
    free_text: bool,
) -> ParsedStep:
    action, error = parse_action(action_line, action_names, finish_action, free_text)
    shown = action_line.strip()
    span = _action_span(shown) if action is not None else None
    if span is not None:
        shown = shown[: span[2] + 1]  # the action exactly as written, without the words after it
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
