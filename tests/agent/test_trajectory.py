"""The trajectory record round-trips exactly and bad lines fail with file and line."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actune.records.trajectory import (
    FINISH_REASONS,
    SCHEMA_VERSION,
    STEP_TYPES,
    ModelRecord,
    SamplingRecord,
    Step,
    TaskRecord,
    Timings,
    TokenUsage,
    Trajectory,
    TrajectoryFormatError,
    Usage,
    append_trajectories,
    read_trajectories,
    write_trajectories,
)

text = st.text(max_size=30)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
json_scalar = st.none() | st.booleans() | st.integers(-10**9, 10**9) | finite | text
json_value = st.recursive(json_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3),
                          max_leaves=8)

steps = st.builds(Step, type=st.sampled_from(STEP_TYPES), text=text, iteration=st.integers(0, 50),
                  action_name=st.none() | text, action_arg=st.none() | text, tokens=st.integers(0, 10**6),
                  latency_s=finite, meta=st.dictionaries(text, json_value, max_size=3))
trajectories = st.builds(
    Trajectory,
    task=st.builds(TaskRecord, id=text, question=text, answer=text, env=text, split=text,
                   aliases=st.lists(text, max_size=3), meta=st.dictionaries(text, json_value, max_size=3)),
    method=text,
    model=st.builds(ModelRecord, name=text, adapter=st.none() | text, regime=text, wire=text,
                    exemplar_set=st.none() | text),
    sampling=st.builds(SamplingRecord, temperature=finite, top_p=finite, max_tokens=st.integers(0, 10**6),
                       seed=st.none() | st.integers(0, 2**31)),
    steps=st.lists(steps, max_size=6),
    prediction=st.none() | text,
    scores=st.dictionaries(text, finite, max_size=3),
    correct=st.booleans(),
    finish_reason=st.sampled_from(FINISH_REASONS),
    usage=st.builds(TokenUsage, st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**9), st.integers(0, 10**4)),
    timings=st.builds(Timings, finite, finite, finite, finite),
    attempt=st.integers(0, 100),
    run_id=text,
    episode_id=text,
    info=st.dictionaries(text, json_value, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(trajectories)
def test_round_trip_exact(t: Trajectory):
    assert Trajectory.from_dict(t.to_dict()) == t
    assert Trajectory.from_json(t.to_json()) == t
    assert json.loads(t.to_json())["schema_version"] == SCHEMA_VERSION


def _example() -> Trajectory:
    return Trajectory(task=TaskRecord("q1", "Who?", "Bob"), method="react",
                      steps=[Step("thought", "t", 1), Step("answer", "finish[Bob]", 1, "finish", "Bob")],
                      prediction="Bob", correct=True, scores={"em": 1.0})


def test_jsonl_append_read_and_atomic_write(tmp_path):
    p = tmp_path / "out" / "t.jsonl"
    assert append_trajectories(p, [_example()]) == 1
    assert append_trajectories(p, [_example(), _example()]) == 2
    got = list(read_trajectories(p))
    assert len(got) == 3 and got[0] == _example()
    assert write_trajectories(p, [_example()]) == 1
    assert len(list(read_trajectories(p))) == 1
    assert [x.name for x in p.parent.iterdir()] == ["t.jsonl"]  # no temp file left


def test_bad_line_names_file_and_line(tmp_path):
    p = tmp_path / "t.jsonl"
    good = _example().to_json()
    bad = json.loads(good)
    bad["steps"][0]["type"] = "dream"
    p.write_text(good + "\n\n" + json.dumps(bad) + "\n")
    with pytest.raises(TrajectoryFormatError, match=r"t\.jsonl:3: steps\[0\]\.type: unknown step type 'dream'"):
        list(read_trajectories(p))
    p.write_text(good + "\n{not json\n")
    with pytest.raises(TrajectoryFormatError, match=r"t\.jsonl:2: invalid JSON"):
        list(read_trajectories(p))


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(schema_version=99), "schema_version 99"),
    (lambda d: d.update(finish_reason="bored"), "finish_reason: unknown value 'bored'"),
    (lambda d: d["task"].update(colour="red"), "unknown key task.colour"),
    (lambda d: d.pop("task"), "missing key 'task'"),
    (lambda d: d.update(steps={}), "steps: must be list, got dict"),
    # a wrong type is named where it is read, not met later as a crash in the stage that uses it
    (lambda d: d.update(attempt="zero"), 'attempt: must be int, got str "zero"'),
    (lambda d: d.update(correct=1), "correct: must be bool, got int 1"),
    (lambda d: d["task"].update(id={"a": 1}), r'task.id: must be str, got dict \{"a": 1\}'),
    (lambda d: d["task"].update(aliases=["x", 2]), "task.aliases: must be list"),
    (lambda d: d.update(scores={"em": "1"}), "scores: must be dict"),
    (lambda d: d["steps"][0].update(iteration=None), "steps\\[0\\].iteration: must be int, got NoneType"),
    (lambda d: d["sampling"].update(seed="7"), r"sampling.seed: must be int \| None, got str"),
    # past 64 bits an export's arrow table overflowed with a traceback (issue #47 finding 4)
    (lambda d: d.update(attempt=10**30), r"attempt: must be int \(64-bit\), got int 1000000000000000000000000000000"),
])
def test_bad_records_rejected(mutate, message):
    d = _example().to_dict()
    mutate(d)
    with pytest.raises(TrajectoryFormatError, match=message):
        Trajectory.from_dict(d)


def test_the_request_types_are_the_record_types_plus_what_only_a_request_needs():
    """Task, Sampling and Usage are derived from the record types (or they from them) by inheritance, and a
    record keeps the keys it always had, in their order."""
    from actune.llm import Sampling
    from actune.records.task_record import Task

    task = Task("q1", "Who?", "Sony", aliases=["SONY"], meta={"type": "bridge"})
    record = TaskRecord.of(task)
    assert asdict(record) == asdict(task) and type(record) is TaskRecord
    assert record.aliases is not task.aliases and record.meta is not task.meta  # a copy of its own
    assert list(asdict(SamplingRecord())) == ["temperature", "top_p", "max_tokens", "seed"]
    assert isinstance(Sampling(logprobs=2), SamplingRecord) and Sampling(0.5, 0.9, 64, 3).seed == 3
    usage = TokenUsage()
    usage.count(Usage(5, 2, 1))
    usage.count(Usage(3, 1, 0))
    assert asdict(usage) == {"prompt_tokens": 8, "completion_tokens": 3, "cached_prompt_tokens": 1, "requests": 2}
    assert Usage(1, 2, 3) + Usage(1, 1, 1) == Usage(2, 3, 4)
