"""Preference pairs: same task, method and prompt; cut where two episodes part; observations never carry loss."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent.fake_episodes import DANUBE, NILE, RIGHT, WALKMAN, WRONG_EARLY, WRONG_LATE
from agent.fake_episodes import scripted_store as _store

from actune.agent.render import render_steps_text, trajectory_prompt_context
from actune.bootstrap.export import ExportError, OutputRefused, text_example
from actune.bootstrap.preference_pairs import export_pairs, pair_rows, shared_steps, sometimes_solved


def test_a_pair_starts_where_the_two_episodes_part(tmp_path: Path) -> None:
    right, late, early = _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE), (WALKMAN, WRONG_EARLY)])
    assert shared_steps(right.steps, late.steps) == 3 and shared_steps(right.steps, early.steps) == 0
    rows, summary = pair_rows(tmp_path / "s.jsonl")
    (row,) = rows  # one kept episode: one pair, with the first failed one
    ctx = trajectory_prompt_context(right)
    assert (row["chosen_episode"], row["rejected_episode"], row["shared_steps"]) == (
        right.episode_id, late.episode_id, 3)
    assert row["prompt"] == text_example(right)["text"][:len(row["prompt"])]
    assert row["prompt"].endswith(render_steps_text(ctx, right.steps[:3]))
    assert row["chosen"] == render_steps_text(ctx, right.steps[3:])
    assert row["rejected"] == render_steps_text(ctx, late.steps[3:])
    assert row["chosen"].startswith("Thought 2: It is made by Sony.")
    assert row["rejected"].startswith("Thought 2: It is made by Panasonic.")
    assert [s["train"] for s in row["prompt_segments"]] == [False] * 4  # head + the three shared steps
    assert [s["train"] for s in row["chosen_segments"]] == [True, True]
    assert (summary.pairs, summary.tasks, summary.cut_at_shared_prefix) == (1, 1, 1)


def test_the_rejected_side_trains_every_step_the_model_wrote_and_no_observation(tmp_path: Path) -> None:
    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_EARLY)])
    (row,) = pair_rows(tmp_path / "s.jsonl")[0]
    kinds = [(s["text"].split(":")[0].split()[0], s["train"]) for s in row["rejected_segments"]]
    # the unreadable action is pushed down (SFT's export would leave it out); the format hint is an observation
    assert kinds == [("Thought", True), ("Action", True), ("Observation", False), ("Thought", True),
                     ("Action", True)]
    assert [s["train"] for s in row["chosen_segments"]] == [True, True, False, True, True]
    assert row["shared_steps"] == 0 and len(row["prompt_segments"]) == 1


def test_tasks_without_both_outcomes_and_the_cap(tmp_path: Path) -> None:
    _store(tmp_path / "a.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE), (WALKMAN, RIGHT), (WALKMAN, WRONG_EARLY),
                                  (WALKMAN, RIGHT), (WALKMAN, WRONG_LATE)])
    _store(tmp_path / "b.jsonl", [(DANUBE, [" It is long.\nAction 1: finish[2,850 km]"]),
                                  (NILE, [" Guess.\nAction 1: finish[100 km]"])])
    rows, summary = pair_rows([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], max_pairs_per_task=2)
    assert [r["shared_steps"] for r in rows] == [3, 0]  # three kept, three failed: the first two pairs
    assert summary.unpaired == {"no_failed": 1, "no_kept": 1}
    with pytest.raises(ExportError, match=r"b.jsonl: no preference pair .*'no_failed': 1, 'no_kept': 1"):
        export_pairs(tmp_path / "b.jsonl", tmp_path / "pairs")


def test_the_tasks_solved_sometimes_are_those_with_a_kept_and_a_failed_episode(tmp_path: Path) -> None:
    right, _ = _store(tmp_path / "a.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE)])
    danube, nile = _store(tmp_path / "b.jsonl", [(DANUBE, [" It is long.\nAction 1: finish[2,850 km]"]),
                                                 (NILE, [" Guess.\nAction 1: finish[100 km]"])])
    assert sometimes_solved([tmp_path / "a.jsonl", tmp_path / "b.jsonl"]) == {right.task.id}
    assert sometimes_solved([tmp_path / "b.jsonl"]) == set()  # one always kept, one never: no advantage in either
    assert (danube.info["verdict"]["kept"], nile.info["verdict"]["kept"]) == (True, False)


def test_export_pairs_writes_a_dataset_with_its_summary(tmp_path: Path) -> None:
    from datasets import load_from_disk

    _store(tmp_path / "s.jsonl", [(WALKMAN, RIGHT), (WALKMAN, WRONG_LATE)])
    summary = export_pairs(tmp_path / "s.jsonl", tmp_path / "pairs")
    ds = load_from_disk(str(tmp_path / "pairs"))
    assert len(ds) == summary.pairs == 1 and {"prompt", "chosen", "rejected", "chosen_segments"} <= set(ds.column_names)
    assert (tmp_path / "pairs" / "pairs_summary.json").is_file()
    _the_card_loads_as_the_hub_would_and_pushes(tmp_path / "pairs", ds)
    # rerun: its own folder is replaced; a folder it did not write, or its input's, is refused
    assert export_pairs(tmp_path / "s.jsonl", tmp_path / "pairs").pairs == 1
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(OutputRefused):
        export_pairs(tmp_path / "s.jsonl", mine)
    with pytest.raises(OutputRefused):
        export_pairs(tmp_path / "s.jsonl", tmp_path)
    assert (mine / "notes.txt").read_text() == "keep me" and (tmp_path / "s.jsonl").is_file()
    assert export_pairs(tmp_path / "s.jsonl", mine, overwrite=True).pairs == 1


def _the_card_loads_as_the_hub_would_and_pushes(folder: Path, ds) -> None:
    import shutil

    from datasets import load_dataset
    from huggingface_hub import DatasetCard
    from runtime.test_hub_push import FakeHfApi, factory

    from actune.runtime.hub_push import push

    card = DatasetCard.load(folder / "README.md")
    assert card.data.to_dict()["configs"] == [{"config_name": "default",
                                               "data_files": [{"split": "train", "path": "data-*.arrow"}]}]
    assert {"preference", "dpo", "react", "actune"} <= set(card.data.to_dict()["tags"])
    assert card.text.splitlines()[1] == "# actune react preference pairs"
    assert "1 preference pairs over 1 tasks for DPO" in card.text and "Groups without a pair: none" in card.text
    repo = folder.parent / "hub-view"
    repo.mkdir()
    for f in folder.iterdir():
        if f.name == "README.md" or f.suffix == ".arrow":
            shutil.copyfile(f, repo / f.name)
    assert load_dataset(str(repo), split="train")["chosen"] == ds["chosen"]
    api = FakeHfApi()
    result = push(folder, "org/pairs", api_factory=factory(api))
    assert result.kind == "pairs" and api.calls[0][1]["repo_type"] == "dataset"
    assert {"README.md", "pairs_summary.json"} <= set(api.uploaded)
