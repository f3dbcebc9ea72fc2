"""The step parser on long and adversarial model output (issue #12).

A model can write thousands of spaces, tabs or newlines (a degenerate sampling loop); the parser runs
on the event loop, so one slow parse stalls every episode in flight. Regexes with a whitespace run that
can be split several ways took seconds on 20k characters (quadratic); these tests keep parsing linear.
"""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actune.agent import parser

NAMES = ("search", "lookup", "finish")
MAX_CHARS = 20_000

# Labels and punctuation the parser looks for, and whitespace of every kind it treats differently.
_TOKENS = ["final", "FINAL ANSWER", "answer", "Answer:", "final answer:", "Action", "Action 1:", "action 12 :",
           "Thought", "Thought 2:", "REFLECTION", "think", "Observation", "Observ", "O", "Question:", "claim:",
           "the answer is", "finish", "search", "lookup", "[", "]", "[[", ":", ".", "1", "x", "Paris", "_"]
_WHITESPACE = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\u3000", "\u2028", " \t", "\n ", "\t\n"]


def _long_text() -> st.SearchStrategy[str]:
    """Up to MAX_CHARS characters: pieces (labels, whitespace, any text) each repeated up to the whole
    length, so long runs of whitespace sit next to the labels whose patterns scan them."""
    piece = st.one_of(st.sampled_from(_TOKENS), st.sampled_from(_WHITESPACE), st.text(max_size=8))
    run = st.tuples(piece, st.integers(min_value=1, max_value=MAX_CHARS))
    return st.lists(run, max_size=6).map(lambda runs: "".join(p * n for p, n in runs)[:MAX_CHARS])


def _parse_all(text: str) -> None:
    # The inner functions, without parse_step's catch-all: any exception here fails the test.
    p = parser._parse_step(text, NAMES, "finish", False)
    assert p.action is None or p.action.name in NAMES
    assert p.action is None or p.error is None
    p2 = parser._parse_step(text, None, None, True)
    assert isinstance(p2.thought, str)
    reasoning, answer = parser._parse_answer(text)
    assert isinstance(reasoning, str) and (answer is None or isinstance(answer, str))


def _seconds(text: str) -> float:
    t0 = time.perf_counter()
    _parse_all(text)
    return time.perf_counter() - t0


def _check(text: str, bound_s: float) -> None:
    # Time it twice before failing: a busy machine can pause any one call; a quadratic parse is slow
    # every time.
    if _seconds(text) > bound_s:
        assert _seconds(text) < bound_s, f"parsing {len(text)} characters took over {bound_s} s"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_long_text())
def test_long_adversarial_inputs_never_crash_and_parse_fast(text):
    _check(text, 1.0)


@pytest.mark.slow
# the 100k inputs take ~8 minutes on 2 cores: asked for, not part of every `make test`
@pytest.mark.skipif(not os.environ.get("ACTUNE_LONG_FUZZ"), reason="set ACTUNE_LONG_FUZZ=1 for the 100k-input run")
@settings(max_examples=100_000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_long_text())
def test_long_adversarial_inputs_100k(text):
    _check(text, 1.0)


@pytest.mark.parametrize("text", [
    " " * MAX_CHARS,
    "x" + " " * (MAX_CHARS - 2) + "x",
    "Thought" + "\t" * (MAX_CHARS - 8) + "x",
    "\nObservation" + "\t" * (MAX_CHARS - 13) + "]",
    "a" + " " * (MAX_CHARS - 2) + "x",
    "finish" + " \t" * ((MAX_CHARS - 6) // 2),
    "I think\nAction 1" + " " * (MAX_CHARS - 17) + "x",
    "final" + " " * (MAX_CHARS - 6) + "x",
], ids=["spaces", "x-spaces-x", "thought-tabs", "observation-tabs", "name-spaces", "finish-mixed",
        "action-spaces", "final-spaces"])
def test_20k_adversarial_whitespace_parses_well_under_a_second(text):
    # A regression guard for the complexity, not a speed goal: these took 3 to 20 s before (seconds
    # on a loaded 2-core machine) and take milliseconds when parsing is linear.
    assert len(text) <= MAX_CHARS
    _check(text, 0.5)


def test_whitespace_around_labels_still_parses_as_before():
    p = parser.parse_step("I know it.\n" + " " * 500 + "FINAL   ANSWER :  Paris\nmore", NAMES)
    assert (p.thought, p.answer) == ("I know it.", "Paris")
    p = parser.parse_step(" t\n\t Action  3 \t: search  [Colorado]", NAMES)
    assert (p.thought, p.action_text, p.action.argument) == ("t", "search  [Colorado]", "Colorado")
    p = parser.parse_step("Thought 1 :   t\nAction 1: lookup   \t[x]", NAMES)
    assert (p.thought, p.action.name, p.action.argument) == ("t", "lookup", "x")
    assert parser.strip_made_up_observation("a\n  Observation  2 \t: b") == "a"
    assert parser.strip_made_up_observation("a\nObservation 2 \t ") == "a"
    assert parser.parse_answer("x\n  final  answer :  B") == ("x", "B")
