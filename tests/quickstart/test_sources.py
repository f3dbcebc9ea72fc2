"""The stages before round 1: real questions (HotpotQA, FEVER), imported sets and their replay, gold paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actune.config import ConfigError
from actune.quickstart.config import load_quickstart
from actune.quickstart.context import RunContext
from actune.quickstart.estimate import estimate_seconds
from actune.quickstart.evaluation import eval_config
from actune.quickstart.layout import Layout
from actune.quickstart.pipeline import plan_stages
from actune.quickstart.round_inputs import (
    export_stores,
    imported_stores,
)
from actune.quickstart.sources import import_sets, write_gold_paths, write_tasks

HOTPOT_SMALL = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_small"


FIREACT_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_hotpotqa.jsonl"


MULTIMETHOD = Path(__file__).resolve().parents[1] / "data" / "import" / "fireact_gpt_multimethod.jsonl"


def test_hotpotqa_source_plans_tasks_and_imports_and_exports_the_imported_store(tmp_path: Path) -> None:
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       f"imports=[{{path: {FIREACT_SAMPLE}, format: openai}}, "
                                       f"{{path: {tmp_path / 'world.jsonl'}, format: store}}]", "gold_paths=false"])
    layout = Layout(tmp_path / "run", cfg.source)
    assert layout.tasks_dir == tmp_path / "run" / "tasks"
    run = RunContext(cfg, layout, show_progress=False, log=lambda m: None)
    names = [s.name for s in plan_stages(run, "cpu-bf16")]
    # the preset's second round trains again on what the round-1 model solved
    assert names == ["tasks", "imports", "bootstrap round 1", "export react round 1", "train react round 1",
                     "bootstrap round 2", "export react round 2", "train react round 2", "eval react", "report"]
    # a store used as it is must exist; an imported set lands under the run, once
    write_tasks(run)
    with pytest.raises(ConfigError, match=r"imports\[1\].path: .*world.jsonl not found"):
        import_sets(run)
    (tmp_path / "world.jsonl").write_text("")
    import_sets(run)
    import_sets(run)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match=r"imports\[0\]: .*empty.jsonl holds no records"):
        import_sets(RunContext(cfg.model_copy(update={"imports": [cfg.imports[0].model_copy(update={"path": str(empty)})]}),
                               Layout(tmp_path / "run2", cfg.source), show_progress=False, log=lambda m: None))
    from actune.records.trajectory import read_trajectories

    assert len(list(read_trajectories(layout.imported(0)))) == 3
    assert imported_stores(cfg, layout) == [layout.imported(0), tmp_path / "world.jsonl"]
    layout.store("react", 1).parent.mkdir(parents=True)
    layout.store("react", 1).write_text("")
    assert export_stores(cfg, layout, "react", 1) == [layout.store("react", 1), *imported_stores(cfg, layout)]
    # split seed 0 leaves the dev question on "Maria Callas" to train, beside the train file's one on that page
    assert json.loads((layout.tasks_dir / "tasks.json").read_text())["counts"] == {"train": 6, "dev": 1, "test": 5}
    # the bootstrap and eval stages read the task source's files
    assert run.tasks("test").path == str(layout.tasks_dir / "test.jsonl")
    assert eval_config(run, "react").env.corpus == str(layout.tasks_dir / "corpus.jsonl")


def test_gold_paths_stage_writes_the_training_questions_paths_and_exports_them_last(tmp_path: Path) -> None:
    from actune.records.trajectory import read_trajectories

    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       "imports=[]", "gold_paths=true"])
    layout = Layout(tmp_path / "run", cfg.source)
    run = RunContext(cfg, layout, show_progress=False, log=lambda m: None)
    assert [s.name for s in plan_stages(run, "cpu-bf16")][:3] == ["tasks", "gold paths", "bootstrap round 1"]
    write_tasks(run)
    write_gold_paths(run)
    written = list(read_trajectories(layout.gold_paths))
    train_ids = {json.loads(line)["id"] for line in (layout.tasks_dir / "train.jsonl").read_text().splitlines()}
    assert written and {t.task.id for t in written} <= train_ids
    assert all(t.info["verdict"]["kept"] and t.info["verdict"]["grounded"] for t in written)
    write_gold_paths(run)  # resumed: nothing written twice
    assert len(list(read_trajectories(layout.gold_paths))) == len(written)
    assert imported_stores(cfg, layout) == [layout.gold_paths]
    # each training question is one more example of 1.5 world ReAct examples' length, in every round's training
    plain = estimate_seconds(load_quickstart("hotpotqa", ["imports=[]", "gold_paths=false"]), "cpu-bf16")["train"]
    preset = load_quickstart("hotpotqa")
    assert preset.rounds == 2
    assert estimate_seconds(load_quickstart("hotpotqa", ["imports=[]", "gold_paths=true"]), "cpu-bf16")["train"] \
        - plain == pytest.approx(2 * int(1.5 * 661) * 335 * preset.train.num_train_epochs / 240)
    assert load_quickstart("fever", ["gold_paths=true"]).gold_paths  # FEVER claims have paths of their own
    # with ReflAct among the methods, its gold paths are written in its own form and exported to it alone
    both = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                        "imports=[]", "gold_paths=true", "methods=[react, reflact]"])
    run2 = RunContext(both, Layout(tmp_path / "both", both.source), show_progress=False, log=lambda m: None)
    write_tasks(run2)
    write_gold_paths(run2)
    react = list(read_trajectories(run2.layout.gold_paths_of("react")))
    reflact = list(read_trajectories(run2.layout.gold_paths_of("reflact")))
    assert [t.task.id for t in reflact] == [t.task.id for t in react] == [t.task.id for t in written]
    assert {t.method for t in reflact} == {"reflact"} and all(t.info["verdict"]["kept"] for t in reflact)
    assert imported_stores(both, run2.layout, "reflact") == [run2.layout.gold_paths_of("reflact")]
    assert export_stores(both, run2.layout, "react", 1)[-1] == run2.layout.gold_paths


def test_fever_source_writes_claims_and_runs_the_fever_environment(tmp_path: Path) -> None:
    fever_small = Path(__file__).resolve().parents[1] / "data" / "fever_small"
    cfg = load_quickstart("fever", [f"fever.data_dir={fever_small}", "fever.n_test=3", "fever.n_dev=3"])
    layout = Layout(tmp_path, cfg.source)
    run = RunContext(cfg, layout, show_progress=False, log=lambda m: None)
    # the preset trains on gold paths, as the hotpotqa one does
    assert [s.name for s in plan_stages(run, "cpu-bf16")][:3] == ["tasks", "gold paths", "bootstrap round 1"]
    write_tasks(run)
    assert json.loads((layout.tasks_dir / "tasks.json").read_text())["source"] == "fever"
    ecfg = eval_config(run, "react")
    assert ecfg.env.name == "fever" and ecfg.env.corpus == str(layout.tasks_dir / "corpus.jsonl")
    from actune.tasks.loading import load_tasks

    assert {t.env for t in load_tasks(ecfg.tasks)} == {"fever"}  # label accuracy, FEVER's finish


def test_a_replayed_import_trains_on_the_corpus_and_says_when_no_record_fits(tmp_path: Path) -> None:
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       f"imports=[{{path: {FIREACT_SAMPLE}, format: openai, replay: true}}]"])
    layout = Layout(tmp_path, cfg.source)
    logs: list[str] = []
    run = RunContext(cfg, layout, show_progress=False, log=logs.append)
    write_tasks(run)
    # FireAct's searches are free-text queries for Google: none opens a page of this corpus
    with pytest.raises(ConfigError, match=r"imports\[0\].replay: none of the 3 records' searches all open a page"):
        import_sets(run)
    assert "imports[0]: replayed 0 of 3 records in this run's corpus (3 left out" in logs[-1]
    assert layout.imported_as_released(0).is_file()


def test_imports_rerun_after_rejections_and_refuse_a_set_that_asks_a_test_question(tmp_path: Path) -> None:
    cfg = load_quickstart("hotpotqa", [f"hotpotqa.data_dir={HOTPOT_SMALL}", "hotpotqa.n_test=5", "hotpotqa.n_dev=1",
                                       f"imports=[{{path: {MULTIMETHOD}, format: openai}}]"])
    layout = Layout(tmp_path / "run", cfg.source)
    logs: list[str] = []
    run = RunContext(cfg, layout, show_progress=False, log=logs.append)
    write_tasks(run)
    import_sets(run)
    import_sets(run)  # all imported before, one record rejected (a failed episode): a rerun goes on
    assert logs[-1] == f"imports[0]: 0 of 4 records imported from {MULTIMETHOD} (4 rejected)"
    # a teacher's record on one of this run's test questions is refused, naming it
    question = json.loads((layout.tasks_dir / "test.jsonl").read_text().splitlines()[0])["question"]
    leaky = tmp_path / "leaky.jsonl"
    leaky.write_text(json.dumps({"messages": [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "Thought: I know it.\nAction: finish[x]"},
        {"role": "user", "content": "Observation: Episode finished, reward = True"}]}) + "\n")
    cfg = cfg.model_copy(update={"imports": [type(cfg.imports[0])(path=str(leaky))]})
    run = RunContext(cfg, layout, show_progress=False, log=logs.append)
    with pytest.raises(ConfigError, match=r"imports\[0\]: 1 records of .* ask a dev or test question"):
        import_sets(run)
