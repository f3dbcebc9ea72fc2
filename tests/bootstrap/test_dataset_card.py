"""The dataset card of every ``actune export`` (the ``datasets`` folder and each ``--format`` JSONL file): YAML the
Hub reads (checked with huggingface_hub's own ``DatasetCard``), data files that ``datasets`` loads from the card's
``configs`` as the Hub would, a body that states sources, counts, judge, formats and loss; and the export pushed
through ``actune push`` with a fake Hub client."""

from __future__ import annotations

import shutil

import pytest
from huggingface_hub import DatasetCard
from runtime.test_hub_push import FakeHfApi, factory
from test_export_formats import make_store

from actune.bootstrap.dataset_card import size_category
from actune.bootstrap.export import export_dataset
from actune.bootstrap.export_formats import export_file
from actune.runtime.hub_push import file_card_path, push


def test_the_export_folder_carries_a_hub_dataset_card(tmp_path):
    store = make_store(tmp_path / "s.jsonl")
    export_dataset(store, tmp_path / "ds", "text")
    card = DatasetCard.load(tmp_path / "ds" / "README.md")
    data = card.data.to_dict()
    assert data["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "data-*.arrow"}]}]
    assert data["task_categories"] == ["text-generation"] and data["size_categories"] == ["n<1K"]
    assert {"agent", "react", "actune"} <= set(data["tags"])
    text = card.text
    assert f"Trajectory stores (in order): `{store}`." in text
    assert "| react | 2 | 0 | 0 | 0 | 0 | 0 | 2 |" in text and "Tasks covered: 2." in text
    assert "Of the 2 kept records in the stores: 2 judged correct and grounded" in text
    assert "2 agent episodes over 2 tasks (bootstrapped by actune (an agent loop run on a model))" in text
    assert "`max_per_task: 2`, `dedupe_similarity: 0.9`" in text
    assert "**correct**" in text and "**grounded**" in text
    assert "`Thought i: ...`" in text and "`segments`" in text and "`train: false`" in text
    assert "load_from_disk" in text
    # the card's configs are what the Hub loads: datasets reads a repo of the card and the arrow files through
    # them (locally it refuses the folder itself: state.json marks it for load_from_disk)
    from datasets import load_dataset, load_from_disk

    repo = tmp_path / "repo"
    repo.mkdir()
    for f in (tmp_path / "ds").iterdir():
        if f.name == "README.md" or f.suffix == ".arrow":
            shutil.copyfile(f, repo / f.name)
    hub_view = load_dataset(str(repo), split="train")
    assert hub_view.num_rows == 2 and hub_view["episode_id"] == load_from_disk(str(tmp_path / "ds"))["episode_id"]


def test_the_card_says_what_grounded_checked_and_counts_each_level(tmp_path):
    import dataclasses

    from actune.bootstrap.dataset_card import dataset_card
    from actune.bootstrap.export import judge_counts
    from actune.judge import Verdict, record_verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    def kept(level: str, checked: bool = True) -> Trajectory:
        t = Trajectory(task=TaskRecord("t", "q?", "a"), method="react", prediction="a", correct=True,
                       finish_reason="answered")
        return record_verdict(t, Verdict(correct=True, grounded=True, kept=True, grounding_checked=checked,
                                         grounding_level=level))

    counts = judge_counts([kept("evidence"), kept("evidence"), kept("page"), kept("page", checked=False)])
    assert counts == {"kept": 4, "grounding_required": 4, "grounded_evidence": 2, "grounding_not_required": 0,
                      "grounding_not_applicable": 0, "grounding_unchecked": 1}
    summary = export_dataset(make_store(tmp_path / "s.jsonl"), tmp_path / "ds", "text")
    text = dataset_card(dataclasses.replace(summary, judge=counts), [], fmt="actune", data_files="data-*.arrow")
    assert ("Of the 4 kept records in the stores: 4 judged correct and grounded (2 at the evidence level, 1 at the "
            "page level; for 1 of them the task names no supporting page") in text
    assert "every sentence of one evidence set appeared in the episode's observations" in text
    assert "every supporting page the task names was among the pages" not in text  # the page-level rule of old


@pytest.mark.parametrize("fmt,loss", [("openai", "`weight`: 1 (trained) or 0"),
                                      ("sharegpt", "including 1 that actune would not train"),
                                      ("alpaca", "trains on them (4 observation or unreadable-action segments")])
def test_each_jsonl_export_has_its_card_beside_it(tmp_path, fmt, loss):
    from datasets import load_dataset

    store = make_store(tmp_path / "s.jsonl")
    out = tmp_path / f"ds.{fmt}.jsonl"
    export_file(store, out, fmt)
    card_path = file_card_path(out)
    assert card_path == tmp_path / f"ds.{fmt}.README.md"
    card = DatasetCard.load(card_path)
    assert card.data.configs == [{"config_name": "default", "data_files": [{"split": "train", "path": out.name}]}]
    assert card.data.task_categories == ["text-generation"] and "actune" in card.data.tags
    assert loss in card.text and f'data_files="{out.name}"' in card.text
    # as pushed: the file and its card as README.md, loaded through the card's configs
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copyfile(out, repo / out.name)
    shutil.copyfile(card_path, repo / "README.md")
    assert load_dataset(str(repo), split="train").num_rows == 2


def test_an_export_pushes_as_a_dataset_repo(tmp_path):
    store = make_store(tmp_path / "s.jsonl")
    export_dataset(store, tmp_path / "ds", "chat")
    api = FakeHfApi()
    res = push(tmp_path / "ds", "org/trajectories", api_factory=factory(api))
    assert res.repo_type == "dataset" and api.calls[0][1]["repo_type"] == "dataset"
    assert api.uploaded == ["README.md", "data-00000-of-00001.arrow", "dataset_info.json", "export_summary.json",
                            "state.json"]
    assert "`messages`" in DatasetCard.load(tmp_path / "ds" / "README.md").text


def test_size_categories_follow_the_hub_names():
    assert [size_category(n) for n in (0, 999, 1000, 9999, 10_000, 250_000, 5_000_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M"]


def test_an_export_file_is_rewritten_only_where_its_card_is_actunes(tmp_path):
    """The card is huggingface_hub's card data (its key order, not ours): an export recognises its own file by
    the card's pretty_name, whatever the order — and a card from an older actune too — and refuses any other."""
    from actune.bootstrap.export_formats import OutputRefused

    store = make_store(tmp_path / "s.jsonl")
    out = tmp_path / "ds.openai.jsonl"
    export_file(store, out, "openai")
    export_file(store, out, "openai")  # its own earlier output: rewritten
    card = file_card_path(out)
    old = "---\npretty_name: actune react agent trajectories (openai)\nlanguage:\n- en\n---\n\n# an older card\n"
    card.write_text(old)
    export_file(store, out, "openai")
    for foreign in ("---\npretty_name: my trajectories\n---\n", "# no front matter\n", "---\n: [broken\n---\n"):
        card.write_text(foreign)
        with pytest.raises(OutputRefused):
            export_file(store, out, "openai")
        assert card.read_text() == foreign
