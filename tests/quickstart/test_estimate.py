"""The quickstart's ETA: each stage kind's estimate against the measured runs and the settings that change it."""

from __future__ import annotations

from pathlib import Path

import pytest

from actune.quickstart.config import PRESETS, load_quickstart
from actune.quickstart.estimate import concurrency_speedup, estimate_seconds, estimate_stages

FIREACT_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_hotpotqa.jsonl"


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_load_and_estimate(preset: str) -> None:
    cfg = load_quickstart(preset)
    assert cfg.passes and cfg.methods
    est = estimate_seconds(cfg, "cpu-bf16")
    assert set(est) == {"bootstrap", "train", "eval"} and all(v > 0 for v in est.values())


def test_estimate_counts_reflact_slower_and_sparser_than_react() -> None:
    react = estimate_seconds(load_quickstart("full", ["methods=[react]", "rounds=1"]), "cpu-bf16")
    reflact = estimate_seconds(load_quickstart("full", ["methods=[reflact]", "rounds=1"]), "cpu-bf16")
    both = estimate_seconds(load_quickstart("full", ["methods=[react,reflact]", "rounds=1"]), "cpu-bf16")
    assert reflact["eval"] > react["eval"] and reflact["bootstrap"] > react["bootstrap"]
    server = 40.0  # one start per round, shared by every method's round-1 passes
    assert both["bootstrap"] == pytest.approx(react["bootstrap"] + reflact["bootstrap"] - server)
    assert both["train"] == pytest.approx(react["train"] + reflact["train"])


def test_concurrency_speedup_follows_the_measured_table() -> None:
    assert concurrency_speedup(16) == 1.0 and concurrency_speedup(32) == pytest.approx(1.21)
    assert concurrency_speedup(8) == pytest.approx(0.5)  # half the slots of the measured rate
    assert 1.21 < concurrency_speedup(48) < 1.34 and concurrency_speedup(256) == pytest.approx(1.34)
    fast = load_quickstart("full", ["bootstrap.concurrency=64", "eval.concurrency=64"])
    slow = load_quickstart("full", ["bootstrap.concurrency=16", "eval.concurrency=16"])
    assert estimate_seconds(fast, "cpu-bf16")["eval"] < estimate_seconds(slow, "cpu-bf16")["eval"]


def test_full_estimate_matches_the_measured_whole_runs() -> None:
    # seed 1 (AMD EPYC, 1h57m: bootstrap 36, train 52.5, eval 28.6 min) and seed 4 (Intel Xeon with AMX,
    # 2h03m: bootstrap 32, train 60, eval 31 min), README. Both ran every eval model on a server of its own: the
    # bootstrap rounds' servers now run all but the last round's (2 starts fewer a method, 40 s each)
    est = {k: v / 60 for k, v in estimate_seconds(load_quickstart("full"), "cpu-bf16").items()}
    assert 55 <= est["bootstrap"] + est["eval"] <= 66 and 40 <= est["train"] <= 62 and est["eval"] <= 10
    assert 105 <= sum(est.values()) <= 125


def test_estimate_adds_the_borrowed_examples_to_react_training_only() -> None:
    alone = estimate_seconds(load_quickstart("full", ["bootstrap.attempts_per_task=1"]), "cpu-bf16")
    mixed = estimate_seconds(load_quickstart("full", ["bootstrap.attempts_per_task=1", "mix_methods=true"]), "cpu-bf16")
    assert (mixed["bootstrap"], mixed["eval"]) == (alone["bootstrap"], alone["eval"])  # no episode more
    react_alone = estimate_seconds(load_quickstart("full", ["bootstrap.attempts_per_task=1", "methods=[react]"]),
                                   "cpu-bf16")
    reflact_alone = alone["train"] - react_alone["train"]
    # ReAct's training grows by ReflAct's examples at ReAct's tokens per example; ReflAct's stays as it was
    assert mixed["train"] - alone["train"] == pytest.approx(reflact_alone * 335 / 500)


def test_estimate_with_round_start_previous_trains_each_round_on_its_new_examples_only() -> None:
    over = ["bootstrap.attempts_per_task=1", "methods=[react]"]
    one = estimate_seconds(load_quickstart("full", [*over, "rounds=1"]), "cpu-fp32")["train"]
    two = estimate_seconds(load_quickstart("full", over), "cpu-fp32")["train"]
    prev = estimate_seconds(load_quickstart("full", [*over, "round_start=previous"]), "cpu-fp32")["train"]
    # from the base model round 2 trains round 1's examples again; from the previous model only its new ones
    assert prev == pytest.approx(two - one)


