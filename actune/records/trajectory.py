"""The trajectory record: one agent episode, as written to and read from JSONL.

Every stage exchanges episodes in this form: the agent loop writes it, bootstrap filters it, the
training exporter renders it, eval scores it. One JSON object per line; ``schema_version`` says which
layout a line has, so older files stay readable when fields are added.

Steps are kept in order with one type each: ``thought`` (ReAct), ``reflection`` (ReflAct),
``plan`` and ``critique`` (planning methods), ``action`` (sent to the environment), ``observation``
(what came back, or the format hint after an unparseable step) and ``answer`` (the final answer).
"""

from __future__ import annotations

import copy
import functools
import json
import re
import types
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from actune.records.atomic_write import atomic_writer
from actune.records.jsonl import JSON_ERRORS, iter_appended, json_problem
from actune.records.task_record import Task

__all__ = [
    "SCHEMA_VERSION",
    "STEP_TYPES",
    "FINISH_REASONS",
    "TaskRecord",
    "ModelRecord",
    "SamplingRecord",
    "Step",
    "TokenUsage",
    "Usage",
    "Timings",
    "Trajectory",
    "TrajectoryFormatError",
    "read_trajectories",
    "read_trajectory_lines",
    "append_trajectories",
    "write_trajectories",
]

SCHEMA_VERSION = 1

STEP_TYPES = ("thought", "reflection", "plan", "critique", "action", "observation", "answer")

FINISH_REASONS = (
    "answered",  # the model gave a final answer (right or wrong)
    "max_steps",  # the step budget ran out without an answer
    "parse_errors",  # K consecutive steps could not be parsed
    "repetition",  # the same action three times
    "context_overflow",  # prompt + max_tokens exceeded the model's context window
    "server_error",  # the model server failed after retries
    "env_done",  # the environment ended the episode without an answer (e.g. ALFWorld won/lost)
)


# A lone surrogate (what a "\ud800" escape in a task file decodes to) has no UTF-8 encoding: a record
# holding one failed at every write, and a rerun met it again. It is written as JSON's own \uXXXX escape,
# which reads back to the same string. Only surrogates are escaped, not every non-ASCII character as
# ensure_ascii=True would: stores stay readable and compact, and records without one keep their bytes.
# (Replacing them with U+FFFD would lose what the task said.) In JSON text from json.dumps a surrogate
# can only sit inside a string literal, where the escape means the same code point.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


class TrajectoryFormatError(ValueError):
    """A trajectory line or dict is malformed; the message names the file, line and key."""


@dataclass
class TaskRecord(Task):
    """The task as the episode saw it: a :class:`~actune.records.task_record.Task`'s fields, in a copy of its own so a
    record stands alone."""

    @classmethod
    def of(cls, task: Task) -> TaskRecord:
        """The record's copy of a task (its lists and meta copied, so the record stands alone)."""
        return cls(**{f.name: copy.copy(getattr(task, f.name)) for f in fields(Task)})


@dataclass
class ModelRecord:
    """Which model produced the episode, and how it was prompted."""

    name: str = ""
    adapter: str | None = None
    regime: str = "few_shot"  # few_shot | zero_shot
    wire: str = "text"  # text | chat | tools
    exemplar_set: str | None = None


@dataclass
class SamplingRecord:
    """The sampling parameters a record keeps (:class:`actune.llm.Sampling`, which requests carry, adds those
    that only a request needs)."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = None


@dataclass
class Step:
    """One entry of the trajectory.

    ``iteration`` is the 1-based loop step it belongs to (the ``i`` in ``Thought i``).
    For ``action`` and ``answer`` steps, ``action_name``/``action_arg`` hold the parsed action
    (``action_name`` None: the action could not be parsed; ``text`` keeps what the model wrote).
    ``tokens`` counts generated tokens for model steps and approximate tokens for observations.
    """

    type: str
    text: str
    iteration: int = 0
    action_name: str | None = None
    action_arg: str | None = None
    tokens: int = 0
    latency_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Usage:
    """Tokens of model requests: one completion's, or a sum (``+``, of two of one type)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return type(self)(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


@dataclass
class TokenUsage(Usage):
    """An episode's tokens: its requests' :class:`Usage`, summed, and how many requests it made."""

    requests: int = 0

    def count(self, request: Usage) -> None:
        """Add one request's tokens, in place."""
        for f in fields(Usage):
            setattr(self, f.name, getattr(self, f.name) + getattr(request, f.name))
        self.requests += 1


@dataclass
class Timings:
    started_at: float = 0.0  # unix time
    wall_s: float = 0.0
    llm_s: float = 0.0
    env_s: float = 0.0


