"""Planning-error distillation (PreFlect, offline) over a real store: episodes run by the real loop with a
ScriptedLLM over the fake encyclopedia, judged and appended; diagnosed by rules (exact records) and by a model
behind a fake OpenAI server (httpx.MockTransport); the catalog loads and serves a PreFlect episode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from agent.fakes import FakeEnvironment, ScriptedLLM, exact_match_scorer

from actune.agent import AgentConfig, run_episode
from actune.agent.critique import reflector_instruction
from actune.agent.planning_errors import load_catalog
from actune.bootstrap.distill_errors import (
    DIAGNOSE_INSTRUCTION,
    MERGE_INSTRUCTION,
    DistillConfig,
    DistillError,
    distill_errors,
    parse_diagnosis,
    parse_merge,
)
from actune.cli import main
from actune.judge import judge, record_verdict
from actune.llm import ClientConfig, LLMClient, ServerError
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import Trajectory

WALKMAN = Task(id="t1", question="Who makes the Walkman?", answer="Sony", meta={"supporting_titles": ["Walkman"]})
FOUNDED = Task(id="t2", question="When was the maker of the Walkman founded?", answer="1946",
               meta={"supporting_titles": ["Walkman", "Sony"]})
DANUBE = Task(id="t3", question="How long is the Danube?", answer="2,850 km", meta={"supporting_titles": ["Danube"]})
RHINE = Task(id="t4", question="How long is the Rhine?", answer="1,230 km", meta={"supporting_titles": ["Rhine"]})

# (task, attempt, replies): store order is this order, line 1 first
EPISODES = [
    (WALKMAN, 0, [" Find the maker.\nAction 1: search[Walkman]", " Sony.\nAction 2: finish[Sony]"]),  # kept
    (WALKMAN, 1, [" I know it.\nAction 1: finish[Panasonic]"]),  # answers without reading: shallow
    (WALKMAN, 2, [" Find it.\nAction 1: search[Walkmen]", " Again.\nAction 2: search[Walkman player]",
                  " Guess.\nAction 3: finish[Panasonic]"]),  # two failing searches: tool selection
    (FOUNDED, 0, [" Find the maker.\nAction 1: search[Walkman]", " It is 1979.\nAction 2: finish[1979]"]),  # partial
    (FOUNDED, 1, [" Find the maker.\nAction 1: search[Walkman]", " Sony.\nAction 2: search[Sony]",
                  " 1946.\nAction 3: finish[1946]"]),  # kept
    (DANUBE, 0, [" Read it.\nAction 1: search[Danube]", " Done.\nAction 2: finish[1,230 km]"]),  # read, misread
    (DANUBE, 1, [" Read it.\nAction 1: search[Danube]", " Done.\nAction 2: finish[2,850 km]"]),  # kept
    (DANUBE, 2, [ServerError("server down")]),  # the server's failure, not the plan's: left out
    (DANUBE, 3, [" Hmm.", " Hmm.", " Hmm."]),  # parse errors: no planning error
    (RHINE, 0, [" Guess.\nAction 1: finish[5 km]"]),  # failed only: not a mixed task
]


def make_store(path: Path) -> dict[int, dict]:
    """The store of EPISODES; returns each line's episode reference as the catalog cites it."""
    cfg = AgentConfig(method="react", regime="zero_shot", reprompt_action=False)
    with TrajectoryStore.open(path) as store:
        for task, attempt, replies in EPISODES:
            traj = asyncio.run(run_episode(task, FakeEnvironment(), ScriptedLLM(list(replies)), cfg,
                                           scorer=exact_match_scorer, attempt=attempt, run_id="r"))
            store.append(record_verdict(traj, judge(traj)))
    refs = {}
    for line, text in enumerate(path.read_text().splitlines(), 1):
        t = Trajectory.from_json(text)
        refs[line] = {"store": str(path), "line": line, "episode_id": t.episode_id, "method": "react",
                      "attempt": t.attempt}
    return refs


@pytest.fixture
def store(tmp_path) -> tuple[Path, dict[int, dict]]:
    path = tmp_path / "trajectories.jsonl"
    refs = make_store(path)
    reasons = [Trajectory.from_json(x).finish_reason for x in path.read_text().splitlines()]
    assert reasons[7:9] == ["server_error", "parse_errors"]
    return path, refs


