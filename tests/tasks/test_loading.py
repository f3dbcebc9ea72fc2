from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from actune.config import ConfigError, load_config
from actune.tasks.config import TaskConfig
from actune.tasks.hotpotqa import react_subset_indices
from actune.tasks.loading import TaskFileError, load_tasks

DATA = Path(__file__).parents[1] / "data" / "tasks"
SHARED = Path(__file__).parents[2] / ".." / "shared"


def paper_subset(n: int = 7405) -> list[int]:
    """The ReAct notebooks' own lines: idxs = list(range(7405)); random.Random(233).shuffle(idxs)."""
    idxs = list(range(n))
    random.Random(233).shuffle(idxs)
    return idxs[:500]


def test_official_json_list(tmp_path: Path) -> None:
    tasks = load_tasks(TaskConfig(path=str(DATA / "hotpot_dev_simplified_first5.json")))
    assert len(tasks) == 5
    t = tasks[0]
    assert (t.id, t.answer, t.env, t.split) == ("hotpotqa-dev-0", "yes", "wiki", "dev")
    assert t.question == "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert t.meta == {"type": "comparison", "index": 0}
    assert tasks[1].answer == "Chief of Protocol"


def test_jsonl_with_context_keeps_ids_supporting_titles_and_optionally_context() -> None:
    path = str(DATA / "hotpot_dev_with_context_sample.jsonl")
    t = load_tasks(TaskConfig(path=path))[0]
    assert t.id == "5a7613c15542994ccc9186bf" and t.answer == "Gesellschaft mit beschränkter Haftung"
    assert t.meta["supporting_titles"] == ["Gesellschaft mit beschränkter Haftung", "VIVA Media"]
    assert t.meta["supporting_facts"] == [["VIVA Media", 0], ["Gesellschaft mit beschränkter Haftung", 0]]
    assert t.meta["dev_index"] == 4367 and "context" not in t.meta
    with_ctx = load_tasks(TaskConfig(path=path, keep_context=True))[0]
    assert len(with_ctx.meta["context"]) == 10 and with_ctx.meta["context"][0][0] == "Constantin Medien"


def test_react_subset_picks_the_papers_questions_in_its_order(tmp_path: Path) -> None:
    assert react_subset_indices() == paper_subset()
    rows = [{"question": f"question {i}?", "answer": f"answer {i}"} for i in range(7405)]
    f = tmp_path / "dev.json"
    f.write_text(json.dumps(rows))
    tasks = load_tasks(TaskConfig(path=str(f), react_subset=True))
    expected = paper_subset()
    assert len(tasks) == 500
    assert [t.question for t in tasks[:5]] == [f"question {i}?" for i in expected[:5]]
    assert [t.meta["index"] for t in tasks] == expected
    # records that carry dev_index: keep those in the subset, in the subset's order
    few = tmp_path / "few.jsonl"
    picked = [expected[7], 1, expected[2]]  # index 1 is not in the subset
    few.write_text("".join(json.dumps({"question": "q", "answer": "a", "dev_index": i}) + "\n" for i in picked))
    assert [t.meta["dev_index"] for t in load_tasks(TaskConfig(path=str(few), react_subset=True))] == \
        [expected[2], expected[7]]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(rows[:100]))
    with pytest.raises(TaskFileError, match="needs the full 7405-question dev set"):
        load_tasks(TaskConfig(path=str(short), react_subset=True))


def test_exclude_react_subset_is_the_complement(tmp_path: Path) -> None:
    rows = [{"question": f"question {i}?", "answer": f"answer {i}"} for i in range(7405)]
    f = tmp_path / "dev.json"
    f.write_text(json.dumps(rows))
    rest = load_tasks(TaskConfig(path=str(f), exclude_react_subset=True))
    held = set(paper_subset())
    assert len(rest) == 7405 - 500
    assert [t.meta["index"] for t in rest[:3]] == [i for i in range(7405) if i not in held][:3]
    assert not {t.meta["index"] for t in rest} & held
    with pytest.raises(ValueError, match="choose one"):
        TaskConfig(path=str(f), react_subset=True, exclude_react_subset=True)


def test_where_offset_and_limit(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps({"question": f"q{i}", "answer": "a", "ok": i % 2 == 0}) + "\n"
                         for i in range(10)))
    tasks = load_tasks(TaskConfig(path=str(f), where={"ok": True}, offset=1, limit=2))
    assert [t.question for t in tasks] == ["q2", "q4"]


def test_fever_claims(tmp_path: Path) -> None:
    tasks = load_tasks(TaskConfig(path=str(DATA / "fever_paper_dev_sample.jsonl"), format="fever"))
    assert [t.answer for t in tasks] == ["NOT ENOUGH INFO", "NOT ENOUGH INFO", "SUPPORTS", "REFUTES"]
    assert all(t.env == "fever" for t in tasks)
    soul = tasks[2]
    assert soul.id == "137334" and soul.question == "Fox 2000 Pictures released the film Soul Food."
    assert soul.meta["supporting_titles"] == ["Soul Food (film)"] and soul.meta["verifiable"] == "VERIFIABLE"
    assert tasks[0].meta["supporting_titles"] == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "claim": "x", "label": "TRUE"}\n')
    with pytest.raises(TaskFileError, match=r"bad\.jsonl:1: 'label' must be SUPPORTS"):
        load_tasks(TaskConfig(path=str(bad), format="fever"))