@dataclass
class Trajectory:
    """One episode. Round-trips exactly through :meth:`to_dict`/:meth:`from_dict` and JSON."""

    task: TaskRecord
    method: str
    model: ModelRecord = field(default_factory=ModelRecord)
    sampling: SamplingRecord = field(default_factory=SamplingRecord)
    steps: list[Step] = field(default_factory=list)
    prediction: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    correct: bool = False
    finish_reason: str = "answered"
    usage: TokenUsage = field(default_factory=TokenUsage)
    timings: Timings = field(default_factory=Timings)
    attempt: int = 0
    run_id: str = ""
    episode_id: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    """Facts from the environment and the method: pages read (titles), CoT-SC votes, hybrid phases,
    early-exit flags, parse-error count..."""
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Trajectory":
        if not isinstance(d, dict):
            raise TrajectoryFormatError(f"trajectory must be an object, got {type(d).__name__}")
        version = d.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise TrajectoryFormatError(
                f"schema_version {version!r} is not supported (this actune reads {SCHEMA_VERSION})"
            )
        try:
            kw = _known(cls, d, "")
            kw["task"] = TaskRecord(**_known(TaskRecord, d["task"], "task"))
            kw["model"] = ModelRecord(**_known(ModelRecord, d.get("model", {}), "model"))
            kw["sampling"] = SamplingRecord(**_known(SamplingRecord, d.get("sampling", {}), "sampling"))
            kw["usage"] = TokenUsage(**_known(TokenUsage, d.get("usage", {}), "usage"))
            kw["timings"] = Timings(**_known(Timings, d.get("timings", {}), "timings"))
            steps = d.get("steps", [])
            if not isinstance(steps, list):
                raise TrajectoryFormatError("steps: must be a list")
            kw["steps"] = [Step(**_known(Step, s, f"steps[{i}]")) for i, s in enumerate(steps)]
        except KeyError as e:
            raise TrajectoryFormatError(f"missing key {e.args[0]!r}") from None
        except TypeError as e:  # missing required dataclass field
            raise TrajectoryFormatError(str(e)) from None
        for i, s in enumerate(kw["steps"]):
            if s.type not in STEP_TYPES:
                raise TrajectoryFormatError(f"steps[{i}].type: unknown step type {s.type!r}")
        if kw.get("finish_reason", "answered") not in FINISH_REASONS:
            raise TrajectoryFormatError(f"finish_reason: unknown value {kw['finish_reason']!r}")
        return cls(**kw)

    def to_json(self) -> str:
        """One line of JSON that is always valid UTF-8 (lone surrogates are escaped, see ``_SURROGATE``)."""
        text = json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=False)
        return _SURROGATE.sub(_escape_surrogate, text)

    @classmethod
    def from_json(cls, text: str) -> "Trajectory":
        try:
            data = json.loads(text)
        except JSON_ERRORS as e:
            raise TrajectoryFormatError(f"invalid JSON: {json_problem(e)[1]}") from None
        return cls.from_dict(data)


def _matches(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field's annotation (a nested record is checked on its own, later)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or (isinstance(hint, type) and is_dataclass(hint)):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_matches(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) and _matches(v, args[1]) for k, v in value.items())
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:  # a 64-bit integer: what datasets/arrow, and so an export, can hold (10**30 overflowed there)
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    return isinstance(value, hint)


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    # resolved once a record class: every line of a store is checked against them
    return typing.get_type_hints(cls)


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _known(cls: type, d: Any, where: str) -> dict[str, Any]:
    """``d``'s keys, each known to ``cls`` and of its field's type (a wrong type read here, not as a crash in
    whatever stage uses the field later)."""
    if not isinstance(d, dict):
        raise TrajectoryFormatError(f"{where or 'trajectory'}: must be an object, got {type(d).__name__}")
    hints = _type_hints(cls)
    prefix = f"{where}." if where else ""
    unknown = sorted(set(d) - set(hints))
    if unknown:
        raise TrajectoryFormatError(f"unknown key {prefix}{unknown[0]}")
    for key, value in d.items():
        if not _matches(value, hints[key]):
            name = _type_name(hints[key]).replace("int", "int (64-bit)") if isinstance(value, int) else \
                _type_name(hints[key])
            raise TrajectoryFormatError(f"{prefix}{key}: must be {name}, got "
                                        f"{type(value).__name__} {json.dumps(value, default=str)[:60]}")
    return dict(d)


def read_trajectory_lines(path: str | Path) -> Iterator[tuple[int, Trajectory]]:
    """Yield ``(line number, trajectory)`` of a JSONL file; a bad line raises naming ``file:line``.

    A store whose writer was killed mid-line ends in a torn line: that last line is skipped when it does
    not parse (:func:`actune.records.jsonl.iter_appended`), so export and eval can read the store before a
    resumed run reopens it.
    """
    return iter_appended(path, Trajectory.from_json, TrajectoryFormatError)


def read_trajectories(path: str | Path) -> Iterator[Trajectory]:
    """Yield the trajectories of a JSONL file (see :func:`read_trajectory_lines`)."""
    for _, traj in read_trajectory_lines(path):
        yield traj


def append_trajectories(path: str | Path, trajectories: Iterable[Trajectory]) -> int:
    """Append records to a JSONL file (one write per line, flushed); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("a", encoding="utf-8") as f:
        for t in trajectories:
            f.write(t.to_json() + "\n")
            n += 1
        f.flush()
    return n


def write_trajectories(path: str | Path, trajectories: Iterable[Trajectory]) -> int:
    """Write a whole JSONL file atomically (temp file + rename); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with atomic_writer(path) as f:
        for t in trajectories:
            f.write(t.to_json() + "\n")
            n += 1
    return n