def test_estimate_counts_round_epochs_for_later_rounds_only() -> None:
    over = ["bootstrap.attempts_per_task=1", "methods=[react]", "round_start=previous"]
    one = estimate_seconds(load_quickstart("full", [*over, "rounds=1"]), "cpu-fp32")["train"]
    three = estimate_seconds(load_quickstart("full", over), "cpu-fp32")["train"]
    two = estimate_seconds(load_quickstart("full", [*over, "round_epochs=2"]), "cpu-fp32")["train"]
    assert two - one == pytest.approx((three - one) * 2 / 3)  # round 2 at 2 epochs of 3; round 1 unchanged


def test_estimate_applies_each_methods_round_start_and_epochs() -> None:
    over = ["bootstrap.attempts_per_task=1", "mix_methods=true"]
    def train(*more: str) -> float:
        return estimate_seconds(load_quickstart("full", [*over, *more]), "cpu-fp32")["train"]
    base, prev = train(), train("round_start=previous")
    react_prev = train("round_start={react: previous}")
    reflact_prev = train("round_start={reflact: previous}")
    assert base > react_prev > prev and base > reflact_prev > prev
    assert (base - react_prev) + (base - reflact_prev) == pytest.approx(base - prev)  # the methods add up
    assert train("round_start={react: previous}", "round_epochs={react: 2}") < react_prev


def test_imported_records_add_training_time_to_the_estimate(tmp_path: Path) -> None:
    plain = estimate_seconds(load_quickstart("hotpotqa", ["imports=[]", "rounds=1"]), "cpu-bf16")["train"]
    cfg = load_quickstart("hotpotqa", [f"imports=[{{path: {FIREACT_SAMPLE}, format: openai}}]", "rounds=1"])
    # 3 records, each one more example of about a world ReAct example's 335 tokens, the preset's 1 epoch, 240 tokens/s
    assert estimate_seconds(cfg, "cpu-bf16")["train"] - plain == pytest.approx(3 * 335 * 1 / 240)


def test_round_one_estimate_asks_no_more_tasks_than_the_passes_limits() -> None:
    # smoke: 40 training tasks x 2 attempts, a keep target above what they can give; limits of 5 + 5 tasks
    unlimited = load_quickstart("smoke", ["bootstrap.target_correct=400", "oracle_baseline=false", "rounds=1"])
    limited = load_quickstart("smoke", ["bootstrap.target_correct=400", "oracle_baseline=false", "rounds=1",
                                        "passes=[{kind: single, limit: 5}, {kind: bridge, limit: 5}]"])
    e0, e1 = estimate_stages(unlimited, "cpu-bf16"), estimate_stages(limited, "cpu-bf16")
    # 80 episodes against 20, 16 at once (the measured rate: 3,000 an hour); server start and eval alike
    assert e0.bootstrap_rounds[0] - e1.bootstrap_rounds[0] == pytest.approx((80 - 20) / 3000.0 * 3600)


def test_the_search_index_build_is_counted_once_before_round_one(tmp_path: Path, monkeypatch) -> None:
    """The corpus's index build (measured at 5M paragraphs: 10.4 MB/s) is added to round 1 while it has no index;
    a built index costs nothing."""
    from actune.envs.corpus import build_index, index_dir_for
    from actune.quickstart.estimate import index_build_seconds

    monkeypatch.setenv("ACTUNE_HOME", str(tmp_path / "home"))
    data = tmp_path / "hotpotqa"
    data.mkdir()
    corpus = data / "wiki_paragraphs.jsonl"
    corpus.write_text("".join(f'{{"title": "Page {i}", "sentences": ["Page {i} is a page."]}}\n' for i in range(2000)))
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={data}"])
    assert index_build_seconds(cfg) == pytest.approx(corpus.stat().st_size / 1e6 / 10.4)
    unbuilt = estimate_stages(cfg, "cpu-bf16").bootstrap_rounds[0]
    link = tmp_path / "run" / "tasks" / "corpus.jsonl"  # what a run indexes: its own link to the corpus
    link.parent.mkdir(parents=True)
    link.symlink_to(corpus)
    build_index(link, index_dir_for(link))
    assert index_build_seconds(cfg) == 0.0
    assert estimate_stages(cfg, "cpu-bf16").bootstrap_rounds[0] == pytest.approx(unbuilt - corpus.stat().st_size / 1e6 / 10.4)
    assert index_build_seconds(load_quickstart("smoke")) == 0.0  # the world has no corpus
