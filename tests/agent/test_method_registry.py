"""The methods' registry (actune/agent/method_registry.py): each method one spec in its own module, every table
the loop, the judge, export, the importer, the CLI and the configs read derived from it, and a method added from
outside the package accepted everywhere."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from actune.agent.config import AgentConfig
from actune.agent.method_registry import (
    MethodSpec,
    StepFormat,
    convertible,
    interactive_methods,
    is_reflective,
    method_names,
    method_spec,
    paper_methods,
    reads_no_pages,
    reason_type,
    reflection_formats,
    registered_method,
    step_format,
    step_formats,
    step_label,
)
from actune.agent.methods.react import SPEC as REACT
from actune.agent.prompt_spec import PromptSpec
from actune.bootstrap.config import ExportConfig, never_convertible
from actune.bootstrap.importers import import_methods
from actune.cli import build_parser
from actune.quickstart.config import QuickstartConfig

METHODS = ("standard", "cot", "cot_sc", "act", "react", "reflact", "react_cotsc", "cotsc_react", "preflect",
           "preflect_reflact")
TRAINED = ("standard", "cot", "act", "react", "reflact")


def test_the_built_in_methods_and_their_derived_tables() -> None:
    assert method_names() == METHODS
    assert {n: method_spec(n).steps.name for n in METHODS} == {
        "standard": "standard", "cot": "cot", "cot_sc": "cot", "act": "act", "react": "react", "reflact": "reflact",
        "react_cotsc": "react", "cotsc_react": "cot", "preflect": "preflect", "preflect_reflact": "preflect_reflact"}
    assert tuple(n for n, f in step_formats().items() if f.trainable) == TRAINED
    assert interactive_methods() == ("act", "react", "reflact")
    assert paper_methods() == ("standard", "cot", "cot_sc", "act", "react", "react_cotsc", "cotsc_react")
    assert [n for n in METHODS if reads_no_pages(n)] == ["standard", "cot", "cot_sc"]
    assert not reads_no_pages("nope")  # an unknown method is held to grounding
    assert import_methods() == {"cot": "react", "react": "react", "reflact": "reflact"}
    assert method_spec("cot_sc").temperature == "cot_sc_temperature"


def test_the_step_formats_hold_their_values() -> None:
    assert reflection_formats() == ("reflact", "preflect_reflact")
    assert [n for n in step_formats() if is_reflective(n)] == list(reflection_formats())
    assert {n: step_label(n) for n in step_formats()} == {
        "react": "Thought", "reflact": "Reflection", "act": None, "cot": None, "standard": None,
        "preflect": "Thought", "preflect_reflact": "Reflection"}
    assert {n: reason_type(n) for n in step_formats()} == {
        "react": "thought", "reflact": "reflection", "act": "thought", "cot": "thought", "standard": "thought",
        "preflect": "thought", "preflect_reflact": "reflection"}
    assert step_format("nope") is None and step_label("nope") is None and reason_type("nope") == "thought"
    for name in TRAINED:  # an adapter's format: the cards describe it
        f = step_format(name)
        assert f is not None and f.title and f.card_steps and f.card_ending and f.conversion, name


def test_export_conversions_follow_the_formats_rules() -> None:
    made_from = {t: {s for s in step_formats() if convertible(s, t)} for t in TRAINED}
    assert made_from == {"standard": {"react", "reflact", "act", "cot", "standard"},
                         "cot": {"react", "reflact", "cot"},
                         "act": {"react", "reflact", "act", "cot", "standard"},
                         "react": {"react", "reflact", "cot", "standard"},
                         "reflact": {"reflact", "cot", "standard"}}
    assert not convertible("preflect", "preflect") and not convertible("react", "nope")
    never = {t: tuple(m for m in METHODS if never_convertible(m, t)) for t in TRAINED}
    assert never == {"standard": ("preflect", "preflect_reflact"),
                     "cot": ("standard", "act", "preflect", "preflect_reflact"),
                     "act": ("preflect", "preflect_reflact"),
                     "react": ("act", "preflect", "preflect_reflact"),
                     "reflact": ("act", "react", "preflect", "preflect_reflact")}


def test_cli_method_choices_are_the_methods(capsys) -> None:
    for m in METHODS:
        assert build_parser().parse_args(["run", "--question", "q", "--method", m]).method == m
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--question", "q", "--method", "nope"])
    assert f"(choose from {', '.join(map(repr, METHODS))})" in capsys.readouterr().err


@pytest.mark.parametrize("model", [AgentConfig, PromptSpec])
def test_every_method_is_accepted_and_an_unknown_one_is_refused_listing_them(model) -> None:
    for m in METHODS:
        assert model(method=m).method == m
    with pytest.raises(ValidationError) as e:
        model(method="nope")
    assert all(repr(m) in str(e.value) for m in METHODS)


def test_only_step_formats_can_be_trained() -> None:
    assert [ExportConfig(steps_method=m).steps_method for m in TRAINED] == list(TRAINED)
    assert QuickstartConfig(methods=["react", "reflact"]).methods == ["react", "reflact"]
    with pytest.raises(ValidationError, match="not a step format an adapter is trained in .*'reflact'"):
        ExportConfig(steps_method="preflect")
    with pytest.raises(ValidationError, match=r"reasons and acts in a step format of its own \(react, reflact\)"):
        QuickstartConfig(methods=["act"])


def test_a_method_registered_from_outside_is_accepted_everywhere_and_gone_after() -> None:
    steps = StepFormat("toy", "Toy", "Idea", "thought", lambda task, actions, style, hint: f"{task}. Toy:\n{actions}",
                       accepts=lambda s: s.name == "toy")
    with registered_method(MethodSpec("toy", REACT.run, steps)):
        assert method_names()[-1] == "toy" and AgentConfig(method="toy").method == "toy"
        assert ExportConfig(steps_method="toy").steps_method == "toy"
        assert QuickstartConfig(methods=["toy"]).methods == ["toy"]
        assert convertible("toy", "toy") and not convertible("react", "toy")
    assert "toy" not in method_names() and step_format("toy") is None
    with pytest.raises(ValueError, match="already registered"):
        with registered_method(MethodSpec("react", REACT.run, steps)):
            pass


TOY = MethodSpec("toy", REACT.run, StepFormat("toy", "Toy", "Idea", "thought", lambda *_: "Toy.", accepts=lambda s: False))


def test_an_installed_packages_method_is_found_by_its_entry_point(monkeypatch) -> None:
    import importlib.metadata

    from actune.agent import method_registry

    found = importlib.metadata.EntryPoints([importlib.metadata.EntryPoint(
        "toy", "agent.test_method_registry:TOY", method_registry.METHODS_GROUP)])
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: found if group == "actune.methods" else [])
    monkeypatch.setattr(method_registry, "_plugins_loaded", False)
    try:
        assert method_names()[-1] == "toy" and AgentConfig(method="toy").method == "toy"
    finally:
        method_registry.unregister_method("toy")
    wrong = importlib.metadata.EntryPoints([importlib.metadata.EntryPoint(
        "other", "agent.test_method_registry:TOY", method_registry.METHODS_GROUP)])
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: wrong)
    monkeypatch.setattr(method_registry, "_plugins_loaded", False)
    with pytest.raises(TypeError, match="expected a MethodSpec named 'other'"):
        method_names()
