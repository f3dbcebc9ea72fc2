"""The methods' registry: each method is one :class:`MethodSpec`, each step format one :class:`StepFormat`, and
every table that differs by method (the loop's runner, the prompt head, the judge's rules, export's conversions,
the importer's mapping, the cards' words, the quickstart's cost weights) is read from here.

A method's spec lives in its own module under :mod:`actune.agent.methods`, which registers the built-in ones; a
package adds its own through the entry point group :data:`METHODS_GROUP`, a test or a script with
:func:`register_method`, and neither touches a file of actune's.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import PydanticCustomError

__all__ = ["METHODS_GROUP", "Cost", "MethodSpec", "StepFormat", "UnknownMethod", "convertible", "find_method",
           "interactive_methods", "is_reflective", "known_method", "method_names", "method_spec", "paper_methods",
           "plans_first", "reads_no_pages", "reason_type", "reflection_formats", "register_method",
           "registered_method", "step_format", "step_formats", "step_label", "trainable_format", "unregister_method"]

Instruction = Callable[[str, str, str, str], str]
"""(task phrase, the environment's actions, the exemplar set's style, a label hint) -> the prompt's instruction."""


@dataclass(frozen=True)
class Cost:
    """What an episode of this format costs against a round-1 ReAct bootstrap episode, and how many it keeps: the
    quickstart's time estimate (:mod:`actune.quickstart.estimate`) reads these."""

    bootstrap: float = 1.0
    prompted: float = 1.0
    """A prompted eval episode (eval's generic few-shot prompt)."""
    tuned: float = 1.0
    """A tuned model's eval episode (zero-shot)."""
    tokens_per_example: int = 335
    """A zero-shot world training example's tokens, prompt included."""
    keep_rate: float = 0.2
    """Round 1's keep rate with type-matched exemplars."""


@dataclass(frozen=True)
class StepFormat:
    """One step format: how a method's episodes are prompted, written, judged, exported and trained."""

    name: str
    title: str
    """How the cards and reports name it ("ReAct")."""
    label: str | None
    """The label a generated reasoning step starts with ("Thought"); None: it writes no reasoning label."""
    reason_type: str | None
    """The step type its reasoning is recorded as (``thought``, ``reflection``); None: it records none."""
    instruction: Instruction
    """The instruction the model sees first."""
    acting: bool = True
    """It acts in the environment step by step (reasoning, action, observation); else it answers at once."""
    plans: bool = False
    """Its episodes open with a plan and its critiques (PreFlect): no other format can be made from them."""
    reflections: bool = False
    """Its reasoning steps are goal-state reflections and it answers ``FINAL ANSWER: ...`` after one saying the
    goal is reached, not with the finish action."""
    accepts: Callable[[StepFormat], bool] | None = None
    """Which other formats' records export can convert into this one; None: this format is not trained (export
    writes no dataset in it)."""
    card_steps: str = ""
    """The dataset card's description of an episode's steps."""
    card_ending: str = ""
    """The model card's one-line shape of an episode, from its first action to its answer."""
    conversion: str = ""
    """The dataset card's words for what a conversion of another format's episode into this one keeps."""
    cost: Cost = field(default_factory=Cost)

    @property
    def trainable(self) -> bool:
        """An adapter can be trained in it: exported records are converted into it."""
        return self.accepts is not None


@dataclass(frozen=True)
class MethodSpec:
    """One agent method: everything that differs by method, in one place."""

    name: str
    run: Callable[[Any], AsyncIterator[Any]]
    """The method itself: an async generator of events (:class:`~actune.agent.episode.Event`) over one
    :class:`~actune.agent.episode.Episode` (:mod:`actune.agent.loop` drives it; typed loosely here because the
    episode's module reads this registry)."""
    steps: StepFormat
    """The step format its prompt head and records use."""
    phases: tuple[str, ...] = ()
    """A hybrid's phases' step formats: its records are in the format of the phase that answered."""
    reads_pages: bool = True
    """False: it answers from the model alone, so the judge keeps it on correctness (no grounding)."""
    paper: bool = False
    """One of the ReAct paper's methods: ``fidelity: paper`` runs it."""
    temperature: str = "temperature"
    """The agent config's field its sampling temperature is read from."""
    imports_as: str | None = None
    """The step format records imported under this method are read as (``actune import --method``); None: not
    an import method."""
    @property
    def formats(self) -> tuple[str, ...]:
        """Every step format its records can be in."""
        return self.phases or (self.steps.name,)


class UnknownMethod(ValueError):
    """A method name no spec is registered under."""


_SPECS: dict[str, MethodSpec] = {}
_FORMATS: dict[str, StepFormat] = {}


METHODS_GROUP = "actune.methods"
"""The entry point group of a package's own methods: ``[project.entry-points."actune.methods"] idea =
"mypkg.idea:SPEC"``, a :class:`MethodSpec` named as its entry point; every command and child process finds it."""
_plugins_loaded = False


