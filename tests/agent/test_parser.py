"""The step parser: tolerant of small models' output, never crashes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actune.agent import parser
from actune.agent.parser import parse_action, parse_answer, parse_step, strip_made_up_observation
from actune.envs.base import Action

NAMES = ("search", "lookup", "finish")


@pytest.mark.parametrize("text, thought, action, answer", [
    (" I need X.\nAction 1: Search[Colorado orogeny]", "I need X.", Action("search", "Colorado orogeny"), None),
    (" t\naction: search[X] and then I will read it", "t", Action("search", "X"), None),
    (" t\nAction 7: lookup[eastern sector]", "t", Action("lookup", "eastern sector"), None),  # wrong number
    (" t\nACTION 3: Finish[yes]", "t", Action("finish", "yes"), "yes"),
    ("Thought 2: t\nAction 2: search[A [B] C]", "t", Action("search", "A [B] C"), None),  # nested brackets
    (" t\nAction 1: search[X]\nObservation 1: I made this up\nThought 2: more", "t", Action("search", "X"), None),
    (" t\nAction 1: search[X]\nObserv", "t", Action("search", "X"), None),  # stop cut mid-token
    (" so the answer is finish[Paris] I think", "so the answer is", Action("finish", "Paris"), "Paris"),
    ("REFLECTION: state known.\nFINAL ANSWER: Paris\nextra", "state known.", None, "Paris"),
    ("THOUGHT: x\nfinal answer: 12 km", "x", None, "12 km"),
])
def test_parses_tolerantly(text, thought, action, answer):
    p = parse_step(text, NAMES)
    assert (p.thought, p.action, p.answer, p.error) == (thought, action, answer, None)


def test_action_text_drops_trailing_words():
    assert parse_step(" t\nAction 1: Search[X] and more", NAMES).action_text == "Search[X]"


def test_no_action_and_errors():
    p = parse_step(" I think about it.\nThought 2: still thinking", NAMES)
    assert p.action_text is None and p.error == "no action" and p.thought == "I think about it."
    p = parse_step(" t\nAction 1: fly[moon]", NAMES)
    assert p.action is None and "unknown action 'fly'" in p.error
    p = parse_step(" t\nAction 1: Search[unclosed", NAMES)
    assert p.action is None and "no closing ']'" in p.error
    p = parse_step(" t\nAction 1: just words", NAMES)
    assert p.action is None and "not of the form name[argument]" in p.error


def test_an_error_echoes_at_most_80_characters_of_what_the_model_wrote():
    # the hint is the model's next observation: a megabyte in must not be a megabyte out
    p = parse_step(" t\nAction 1: search[" + "x" * 1_000_000, NAMES)
    assert p.error == f"Invalid action: {'search[' + 'x' * 73!r}... has no closing ']'. Valid actions: " \
        "search[...], lookup[...], finish[...]."
    a, err = parse_action("y" * 500 + "[moon]", NAMES)
    assert a is None and len(err) < 200 and err.startswith(f"Invalid action: unknown action {'y' * 80!r}...")


def test_free_text_actions_for_alfworld():
    a, err = parse_action("go to cabinet 1", ("go", "open", "take"), None, free_text=True)
    assert a == Action("go", "to cabinet 1") and err is None
    a, err = parse_action("dance wildly", ("go", "open"), None, free_text=True)
    assert a is None and "unknown action 'dance'" in err


def test_strip_made_up_observation():
    assert strip_made_up_observation("a\nObservation 1: b") == "a"
    assert strip_made_up_observation("a\nQuestion: new one") == "a"
    assert strip_made_up_observation("Observing the page, a") == "Observing the page, a"
    assert strip_made_up_observation("a\nObserv") == "a" and strip_made_up_observation("a\nObservation 2") == "a"


def test_parse_answer():
    assert parse_answer(" A is B.\nAnswer: Richard Nixon\nQuestion: next") == ("A is B.", "Richard Nixon")
    assert parse_answer(" so the answer is Paris.") == ("so the answer is Paris.", "Paris")
    assert parse_answer(" nothing here") == ("nothing here", None)


_STEP_CHARS = st.sampled_from(list("abc []:\nActionObservationFINALANSWERfinish[]search123 \t"))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_STEP_CHARS | st.characters(), max_size=120))
def test_no_input_crashes(s):
    # The inner functions, without parse_step's catch-all: any exception here fails the test.
    p = parser._parse_step(s, NAMES, "finish", False)
    assert p.action is None or p.action.name in NAMES
    assert (p.action is None) or p.error is None
    p2 = parser._parse_step(s, None, None, True)
    assert isinstance(p2.thought, str)
    r, a = parser._parse_answer(s)
    assert isinstance(r, str) and (a is None or isinstance(a, str))


def test_a_parser_crash_is_logged_and_becomes_a_step_error(monkeypatch, caplog):
    def crash(*args):
        raise IndexError("parser bug")

    monkeypatch.setattr(parser, "_parse_step", crash)
    monkeypatch.setattr(parser, "_parse_answer", crash)
    with caplog.at_level("ERROR", logger="actune.agent.parser"):
        step = parse_step(" t\nAction 1: search[x]", NAMES)
        answer = parse_answer("Answer: x")
    assert step.action is None and step.error == "Invalid step: could not parse (IndexError)."
    assert answer == ("", None)
    assert [r.getMessage() for r in caplog.records] == [
        "parse_step crashed on ' t\\nAction 1: search[x]'", "parse_answer crashed on 'Answer: x'"]
    assert all(r.exc_info and r.exc_info[0] is IndexError for r in caplog.records)
