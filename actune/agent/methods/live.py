"""LLARS' live event stream: the step being generated, as its tokens arrive, and what the environment answers.

With ``AgentConfig.stream_events`` the loop wraps the model client in a :class:`LiveLLM`: a method opens a step
before asking for it (:func:`open_step`), that request is streamed, and each piece of text is read the way the
method will read the whole completion, so each delta event carries only text of its own step. Text that may
still change its meaning (a possible label, an action call not closed yet) is held back; :func:`record_step`
sends the rest when the step is recorded, so a step's deltas, joined, are exactly its recorded text. A request
that fails mid-stream ends the episode ``server_error`` without that step. Without ``stream_events`` none of this
runs. :func:`llars_keys`, :func:`iteration_event`, :func:`adaptive_iteration_event` and
:func:`adaptive_response_event` put LLARS' payload keys beside actune's, streamed or not.

The rules in full: docs/modules.md, actune.agent.methods.live.
"""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any, Callable

from actune.agent.episode import Episode, Event
from actune.agent.parser import ParsedStep
from actune.llm import Completion, Sampling
from actune.records.trajectory import Step

__all__ = ["LiveLLM", "open_step", "record_step", "stable_end", "llars_keys", "iteration_event",
           "adaptive_iteration_event", "adaptive_response_event", "DELTA_EVENT", "START_EVENT", "PREVIEW_CHARS"]

log = logging.getLogger(__name__)

#: The event each streamed part's tokens come in (LLARS: reflection_delta, action_delta, observation_delta; its
#: answer tokens: delta).
DELTA_EVENT = {"thought": "thought_delta", "reflection": "reflection_delta", "action": "action_delta",
               "observation": "observation_delta", "answer": "delta"}
#: The event that says a thought or reflection is being generated (LLARS: reflecting).
START_EVENT = {"thought": "thinking", "reflection": "reflecting"}
#: LLARS' observation event carries the start of the tool's result, this many characters.
PREVIEW_CHARS = 300

# Words that start a label on a line of their own (the parser's: step labels, a made-up observation, a new
# question or claim, LLARS' GOAL / FINAL ANSWER) and inline (FINAL ANSWER, ACTION after the reflection).
_LINE_LABELS = ("thought", "reflection", "think", "action", "observation", "goal", "final answer", "question",
                "claim")
_INLINE_LABELS = ("final answer", "action")
_DIGITS_COLON = re.compile(r"[ \t]*(?:\d+[ \t]*)?:?$")
# A later action line and a later final answer, appended to the text so far as probes: when the parser then reads
# another action, or the answer instead (LLARS' reading lets a final answer win), the action so far may still be
# replaced, and it is held back.
_LATER_ACTION = "\nAction: later_action[]"
_LATER_ANSWER = "\nFINAL ANSWER: later"


def _may_become_label(s: str, labels: tuple[str, ...]) -> bool:
    """Whether ``s`` (text from a word start to the end) may still grow into ``label[ n]:``."""
    low = " ".join(s.lower().split()) if s.strip() else ""
    if not low:
        return True
    for label in labels:
        if label.startswith(low):
            return True
        if low.startswith(label) and _DIGITS_COLON.match(low[len(label):]):
            return True
    return False


