"""The examples a user copies: their configs load, their tasks parse, and their pages hold what the tasks name."""

from __future__ import annotations

from pathlib import Path

from actune.cli.run_config import RunConfig
from actune.config import load_config
from actune.envs.corpus import read_corpus
from actune.tasks.loading import load_tasks

OWN_TASK = Path(__file__).resolve().parents[1] / "examples" / "own-task"


def test_the_own_task_example_loads_and_its_splits_share_no_page(monkeypatch) -> None:
    monkeypatch.chdir(OWN_TASK.parents[1])  # the config's paths are the repository root's
    run = load_config(RunConfig, OWN_TASK / "run.yaml")
    titles = {title for title, _ in read_corpus(run.bootstrap.env.corpus)}
    train, test = load_tasks(run.bootstrap.tasks), load_tasks(run.eval.tasks)
    assert (len(train), len(test)) == (3, 3)
    pages = {split: {p for t in tasks for p in t.meta["supporting_titles"]} for split, tasks in
             (("train", train), ("test", test))}
    assert pages["train"] | pages["test"] <= titles
    assert pages["train"].isdisjoint(pages["test"])  # as the example's README asks of a user's splits
    assert {t.id for t in train}.isdisjoint(t.id for t in test)
    assert run.eval.env.corpus == run.bootstrap.env.corpus