def test_rules_catalog_is_exact_and_cites_both_episodes_of_each_task(store, tmp_path):
    path, refs = store
    out = tmp_path / "catalog.json"
    lines: list[str] = []
    summary = asyncio.run(distill_errors([path], out, DistillConfig(diagnoser="rules"), log=lines.append))
    assert lines == ["read 10 episodes of 4 tasks; 3 tasks have both kept and failed episodes: 5 contrasts to "
                     "diagnose (rules)"]
    default = {e.name: e for e in load_catalog().errors}
    icv = default["insufficient constraint verification"]
    data = json.loads(out.read_text())
    assert data["errors"] == [{"name": icv.name, "description": icv.description,
                               "failure_pattern": icv.failure_pattern, "success_pattern": icv.success_pattern}]
    example = {
        "t2": {"task_id": "t2", "question": FOUNDED.question, "failed": refs[4], "correct": refs[5],
               "analysis": "The failed episode answered '1979' after reading 'Walkman' but not 'Sony', which the "
                           "correct episode also checked before answering '1946'."},
        "t3": {"task_id": "t3", "question": DANUBE.question, "failed": refs[6], "correct": refs[7],
               "analysis": "The failed episode read the pages the correct one read ('Danube') but answered "
                           "'1,230 km' instead of '2,850 km', without checking it against the question."},
    }
    assert data["evidence"] == [{"error": icv.name, "diagnoses": 2, "share": 1.0,
                                 "examples": [example["t2"], example["t3"]]}]
    # the two one-off types fall under min_support=2, worded where they were found
    assert data["discarded"] == [
        {"name": "shallow content verification", "diagnoses": 1, "reason": "fewer than 2 diagnoses"},
        {"name": "ineffective tool selection", "diagnoses": 1, "reason": "fewer than 2 diagnoses"}]
    assert data["unparseable"] == []
    assert data["source"] == (f"actune distill-errors (rules): 5 contrasts of failed and correct episodes of 3 "
                              f"mixed-outcome tasks in {path}; share of kept diagnoses 100.0%.")
    assert data["summary"] == {
        "episodes": 10, "tasks": 4, "mixed_tasks": 3, "infra_skipped": 1, "diagnoses": 5, "planning": 4,
        "not_planning": 1, "unparseable": 0, "merge": "by type (rules)",
        "categories_kept": ["insufficient constraint verification (2)"],
        "categories_discarded": ["shallow content verification (1)", "ineffective tool selection (1)"],
        "unassigned": 0}
    assert summary.table().splitlines()[:3] == [
        "tasks read           4 (10 episodes in 1 store(s); 1 ended by server or context left out)",
        "mixed-outcome tasks  3",
        "diagnoses            5: 4 planning errors, 1 not planning, 0 unparseable"]


def test_rules_with_min_support_one_name_all_three_types_with_their_evidence(store, tmp_path):
    path, refs = store
    out = tmp_path / "catalog.json"
    asyncio.run(distill_errors([path], out, DistillConfig(diagnoser="rules", min_support=1), log=lambda _: None))
    data = json.loads(out.read_text())
    assert [e["name"] for e in data["errors"]] == ["insufficient constraint verification",
                                                   "shallow content verification", "ineffective tool selection"]
    scv, its = data["evidence"][1]["examples"][0], data["evidence"][2]["examples"][0]
    assert scv == {"task_id": "t1", "question": WALKMAN.question, "failed": refs[2], "correct": refs[1],
                   "analysis": "The failed episode answered 'Panasonic' without reading 'Walkman', which the "
                               "correct episode read before answering 'Sony'."}
    assert its == {"task_id": "t1", "question": WALKMAN.question, "failed": refs[3], "correct": refs[1],
                   "analysis": "The failed episode kept issuing calls that brought nothing ('search[Walkmen]', "
                               "'search[Walkman player]') instead of switching tool or query; the correct one had "
                               "0 such result(s)."}
    assert [e["share"] for e in data["evidence"]] == [0.5, 0.25, 0.25]
    assert data["discarded"] == []


def test_max_pairs_per_task_and_max_errors_bound_the_catalog(store, tmp_path):
    path, _ = store
    out = tmp_path / "catalog.json"
    s = asyncio.run(distill_errors([path], out, DistillConfig(diagnoser="rules", min_support=1, max_errors=1,
                                                               max_pairs_per_task=1), log=lambda _: None))
    assert (s.diagnoses, s.planning) == (3, 3)  # t1: the shallow one only; t2; t3: the misread one
    data = json.loads(out.read_text())
    assert [e["name"] for e in data["errors"]] == ["insufficient constraint verification"]
    assert data["discarded"] == [{"name": "shallow content verification", "diagnoses": 1,
                                  "reason": "beyond the 1 most supported"}]


