"""Failure modes read off constructed records: one record per mode, then the counts."""

from __future__ import annotations

from eval_records import record

from actune.eval.failures import FAILURE_MODES, failure_counts, failure_mode

CASES = [
    (record("a", correct=True, supporting=["Sony"], read=[]), "correct"),  # right, even unread
    (record("b", correct=False, supporting=["Walkman", "Sony"], read=["walkman", "SONY"]),
     "answered_wrong_grounded"),
    (record("c", correct=False, supporting=["Walkman", "Sony"], read=["Walkman"]), "answered_wrong_ungrounded"),
    (record("d", correct=False, supporting=None, read=["Walkman"]), "answered_wrong_unchecked"),
    (record("e", correct=False, prediction=None, finish_reason="max_steps"), "no_answer_max_steps"),
    (record("f", correct=False, prediction=None, finish_reason="repetition"), "no_answer_repetition"),
    (record("g", correct=False, prediction=None, finish_reason="parse_errors"), "no_answer_parse_errors"),
    (record("h", correct=False, prediction=None, finish_reason="context_overflow"), "no_answer_context_overflow"),
    (record("i", correct=False, prediction=None, finish_reason="server_error"), "no_answer_server_error"),
    (record("j", correct=False, prediction=None, finish_reason="answered"), "no_answer_parse_errors"),
    (record("k", correct=True, prediction=None, finish_reason="env_done"), "correct"),  # an ALFWorld win
    (record("l", correct=False, prediction=None, finish_reason="env_done"), "no_answer_env_done"),
]


def test_each_record_gets_its_mode() -> None:
    for traj, mode in CASES:
        assert failure_mode(traj) == mode, traj.task.id
        assert mode in FAILURE_MODES


def test_grounding_follows_the_judge_evidence_sets_and_no_page_methods() -> None:
    fever = record("m", correct=False, supporting=["A", "B"], read=["B"])
    fever.task.meta["evidence_sets"] = [["A"], ["B"]]  # one whole set read is enough
    assert failure_mode(fever) == "answered_wrong_grounded"
    fever.info["env_info"]["titles"] = []
    assert failure_mode(fever) == "answered_wrong_ungrounded"
    cot = record("n", correct=False, supporting=["Sony"], read=[])
    cot.method = "cot"  # reads no pages: grounding does not apply
    assert failure_mode(cot) == "answered_wrong_unchecked"


def test_counts_cover_every_mode_in_order() -> None:
    counts = failure_counts(t for t, _ in CASES)
    assert list(counts) == list(FAILURE_MODES)
    assert sum(counts.values()) == len(CASES)
    assert counts["correct"] == 2
    assert counts["no_answer_parse_errors"] == 2
    assert counts["no_answer_max_steps"] == 1
    assert counts["answered_wrong_ungrounded"] == 1
    assert failure_counts([]) == {m: 0 for m in FAILURE_MODES}