def test_fever_evidence_sets(tmp_path: Path) -> None:
    """One title list per evidence set (any one verifies the claim): deduplicated within a set and
    across sets; supporting_titles stays every title, flattened."""
    tasks = load_tasks(TaskConfig(path=str(DATA / "fever_paper_dev_sample.jsonl"), format="fever"))
    assert [t.meta["evidence_sets"] for t in tasks] == [[], [], [["Soul Food (film)"]], [["Paramore"]]]
    f = tmp_path / "multi.jsonl"
    evidence = [
        [[1, 10, "Paramore", 0], [1, 11, "Franklin,_Tennessee", 0], [1, 12, "Paramore", 3]],
        [[2, 20, "Hayley_Williams", 1]],
        [[3, 30, "Franklin,_Tennessee", 2], [3, 31, "Paramore", 1]],  # the first set again, in another order
        [[4, None, None, None]],
    ]
    f.write_text(json.dumps({"id": 5, "label": "REFUTES", "claim": "Paramore is not from Tennessee.",
                             "evidence": evidence}) + "\n"
                 + json.dumps({"id": 6, "label": "SUPPORTS", "claim": "Soul Food is a film.",
                               "evidence_wiki_url": "Soul_Food_-LRB-film-RRB-"}) + "\n")
    multi, hf = load_tasks(TaskConfig(path=str(f), format="fever"))
    assert multi.meta["evidence_sets"] == [["Paramore", "Franklin, Tennessee"], ["Hayley Williams"]]
    assert multi.meta["supporting_titles"] == ["Paramore", "Franklin, Tennessee", "Hayley Williams"]
    assert (hf.meta["evidence_sets"], hf.meta["supporting_titles"]) == ([["Soul Food (film)"]], ["Soul Food (film)"])


def test_custom_tasks(tmp_path: Path) -> None:
    f = tmp_path / "world.jsonl"
    f.write_text(json.dumps({"id": "w1", "question": "Where was Ana born?", "answer": "Lund",
                             "aliases": ["Lund, Sweden"], "meta": {"kind": "single", "supporting_titles": ["Ana"]}})
                 + "\n" + json.dumps({"question": "Q2", "answer": ""}) + "\n")
    a, b = load_tasks(TaskConfig(path=str(f), format="custom", split="train"))
    assert (a.id, a.answer, a.aliases, a.env, a.split) == ("w1", "Lund", ["Lund, Sweden"], "wiki", "train")
    assert a.meta == {"kind": "single", "supporting_titles": ["Ana"], "index": 0}
    assert b.id == "custom-train-1"
    assert load_tasks(TaskConfig(path=str(f), format="custom", env="docqa"))[0].env == "docqa"


@pytest.mark.parametrize("content, fmt, message", [
    ('{"question": "q", "answer": "a"}\n{oops\n', "custom", r"t\.jsonl:2: not valid JSON"),
    ('{"question": "q"}\n', "custom", r"t\.jsonl:1: missing 'answer'"),
    ('\n{"answer": "a"}\n', "hotpotqa", r"t\.jsonl:2: missing or empty 'question'"),
    ('{"question": "q", "answer": "a", "aliases": "x"}\n', "custom", r"'aliases' must be a list"),
    ('{"question": "q", "answer": "a", "kind": "x"}\n', "custom", r"unknown key\(s\) \['kind'\]"),
    ('[1, 2]\n', "custom", r"t\.jsonl:1: expected a JSON object"),
])
def test_bad_task_lines_name_file_and_line(tmp_path: Path, content: str, fmt: str, message: str) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(content)
    with pytest.raises(TaskFileError, match=message):
        load_tasks(TaskConfig(path=str(f), format=fmt))