def test_distilled_catalog_loads_and_serves_a_preflect_episode(store, tmp_path):
    path, _ = store
    out = tmp_path / "catalog.json"
    asyncio.run(distill_errors([path], out, DistillConfig(diagnoser="rules", min_support=1), log=lambda _: None))
    catalog = load_catalog(out)
    assert [e.name for e in catalog.errors] == ["insufficient constraint verification",
                                                "shallow content verification", "ineffective tool selection"]
    assert catalog.source.startswith("actune distill-errors (rules): 5 contrasts")
    # the agent config key PreFlect reads, and the reflector's prompt and the critique step it writes
    cfg = AgentConfig(method="preflect", preflect_catalog=out, regime="zero_shot")
    fail = 'It never reads the page.", "verdict": "FAIL", "errors": ["shallow content verification"]}'
    llm = ScriptedLLM([" 1. finish[Sony].", fail, " 1. search[Walkman]. 2. finish.",
                       'ok.", "verdict": "PASS", "errors": []}',  # the revision is checked again
                       " Find the maker.\nAction 1: search[Walkman]", " Sony.\nAction 2: finish[Sony]"])
    traj = asyncio.run(run_episode(WALKMAN, FakeEnvironment(), llm, cfg, scorer=exact_match_scorer))
    assert llm.calls[1].prompt.startswith(reflector_instruction(catalog))
    assert "Catalog of planning errors:\n" + catalog.render() in llm.calls[1].prompt
    scv = catalog.errors[1]
    assert traj.steps[1].text == (f"FAIL (shallow content verification). It never reads the page. Shallow content "
                                  f"verification. {scv.description} Avoid: {scv.failure_pattern} Instead: "
                                  f"{scv.success_pattern}")
    assert traj.correct


# --- the model's path, against a fake OpenAI-compatible server ------------------------------------------------

GOOD = {"planning_error": True, "name": "Answer Without Reading", "analysis": "It answered from memory.",
        "description": "The plan answers before reading the page that states the fact.",
        "failure_pattern": "Finish at once from memory.", "success_pattern": "Read the page, then finish."}
MERGED = {"categories": [{"name": "unread source", "description": "Answers before reading the source.",
                          "failure_pattern": "Finish from memory or a title.",
                          "success_pattern": "Open and read the page first.", "members": [1, 2, 9]},
                         {"name": "lonely", "description": "d", "failure_pattern": "f", "success_pattern": "s",
                          "members": [3]}],
          "discarded": []}


class FakeOpenAIServer:
    """A fake vLLM: /chat/completions answers by the request's content, and records each request."""

    def __init__(self, merge_replies: list[str]):
        self.merge_replies = list(merge_replies)
        self.requests: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        assert request.url.path == "/v1/chat/completions" and body["model"] == "judge-model"
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        retry = len(body["messages"]) == 4
        if system == MERGE_INSTRUCTION:
            text = self.merge_replies.pop(0)
        else:
            assert system == DIAGNOSE_INSTRUCTION
            failed = user.split("Failed trajectory", 1)[1]
            if "Panasonic" in failed and "Walkmen" not in failed:  # t1, the shallow one: readable at once
                text = "Here you go: " + json.dumps(GOOD) + " hope it helps"
            elif "Walkmen" in failed:  # t1, the failing searches: unreadable, then readable when asked again
                text = json.dumps({**GOOD, "name": "answer without reading"}) if retry else "I think it is bad."
            elif "1979" in failed:  # t2: not a planning error
                text = '{"planning_error": false, "analysis": "Bad luck."}'
            else:  # t3's two: unreadable twice
                text = '{"planning_error": "maybe"' if retry else "```python\nimport os\n```"
        return httpx.Response(200, json={"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": 10, "completion_tokens": 5}})


def run_llm(paths, out, server: FakeOpenAIServer, **kw):
    async def go():
        client = LLMClient(ClientConfig(endpoints=["http://fake/v1"], model="judge-model", max_retries=0),
                           transport=httpx.MockTransport(server))
        async with client as llm:
            return await distill_errors(paths, out, DistillConfig(diagnoser="llm", **kw), llm=llm,
                                        model="judge-model", log=lines.append)
    lines: list[str] = []
    return asyncio.run(go()), lines