def _call_start(names: tuple[str, ...]) -> re.Pattern[str] | None:
    if not names:
        return None
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alt})[ \t]*[\[(]", re.IGNORECASE)


def _closed(text: str, start: int) -> bool:
    """Whether the call whose bracket or parenthesis opens at ``start`` is closed (as the parser reads it)."""
    opening = text[start]
    if opening == "[":
        depth = 0
        for ch in text[start:]:
            depth += ch == "["
            depth -= ch == "]"
            if depth == 0:
                return True
        return False
    return ")" in text[start:]


def stable_end(text: str, names: tuple[str, ...] = ()) -> int:
    """How much of a completion in progress can be read as final: up to where text that may still change
    its meaning starts (a last line that may become a label, a word that may start an inline label or a call
    of one of the action ``names``, an action call not closed yet)."""
    end = len(text)
    call = _call_start(names)
    if call is not None:
        for m in call.finditer(text):
            if not _closed(text, m.end() - 1):
                end = min(end, m.start())
                break
    line_start = text.rfind("\n", 0, end) + 1
    if _may_become_label(text[line_start:end], _LINE_LABELS):
        return max(line_start - 1, 0) if line_start else 0
    line = text[line_start:end]
    for m in re.finditer(r"(?<![A-Za-z0-9_])\S", line):
        rest = line[m.start():]
        if _may_become_label(rest, _INLINE_LABELS) or any(
                re.match(rf"{re.escape(n)}[ \t]*$", rest, re.IGNORECASE) or n.startswith(rest.lower())
                for n in names):
            return line_start + m.start()
    return end


class _StepStream:
    """One streamed request: what of each part of its step has been sent so far."""

    def __init__(self, kind: str | None, iteration: int, read: Callable[[str], ParsedStep],
                 names: tuple[str, ...], put: Callable[[Event], None]):
        self.kind = kind
        self.iteration = iteration
        self.read = read
        self.names = names
        self.put = put
        self.text = ""
        self.sent: dict[str, str] = {}

    def feed(self, piece: str) -> None:
        self.text += piece
        stable = self.text[: stable_end(self.text, self.names)]
        parsed = self.read(stable)
        if self.kind is not None:
            self._extend(self.kind, parsed.thought)
        if parsed.answer is not None:
            self._extend("answer", parsed.answer)
        elif parsed.action_text and self._final(stable, parsed.action_text):
            self._extend("action", parsed.action_text)

    def _final(self, stable: str, action_text: str) -> bool:
        """Whether no later line could replace the action read from ``stable``."""
        return (self.read(stable + _LATER_ACTION).action_text == action_text
                and self.read(stable + _LATER_ANSWER).answer is None)

    def _extend(self, part: str, text: str) -> None:
        sent = self.sent.get(part, "")
        if len(text) > len(sent) and text.startswith(sent):
            self.put(self._event(part, text[len(sent):]))
            self.sent[part] = text

    def rest(self, part: str, final: str) -> list[Event]:
        sent = self.sent.get(part, "")
        self.sent[part] = final
        if not final.startswith(sent):
            # a bug in stable_end: it let through text the whole completion reads otherwise
            log.warning("streamed %s %r is not a prefix of the recorded %r", part, sent, final)
            return []
        return [self._event(part, final[len(sent):])] if len(final) > len(sent) else []

    def _event(self, part: str, delta: str) -> Event:
        return Event(DELTA_EVENT[part], self.iteration, {"delta": delta})


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class LiveLLM:
    """The episode's model client, streaming the one request a method opened with :func:`open_step`; every
    other request (plans, critiques, re-prompts, samples) goes to ``llm`` as it is. ``put`` receives the
    delta events. A client that cannot stream (no ``on_delta``) is asked plainly and its text sent at once."""

    def __init__(self, llm: Any, put: Callable[[Event], None]):
        self.llm = llm
        self.put = put
        self.armed: _StepStream | None = None
        self.current: _StepStream | None = None

    async def complete(self, prompt: str, *, sampling: Sampling, stop: list[str] | None = None,
                       **kw: Any) -> Completion:
        return await self._call(self.llm.complete, prompt, sampling=sampling, stop=stop, **kw)

    async def chat(self, messages: list[dict[str, Any]], *, sampling: Sampling, stop: list[str] | None = None,
                   **kw: Any) -> Completion:
        return await self._call(self.llm.chat, messages, sampling=sampling, stop=stop, **kw)

    async def _call(self, fn: Callable[..., Any], prompt: Any, **kw: Any) -> Completion:
        stream, self.armed = self.armed, None
        if stream is None:
            return await fn(prompt, **kw)
        if _accepts(fn, "on_delta"):
            return await fn(prompt, on_delta=stream.feed, **kw)
        c = await fn(prompt, **kw)
        stream.feed(c.text)
        return c


def _live(ep: Episode) -> LiveLLM | None:
    return ep.llm if isinstance(ep.llm, LiveLLM) else None


def open_step(ep: Episode, kind: str | None, iteration: int, read: Callable[[str], ParsedStep]) -> list[Event]:
    """Stream the episode's next request as step ``iteration``, reading its text with ``read`` (the method's
    own reading of a whole completion). ``kind``: ``thought`` or ``reflection`` (its start event is returned),
    or None when the request writes no thought (Act's action, a re-prompted action, the early exit's answer)."""
    live = _live(ep)
    if live is None:
        return []
    names = tuple(ep.env.action_names) + ((ep.env.finish_action,) if ep.env.finish_action else ())
    live.armed = live.current = _StepStream(kind, iteration, read, names, live.put)
    return [Event(START_EVENT[kind], iteration, {})] if kind else []


def record_step(ep: Episode, step: Step) -> list[Event]:
    """Record ``step`` (:meth:`Episode.add`): its event, with LLARS' keys (:func:`llars_keys`), after the deltas
    of it not sent yet: the rest of what its streamed request sent, or the whole text when nothing of it streamed
    (an observation, a format hint). The deltas carry the step's ``text``, an answer's its ``action_arg``."""
    deltas = _rest(ep, step)
    event = ep.add(step)
    event.data.update(llars_keys(step))
    return deltas + [event]


def llars_keys(step: Step) -> dict[str, Any]:
    """The keys LLARS' event for ``step`` carries, to go beside actune's (``text``, ``action_name``,
    ``action_arg``): a thought's or reflection's text under its own name, an action's name and argument as
    ``action`` and ``param``, an observation's first :data:`PREVIEW_CHARS` characters as ``result_preview``.
    Other steps (answer, plan, critique) have none: LLARS sends the answer as ``delta`` events only."""
    if step.type in ("thought", "reflection"):
        return {step.type: step.text}
    if step.type == "action":
        return {"action": step.action_name, "param": step.action_arg}
    if step.type == "observation":
        return {"result_preview": step.text[:PREVIEW_CHARS]}
    return {}


def iteration_event(iteration: int, goal: str, budget: int) -> Event:
    """Step ``iteration`` begins: the goal and the step budget, as ``max_iterations`` (actune) and ``max`` (LLARS)."""
    return Event("iteration", iteration, {"goal": goal, "max_iterations": budget, "max": budget})


def adaptive_iteration_event(iteration: int, retrieval_score: float) -> Event:
    """The adaptive early exit fires after step ``iteration``'s observation: its score, and LLARS' ``reason``."""
    return Event("adaptive_iteration", iteration, {"retrieval_score": retrieval_score, "reason": "high_confidence"})


def adaptive_response_event(iteration: int, response: str, retrieval_score: float) -> Event:
    """The early exit's answer (step ``iteration``), streamed or not: the answer and the score that triggered it,
    and LLARS' ``reason``."""
    return Event("adaptive_response", iteration, {"response": response, "retrieval_score": retrieval_score,
                                                  "reason": "high_confidence_results"})


def _rest(ep: Episode, step: Step) -> list[Event]:
    live = _live(ep)
    text = step.action_arg if step.type == "answer" else step.text
    if live is None or text is None or step.type not in DELTA_EVENT:
        return []
    if live.current is None or live.current.iteration != step.iteration:
        live.current = _StepStream(None, step.iteration, lambda text: ParsedStep(), (), live.put)
    return live.current.rest(step.type, text)