def test_bad_json_files_and_missing_paths(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_text('[{"question": "q", "answer": "a"},\n {"question": }]')
    with pytest.raises(TaskFileError, match=r"t\.json:2: not valid JSON"):
        load_tasks(TaskConfig(path=str(f)))
    f.write_text('[{"question": "q", "answer": "a"}, "text"]')
    with pytest.raises(TaskFileError, match=r"t\.json: item 1: expected a JSON object"):
        load_tasks(TaskConfig(path=str(f)))
    with pytest.raises(TaskFileError, match="not found"):
        load_tasks(TaskConfig(path=str(tmp_path / "missing.json")))


def test_task_config_needs_exactly_one_source() -> None:
    empty = load_config(TaskConfig, None, [])  # a valid default, so stage configs can hold one
    with pytest.raises(TaskFileError, match="set 'path'"):
        load_tasks(empty)
    with pytest.raises(ConfigError, match="exactly one of 'path'"):
        load_config(TaskConfig, None, ["path=a.json", "hf_dataset=hotpotqa/hotpot_qa"])
    with pytest.raises(ConfigError, match="format"):
        load_config(TaskConfig, None, ["path=a.json", "format=webshop"])


def _hf_rows() -> list[dict]:
    """Two rows in the Hugging Face hotpot_qa column layout."""
    return [
        {"id": "5a8b57f25542995d1e6f1371", "question": "Were Scott Derrickson and Ed Wood of the same nationality?",
         "answer": "yes", "type": "comparison", "level": "hard",
         "supporting_facts": {"title": ["Scott Derrickson", "Ed Wood"], "sent_id": [0, 0]},
         "context": {"title": ["Ed Wood", "Scott Derrickson"],
                     "sentences": [["Ed Wood was an American filmmaker."], ["Scott Derrickson is American."]]}},
        {"id": "x2", "question": "Second?", "answer": "no", "type": "comparison", "level": "easy",
         "supporting_facts": {"title": ["A"], "sent_id": [1]},
         "context": {"title": ["A"], "sentences": [["s0", "s1"]]}},
    ]


def test_hugging_face_dataset_saved_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict({"validation": datasets.Dataset.from_list(_hf_rows()),
                               "train": datasets.Dataset.from_list(_hf_rows()[1:])})
    dd.save_to_disk(str(tmp_path / "hotpot"))
    tasks = load_tasks(TaskConfig(path=str(tmp_path / "hotpot"), split="dev", keep_context=True))
    assert [t.id for t in tasks] == ["5a8b57f25542995d1e6f1371", "x2"]
    t = tasks[0]
    assert t.meta["supporting_facts"] == [["Scott Derrickson", 0], ["Ed Wood", 0]]
    assert t.meta["supporting_titles"] == ["Scott Derrickson", "Ed Wood"]
    assert t.meta["context"][1] == ["Scott Derrickson", ["Scott Derrickson is American."]]
    assert [t.id for t in load_tasks(TaskConfig(path=str(tmp_path / "hotpot"), split="train"))] == ["x2"]
    with pytest.raises(TaskFileError, match="no split 'test'"):
        load_tasks(TaskConfig(path=str(tmp_path / "hotpot"), split="test"))


def test_hugging_face_load_dataset_on_a_folder_of_data_files(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    folder = tmp_path / "hotpot_files"
    folder.mkdir()
    (folder / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _hf_rows()))
    (folder / "train.jsonl").write_text(json.dumps(_hf_rows()[1]) + "\n")
    # the same datasets.load_dataset(name, config, split=...) call a Hub id goes through
    tasks = load_tasks(TaskConfig(hf_dataset=str(folder), split="dev"))
    assert [t.answer for t in tasks] == ["yes", "no"] and tasks[0].meta["level"] == "hard"
    assert len(load_tasks(TaskConfig(path=str(folder), split="train"))) == 1


@pytest.mark.shared
@pytest.mark.skipif(not SHARED.exists(), reason="../shared is absent")
def test_react_subset_matches_the_papers_fever_runs() -> None:
    """The ReAct FEVER notebook's 500 episodes (parsed in ../shared) ran these claims, in this order."""
    data = SHARED / "data"
    runs = [json.loads(line) for line in (data / "peer" / "react_runs" / "react_fever_gpt3_trajectories_500.jsonl")
            .read_text().splitlines()]
    tasks = load_tasks(TaskConfig(path=str(data / "fever" / "paper_dev.jsonl"), format="fever", react_subset=True))
    assert [t.meta["index"] for t in tasks] == [r["question_idx"] for r in runs]
    assert [t.question for t in tasks[:50]] == [r["claim"] for r in runs[:50]]
    hotpot = load_tasks(TaskConfig(path=str(data / "hotpotqa" / "dev_v1_simplified.json"), react_subset=True))
    assert len(hotpot) == 500 and hotpot[0].meta["index"] == runs[0]["question_idx"]


def test_alfworld_games_folder_becomes_tasks(tmp_path: Path) -> None:
    for name in ("pick_and_place_simple-Book-None-Sofa-229", "look_at_obj_in_light-CD-None-DeskLamp-302"):
        trial = tmp_path / "valid_unseen" / name / "trial_1"
        trial.mkdir(parents=True)
        (trial / "game.tw-pddl").write_text("{}")
    tasks = load_tasks(TaskConfig(path=str(tmp_path / "valid_unseen"), format="alfworld", split="test", limit=1))
    assert [t.id for t in tasks] == ["look_at_obj_in_light-CD-None-DeskLamp-302/trial_1"]
    assert tasks[0].env == "alfworld" and tasks[0].meta["metric"] == "won"
    with pytest.raises(TaskFileError, match="not found"):
        load_tasks(TaskConfig(path=str(tmp_path / "nope"), format="alfworld"))


def test_a_task_folder_without_data_files_is_a_named_error(tmp_path: Path) -> None:
    """Issue #47 finding 4: datasets' EmptyDatasetError came out as a traceback."""
    with pytest.raises(TaskFileError, match=rf"^{tmp_path}: no task data there"):
        load_tasks(TaskConfig(format="custom", path=str(tmp_path)))