def test_llm_path_retries_counts_unparseable_and_merges(store, tmp_path):
    path, refs = store
    out = tmp_path / "catalog.json"
    # the aggregator's first answer is unreadable; asked again, it groups (9: no such diagnosis, ignored)
    server = FakeOpenAIServer(["categories: unread source", json.dumps(MERGED)])
    summary, lines = run_llm([path], out, server)
    assert lines[0].startswith("read 10 episodes of 4 tasks; 3 tasks have both")
    assert lines[-1] == "merging 2 planning diagnoses" and "diagnosed 5/5" in lines
    # 5 diagnoses + 3 retries (one for t1's searches, one for each of t3's) + 2 merge turns
    assert len(server.requests) == 10
    retry = next(r for r in server.requests if len(r["messages"]) == 4 and r["messages"][0]["content"] ==
                 MERGE_INSTRUCTION)
    assert retry["messages"][2] == {"role": "assistant", "content": "categories: unread source"}
    assert retry["messages"][3]["content"].startswith("Your previous answer could not be read (no JSON object")
    data = json.loads(out.read_text())
    assert data["errors"] == [{"name": "unread source", "description": "Answers before reading the source.",
                               "failure_pattern": "Finish from memory or a title.",
                               "success_pattern": "Open and read the page first."}]
    assert data["evidence"] == [{"error": "unread source", "diagnoses": 2, "share": 1.0, "examples": [
        {"task_id": "t1", "question": WALKMAN.question, "failed": refs[2], "correct": refs[1],
         "analysis": "It answered from memory."},
        {"task_id": "t1", "question": WALKMAN.question, "failed": refs[3], "correct": refs[1],
         "analysis": "It answered from memory."}]}]
    assert data["discarded"] == []  # "lonely" named diagnosis 3, which does not exist: no members, not a category
    assert [(u["task_id"], u["failed"], u["error"], u["raw"]) for u in data["unparseable"]] == [
        ("t3", refs[6], "planning_error is 'maybe', not true or false", '{"planning_error": "maybe"'),
        ("t3", refs[9], "planning_error is 'maybe', not true or false", '{"planning_error": "maybe"')]
    assert data["source"].startswith("actune distill-errors (llm, judge-model): 5 contrasts")
    assert (summary.diagnoses, summary.planning, summary.not_planning, summary.unparseable) == (5, 2, 1, 2)
    assert summary.merge == "llm aggregator" and summary.unassigned == 0
    assert load_catalog(out).errors[0].name == "unread source"


def test_unreadable_merge_twice_falls_back_to_the_diagnoses_names(store, tmp_path):
    path, _ = store
    out = tmp_path / "catalog.json"
    summary, _ = run_llm([path], out, FakeOpenAIServer(["no", '{"categories": "x"}']))
    assert summary.merge == ("by diagnosis name (the aggregator's answer was unreadable twice: no \"categories\" "
                             "list)")
    data = json.loads(out.read_text())
    assert data["errors"] == [{"name": "answer without reading", **{k: GOOD[k] for k in
                               ("description", "failure_pattern", "success_pattern")}}]
    assert data["evidence"][0]["diagnoses"] == 2


def test_parsers_read_only_json_and_never_raise():
    assert parse_diagnosis("nothing") == (None, False, "no JSON object in the answer")
    assert parse_diagnosis('{"planning_error": true, "analysis": "x"}') == (None, True,
                                                                           "a planning error without a name")
    texts, flag, why = parse_diagnosis('{"Planning Error": "yes", "name": "  Wrong   Tool ", "analysis": "a"}')
    assert (texts["name"], flag, why) == ("wrong tool", True, None)
    cats, dropped, why = parse_merge('{"categories": [{"name": "A", "description": "d", "failure_pattern": "f", '
                                     '"success_pattern": "s", "members": [1, "2", 2, true, 7]}, {"name": "B", '
                                     '"members": [3]}], "discarded": [3, 1]}', 3)
    assert [(c.name, c.members) for c in cats] == [("a", [0, 1])] and dropped == [2] and why is None
    assert parse_merge("[1, 2]", 3) == ([], [], "no JSON object in the answer")


