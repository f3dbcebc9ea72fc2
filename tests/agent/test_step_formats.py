"""The step formats' one record each (actune/agent/step_formats.py): the tables the loop, the judge and the cards
read are derived from it, and every format a method or an adapter uses has one."""

from __future__ import annotations

from actune.agent.config import STEPS_METHODS
from actune.agent.methods import BASE_METHOD
from actune.agent.render import REFLECTION_FORMATS
from actune.agent.step_formats import STEP_FORMATS, reason_type, reflection_formats, step_format, step_label


def test_every_format_a_method_or_an_adapter_uses_has_its_record() -> None:
    assert set(BASE_METHOD.values()) == set(STEP_FORMATS)
    for name in STEPS_METHODS:  # an adapter's format: the cards describe it
        f = STEP_FORMATS[name]
        assert f.title and f.card_steps and f.card_ending and f.conversion, name


def test_the_derived_tables_hold_their_values() -> None:
    assert reflection_formats() == REFLECTION_FORMATS == ("reflact", "preflect_reflact")
    assert {n: step_label(n) for n in STEP_FORMATS} == {
        "react": "Thought", "reflact": "Reflection", "act": None, "cot": None, "standard": None,
        "preflect": "Thought", "preflect_reflact": "Reflection"}
    assert {n: reason_type(n) for n in STEP_FORMATS} == {
        "react": "thought", "reflact": "reflection", "act": "thought", "cot": "thought", "standard": "thought",
        "preflect": "thought", "preflect_reflact": "reflection"}
    assert step_format("nope") is None and step_label("nope") is None and reason_type("nope") == "thought"
    assert STEP_FORMATS["reflact"].card_ending == "Action i: tool[argument] ... FINAL ANSWER: answer"
