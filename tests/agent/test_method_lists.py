"""The agent methods are listed once (``actune.agent.config.Method``); the registry that runs them, the
prompt spec, the CLI and the export config all agree with that list."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from actune.agent.config import INTERACTIVE_METHODS, METHODS, STEPS_METHODS, AgentConfig
from actune.agent.methods import BASE_METHOD, METHOD_RUNNERS
from actune.agent.prompt_spec import PromptSpec
from actune.bootstrap.config import NEVER_CONVERTIBLE, ExportConfig
from actune.cli import build_parser
from actune.quickstart.config import QuickstartConfig


def test_the_registry_runs_exactly_the_listed_methods():
    assert tuple(METHOD_RUNNERS) == METHODS
    assert tuple(BASE_METHOD) == METHODS and set(BASE_METHOD.values()) <= set(METHODS)


def test_step_formats_are_interactive_methods_each_with_its_conversion_rule():
    assert set(INTERACTIVE_METHODS) <= set(STEPS_METHODS) <= set(METHODS)
    assert tuple(NEVER_CONVERTIBLE) == STEPS_METHODS
    assert all(set(never) <= set(METHODS) for never in NEVER_CONVERTIBLE.values())


def test_cli_method_choices_are_the_methods(capsys):
    for m in METHODS:
        assert build_parser().parse_args(["run", "--question", "q", "--method", m]).method == m
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--question", "q", "--method", "nope"])
    assert f"(choose from {', '.join(map(repr, METHODS))})" in capsys.readouterr().err


@pytest.mark.parametrize("model", [AgentConfig, PromptSpec])
def test_every_method_is_accepted_and_an_unknown_one_is_refused_listing_them(model):
    for m in METHODS:
        assert model(method=m).method == m
    with pytest.raises(ValidationError) as e:
        model(method="nope")
    assert all(repr(m) in str(e.value) for m in METHODS)


def test_only_step_formats_can_be_trained():
    assert [ExportConfig(steps_method=m).steps_method for m in STEPS_METHODS] == list(STEPS_METHODS)
    assert QuickstartConfig(methods=["react", "reflact"]).methods == ["react", "reflact"]
    with pytest.raises(ValidationError, match="Input should be 'react', 'reflact', 'act', 'cot' or 'standard'"):
        ExportConfig(steps_method="preflect")
    with pytest.raises(ValidationError, match="Input should be 'react' or 'reflact'"):
        QuickstartConfig(methods=["act"])