def test_bad_input_names_file_and_line(tmp_path, store):
    path, _ = store
    bad = tmp_path / "bad.jsonl"
    lines = path.read_text().splitlines()
    rec = json.loads(lines[1])
    del rec["info"]["verdict"]
    bad.write_text(lines[0] + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(DistillError, match=rf"^{bad}:2: record has no judge verdict"):
        asyncio.run(distill_errors([bad], tmp_path / "c.json", DistillConfig(diagnoser="rules")))
    bad.write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    with pytest.raises(DistillError, match=rf"^{bad}:2: invalid JSON"):
        asyncio.run(distill_errors([bad], tmp_path / "c.json", DistillConfig(diagnoser="rules")))
    with pytest.raises(DistillError, match="missing.jsonl: trajectory store not found"):
        asyncio.run(distill_errors([tmp_path / "missing.jsonl"], tmp_path / "c.json", DistillConfig(diagnoser="rules")))
    assert not (tmp_path / "c.json").exists()


def test_cli_rules_writes_the_catalog_and_prints_the_summary(store, tmp_path, capsys):
    path, _ = store
    out = tmp_path / "sub" / "catalog.json"
    assert main(["distill-errors", str(path), "--out", str(out), "--diagnoser", "rules", "--min-support", "1"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("read 10 episodes")
    assert printed[-3:] == [
        "categories kept      3: insufficient constraint verification (2), shallow content verification (1), "
        "ineffective tool selection (1)", "categories discarded 0: none", f"catalog              {out}"]
    assert len(load_catalog(out).errors) == 3
    # the model's path needs a server; a store with no mixed task writes nothing
    assert main(["distill-errors", str(path), "--out", str(out)]) == 2
    assert "--diagnoser llm needs --endpoint URL and --model NAME" in capsys.readouterr().err
    only_failed = tmp_path / "failed.jsonl"
    only_failed.write_text(path.read_text().splitlines()[-1] + "\n")
    assert main(["distill-errors", str(only_failed), "--out", str(tmp_path / "x.json"), "--diagnoser", "rules"]) == 3
    assert "no task has both a kept and a failed episode" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_cli_never_writes_over_a_store_or_a_file_it_did_not_write(store, tmp_path, capsys):
    path, _ = store
    before = path.read_bytes()
    rules = ["--diagnoser", "rules", "--min-support", "1"]
    assert main(["distill-errors", str(path), "--out", str(path), *rules]) == 1
    assert "the output is the input" in capsys.readouterr().err
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')
    assert main(["distill-errors", str(path), "--out", str(notes), *rules]) == 1
    assert "exists and is not this command's earlier output" in capsys.readouterr().err
    assert path.read_bytes() == before and notes.read_text() == '{"mine": true}'
    # its own earlier catalog is replaced; a file it did not write, only when told to
    out = tmp_path / "catalog.json"
    assert main(["distill-errors", str(path), "--out", str(out), *rules]) == 0
    assert main(["distill-errors", str(path), "--out", str(out), *rules]) == 0
    assert main(["distill-errors", str(path), "--out", str(notes), "--overwrite", *rules]) == 0
    assert len(load_catalog(notes).errors) == 3


@pytest.mark.server
def test_the_llm_diagnoser_on_the_real_server_counts_what_it_cannot_read(store, tmp_path, vllm_server, capsys):
    """The default diagnoser against the real server and model (the 135M model rarely writes the JSON asked
    for): every contrast ends as a planning error, not one, or an unparseable diagnosis, counted in the printed
    summary; with no planning error named the command says so, writes no catalog and exits 3 (nothing done)."""
    path, _ = store
    out = tmp_path / "catalog.json"
    code = main(["distill-errors", str(path), "--out", str(out), "--endpoint", vllm_server.base_url,
                 "--model", vllm_server.model, "--min-support", "1"])
    printed, err = capsys.readouterr()
    assert printed.splitlines()[0].startswith("read 10 episodes of 4 tasks; 3 tasks have both")
    if code == 3:  # nothing named: the counts are in the one-line reason
        assert not out.exists()
        assert err.startswith("actune distill-errors: none of the 5 diagnoses named a planning error (")
        assert "unparseable): no catalog written" in err
        return
    assert code == 0, err
    data = json.loads(out.read_text())
    s = data["summary"]
    assert s["diagnoses"] == 5 and s["planning"] + s["not_planning"] + s["unparseable"] == 5
    assert len(data["unparseable"]) == s["unparseable"] and all(u["error"] for u in data["unparseable"])


def test_a_right_answer_whose_evidence_was_never_shown_is_described_so() -> None:
    from actune.bootstrap.distill_errors import EpisodeRef, StoredEpisode, _outcome
    from actune.judge import Verdict
    from actune.records.trajectory import TaskRecord, Trajectory

    traj = Trajectory(task=TaskRecord("t", "q?", "Sony"), method="react", prediction="Sony", correct=True,
                      finish_reason="answered")
    verdict = Verdict(correct=True, grounded=False, kept=False, missing_evidence=["Sony makes the Walkman."],
                      grounding_level="evidence", pages_read=True)
    ep = StoredEpisode(traj, verdict, EpisodeRef("s.jsonl", 1, "e1", "react", 0))
    assert _outcome(ep) == "right answer 'Sony' without seeing 'Sony makes the Walkman.'"