def _registry() -> dict[str, MethodSpec]:
    # The built-in methods' modules import the agent loop, whose modules read this registry: they are imported
    # (and register themselves) on the first lookup, not when this module is; the installed plug-ins after them.
    global _plugins_loaded
    importlib.import_module("actune.agent.methods")
    if not _plugins_loaded:
        _plugins_loaded = True
        for ep in importlib.metadata.entry_points(group=METHODS_GROUP):
            spec = ep.load()
            if not isinstance(spec, MethodSpec) or spec.name != ep.name:
                raise TypeError(f"entry point {ep.name} = {ep.value!r} of group {METHODS_GROUP}: expected a "
                                f"MethodSpec named {ep.name!r}, got {type(spec).__name__}")
            register_method(spec)
    return _SPECS


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add ``spec`` (and its step format) to the registry; a name taken by another spec is an error."""
    for table, key, value in ((_SPECS, spec.name, spec), (_FORMATS, spec.steps.name, spec.steps)):
        if table.get(key, value) is not value:
            raise ValueError(f"{key!r} is already registered by another {type(value).__name__}")
    _SPECS[spec.name] = spec
    _FORMATS[spec.steps.name] = spec.steps
    return spec


def unregister_method(name: str) -> None:
    """Remove method ``name`` (and its step format, unless another method uses it)."""
    spec = _SPECS.pop(name)
    if all(s.steps is not spec.steps for s in _SPECS.values()):
        _FORMATS.pop(spec.steps.name, None)


@contextmanager
def registered_method(spec: MethodSpec) -> Iterator[MethodSpec]:
    """``spec`` registered for the ``with`` block."""
    register_method(spec)
    try:
        yield spec
    finally:
        unregister_method(spec.name)


def method_spec(name: str) -> MethodSpec:
    """The spec of method ``name`` (:class:`UnknownMethod` when there is none)."""
    spec = find_method(name)
    if spec is None:
        raise UnknownMethod(f"unknown method {name!r} (known: {', '.join(map(repr, method_names()))})")
    return spec


def find_method(name: str) -> MethodSpec | None:
    """The spec of method ``name``, None when there is none (a record's method may be one no longer registered)."""
    return _registry().get(name)


def method_names(where: Callable[[MethodSpec], bool] | None = None) -> tuple[str, ...]:
    """The registered methods (those ``where`` holds for), in registration order."""
    return tuple(n for n, s in _registry().items() if where is None or where(s))


def known_method(name: Any) -> str:
    """``name`` if a method is registered under it (a pydantic validator: the error is the message alone)."""
    try:
        return method_spec(name).name
    except UnknownMethod as e:
        raise PydanticCustomError("unknown_method", str(e)) from None


def interactive_methods() -> tuple[str, ...]:
    """The methods that act step by step in one format (Act, ReAct, ReflAct): the tools wire can carry them."""
    return method_names(lambda s: s.steps.acting and not s.steps.plans and not s.phases)


def paper_methods() -> tuple[str, ...]:
    """The ReAct paper's methods: what ``fidelity: paper`` runs."""
    return method_names(lambda s: s.paper)


def reads_no_pages(name: str) -> bool:
    """Method ``name`` answers from the model alone (an unknown name: False, it is held to grounding)."""
    spec = find_method(name)
    return spec is not None and not spec.reads_pages


def plans_first(name: str) -> bool:
    """Method ``name`` opens its episodes with a plan and its critique (PreFlect)."""
    spec = find_method(name)
    return spec is not None and spec.steps.plans


def step_formats() -> dict[str, StepFormat]:
    """Every registered step format by name."""
    _registry()
    return dict(_FORMATS)


def step_format(name: str) -> StepFormat | None:
    """The step format ``name`` (None: no method writes it). Read for every step a prompt renders: no copy."""
    _registry()
    return _FORMATS.get(name)


def trainable_format(name: Any) -> str:
    """``name`` if an adapter can be trained in that step format (a pydantic validator)."""
    f = step_format(name)
    if f is None or not f.trainable:
        known = ", ".join(repr(n) for n, f in step_formats().items() if f.trainable)
        raise PydanticCustomError("unknown_format", f"{name!r} is not a step format an adapter is trained in "
                                                    f"(known: {known})")
    return name


def convertible(source: str, target: str) -> bool:
    """Whether records whose steps are in format ``source`` can be exported in format ``target``."""
    s, t = step_format(source), step_format(target)
    return s is not None and t is not None and t.accepts is not None and (s is t or t.accepts(s))


def step_label(name: str) -> str | None:
    """The label a generated step of format ``name`` starts with (none for the one-shot formats' answers)."""
    f = step_format(name)
    return f.label if f is not None and f.acting else None


def reason_type(name: str) -> str:
    """The step type format ``name`` records its reasoning as (``thought`` where it has none of its own)."""
    f = step_format(name)
    return (f.reason_type if f is not None else None) or "thought"


def is_reflective(name: str) -> bool:
    """Format ``name``'s reasoning is goal-state reflections and it answers ``FINAL ANSWER: ...``."""
    f = step_format(name)
    return f is not None and f.reflections


def reflection_formats() -> tuple[str, ...]:
    """The formats whose reasoning is reflections and whose answer is ``FINAL ANSWER: ...``."""
    return tuple(n for n, f in step_formats().items() if f.reflections)
