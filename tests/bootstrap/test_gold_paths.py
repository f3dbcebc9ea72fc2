"""Gold paths: a training question's supporting pages searched in the run's corpus, the answer sentence quoted."""

from __future__ import annotations

import json
from pathlib import Path

from actune.bootstrap.gold_paths import (
    GOLD_PATH_MODEL,
    as_reflections,
    gold_path,
    question_mention,
    search_order,
    searches_seen,
    write_gold_paths,
)
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.records.task_record import Task
from actune.records.trajectory import Step, read_trajectories

PAGES = {
    "Big Stone Gap (film)": ["Big Stone Gap is a 2014 American romantic comedy film.",
                             "It was directed by Adriana Trigiani."],
    "Adriana Trigiani": ["Adriana Trigiani is an American novelist.", "She lives in Greenwich Village."],
    "Linux Format": ["Linux Format is a magazine.", "It is commonly abbreviated to LXF."],
    "Qvwm": ["Qvwm is a window manager."],
}


def _env(tmp_path: Path) -> EnvConfig:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in PAGES.items()))
    return EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "idx"))


def _task(i: int, question: str, answer: str, titles: list[str]) -> Task:
    return Task(id=f"t{i}", question=question, answer=answer, split="train",
                meta={"supporting_titles": titles, "kind": "bridge"})


BRIDGE = _task(1, "The director of the film Big Stone Gap lives in what New York neighbourhood?",
               "Greenwich Village", ["Adriana Trigiani", "Big Stone Gap (film)"])


def test_the_pages_the_question_names_come_first_in_the_order_it_names_them() -> None:
    assert search_order(["Adriana Trigiani", "Big Stone Gap (film)"], BRIDGE.question) == \
        ["Big Stone Gap (film)", "Adriana Trigiani"]
    assert search_order(["B", "Qvwm", "Linux Format", "Qvwm"], "Did Linux Format review Qvwm?") == \
        ["Linux Format", "Qvwm", "B"]


def test_a_bridge_searches_as_the_question_writes_it_and_quotes_what_it_read(tmp_path: Path) -> None:
    traj, why = gold_path(BRIDGE, make_env(_env(tmp_path)))
    assert why is None
    assert [(s.type, s.text) for s in traj.steps] == [
        ("thought", "I need to search Big Stone Gap."),
        ("action", "search[Big Stone Gap]"),
        ("observation", "Big Stone Gap is a 2014 American romantic comedy film. It was directed by Adriana Trigiani."),
        ("thought", "It was directed by Adriana Trigiani. I need to search Adriana Trigiani."),
        ("action", "search[Adriana Trigiani]"),
        ("observation", "Adriana Trigiani is an American novelist. She lives in Greenwich Village."),
        ("thought", "She lives in Greenwich Village. So the answer is Greenwich Village."),
        ("answer", "finish[Greenwich Village]")]
    assert [s.iteration for s in traj.steps] == [1, 1, 1, 2, 2, 2, 3, 3]
    assert traj.info["env_info"]["titles"] == ["Big Stone Gap (film)", "Adriana Trigiani"]
    assert traj.info["verdict"]["grounded"] and traj.info["verdict"]["kept"] and traj.correct
    assert (traj.model.name, traj.task.id, traj.prediction) == (GOLD_PATH_MODEL, "t1", "Greenwich Village")


def test_yes_no_quotes_each_pages_first_sentence(tmp_path: Path) -> None:
    task = _task(2, "Are Qvwm and Linux Format both software?", "no", ["Qvwm", "Linux Format"])
    traj, _ = gold_path(task, make_env(_env(tmp_path)))
    assert traj.steps[-2].text == "Qvwm is a window manager. Linux Format is a magazine. So the answer is no."
    assert traj.steps[3].text == "Next, I need to search Linux Format."


def test_no_path_when_no_page_shows_the_answer_or_a_page_is_missing(tmp_path: Path) -> None:
    env = make_env(_env(tmp_path))
    assert gold_path(_task(3, "Who founded Qvwm?", "Kenji Sato", ["Qvwm"]), env) == (None, "answer_not_shown")
    assert gold_path(_task(4, "Where is Atlantis?", "sea", ["Atlantis"]), env) == (None, "page_not_found")
    assert gold_path(_task(5, "Who?", "x", []), env) == (None, "no_pages")


def test_write_gold_paths_counts_and_resumes_without_duplicates(tmp_path: Path) -> None:
    env, store = _env(tmp_path), tmp_path / "gold" / "trajectories.jsonl"
    tasks = [BRIDGE, _task(3, "Who founded Qvwm?", "Kenji Sato", ["Qvwm"]),
             _task(6, "What is Linux Format abbreviated to?", "LXF", ["Linux Format"])]
    first = write_gold_paths(tasks, str(store), env)
    assert (first.total, first.written, first.already, dict(first.skipped)) == (3, 2, 0, {"answer_not_shown": 1})
    again = write_gold_paths(tasks, str(store), env)
    assert (again.written, again.already) == (0, 2)
    assert [t.task.id for t in read_trajectories(store)] == ["t1", "t6"]


FEVER_PAGES = {
    "Glee.com": ["GLEE.com was a social networking site.", "The site was launched in February 2007 by Community "
                 "Connect Inc."],
    "Bea Arthur": ["Beatrice Arthur was an American actress and comedian.", "She was born in Brooklyn."],
    "Dilwale Dulhania Le Jayenge": ["Dilwale Dulhania Le Jayenge (transl.", "The film was shot in London, "
                                    "Switzerland and Punjab in many different locations."],
}


def _fever_env(tmp_path: Path) -> EnvConfig:
    corpus = tmp_path / "fever.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in FEVER_PAGES.items()))
    return EnvConfig(name="fever", corpus=str(corpus), index_dir=str(tmp_path / "fidx"))


def _claim(i: int, claim: str, label: str, sets: list[list[str]]) -> Task:
    return Task(id=f"c{i}", question=claim, answer=label, env="fever", split="train",
                meta={"label": label, "evidence_sets": sets, "supporting_titles": sorted({t for s in sets for t in s})})


def test_a_fever_verdict_quotes_the_sentence_closest_to_the_claim(tmp_path: Path) -> None:
    env = make_env(_fever_env(tmp_path))
    traj, why = gold_path(_claim(1, "Glee.com was first launched in the spring of 2002.", "REFUTES", [["Glee.com"]]),
                          env)
    assert why is None and [(s.type, s.text) for s in traj.steps][-2:] == [
        ("thought", "The site was launched in February 2007 by Community Connect Inc. So the claim is refuted."),
        ("answer", "finish[REFUTES]")]
    assert traj.info["verdict"]["kept"] and traj.info["verdict"]["grounded"] and traj.correct
    traj, _ = gold_path(_claim(2, "Dilwale Dulhania Le Jayenge was shot in different locations.", "SUPPORTS",
                               [["Dilwale Dulhania Le Jayenge"]]), env)
    # the fragment cut at "transl." shares the title's words but says nothing: a whole sentence is quoted
    assert traj.steps[-2].text.startswith("The film was shot in London") and traj.steps[-1].text == "finish[SUPPORTS]"


def test_a_claim_without_evidence_reads_the_page_it_is_about_and_says_no_more(tmp_path: Path) -> None:
    env = make_env(_fever_env(tmp_path))
    traj, why = gold_path(_claim(3, "Bea Arthur was married to Bernice Frankel.", "NOT ENOUGH INFO", []), env)
    assert why is None
    assert [(s.type, s.text) for s in traj.steps] == [
        ("thought", "I need to search Bea Arthur."), ("action", "search[Bea Arthur]"),
        ("observation", "Beatrice Arthur was an American actress and comedian. She was born in Brooklyn."),
        ("thought", "Beatrice Arthur was an American actress and comedian. It does not say whether Bea Arthur was "
                    "married to Bernice Frankel. So there is not enough information."),
        ("answer", "finish[NOT ENOUGH INFO]")]
    assert traj.info["verdict"]["kept"] and traj.correct
    assert gold_path(_claim(4, "Atlantis sank in a day.", "NOT ENOUGH INFO", []), env) == (None, "page_not_found")


def test_with_misses_a_path_misses_the_questions_form_then_picks_the_page_from_the_list(tmp_path: Path) -> None:
    corpus = tmp_path / "dancers.jsonl"
    pages = {"Erika Jayne": ["Erika Jayne (born 1971) is an American singer."],
             "Marco Da Silva (dancer)": ["Marco Da Silva (born 1977) is a dancer and choreographer."],
             "Marco da Silva (French footballer)": ["Marco da Silva (born 1992) is a French footballer."]}
    corpus.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in pages.items()))
    env = make_env(EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "didx")))
    task = _task(7, "Who was born first, Erika Jayne or Marco Da Silva?", "Erika Jayne",
                 ["Erika Jayne", "Marco Da Silva (dancer)"])
    plain, _ = gold_path(task, env)
    assert [s.text for s in plain.steps if s.type == "action"] == ["search[Erika Jayne]",
                                                                    "search[Marco Da Silva (dancer)]"]
    traj, why = gold_path(task, env, misses=True)
    assert why is None
    steps = [(s.type, s.text, s.iteration) for s in traj.steps]
    assert steps[3:9] == [
        ("thought", "Next, I need to search Marco Da Silva.", 2), ("action", "search[Marco Da Silva]", 2),
        ("observation", steps[5][1], 2),
        ("thought", "Marco Da Silva (dancer) is among the similar pages. I need to search Marco Da Silva (dancer).", 3),
        ("action", "search[Marco Da Silva (dancer)]", 3),
        ("observation", "Marco Da Silva (born 1977) is a dancer and choreographer.", 3)]
    assert steps[5][1].startswith("Could not find Marco Da Silva. Similar: [") and "Marco Da Silva (dancer)" in steps[5][1]
    assert steps[-1] == ("answer", "finish[Erika Jayne]", 4)
    assert traj.info["verdict"]["kept"] and traj.info["env_info"]["titles"] == ["Erika Jayne", "Marco Da Silva (dancer)"]


# --- reading: evidence past the first five sentences, both facts of a comparison (issue #48) -----------------

LONG = {"Mount Tabor Park": ["Mount Tabor Park is a park in Portland.", "It has a volcano.", "It has trees.",
                             "It has paths.", "It has a reservoir.", "It has a statue.",
                             "The park was designed by John Charles Olmsted in 1903."],
        "Laurelhurst Park": ["Laurelhurst Park is a park in Portland, opened in 1914."]}


def _long_env(tmp_path: Path) -> EnvConfig:
    corpus = tmp_path / "long.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in LONG.items()))
    return EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "idx-long"))


DESIGNER = Task(id="t9", question="Who designed Mount Tabor Park?", answer="John Charles Olmsted", split="train",
                meta={"supporting_titles": ["Mount Tabor Park"], "kind": "bridge",
                      "evidence": [["The park was designed by John Charles Olmsted in 1903."]]})
"""A bridge whose evidence is the page's seventh sentence: past the five a search shows."""


def test_evidence_past_the_first_five_sentences_is_looked_up_with_a_word_of_the_question(tmp_path: Path) -> None:
    traj, why = gold_path(DESIGNER, make_env(_long_env(tmp_path)))
    assert why is None
    assert [(s.type, s.text) for s in traj.steps][3:] == [
        ("thought", "The page does not say it yet. I need to look up designed."),
        ("action", "lookup[designed]"),
        ("observation", "(Result 1 / 1) The park was designed by John Charles Olmsted in 1903."),
        ("thought", "The park was designed by John Charles Olmsted in 1903. So the answer is John Charles Olmsted."),
        ("answer", "finish[John Charles Olmsted]")]
    v = traj.info["verdict"]
    assert (v["grounding_level"], v["grounded"], v["kept"]) == ("evidence", True, True)


def test_a_comparison_quotes_both_facts_and_unshowable_evidence_is_not_kept(tmp_path: Path) -> None:
    evidence = ["It has a reservoir.", "Laurelhurst Park is a park in Portland, opened in 1914."]
    task = Task(id="t10", question="Which is older, Mount Tabor Park or Laurelhurst Park?", answer="Mount Tabor Park",
                split="train", meta={"supporting_titles": ["Mount Tabor Park", "Laurelhurst Park"],
                                     "kind": "comparison", "evidence": [evidence]})
    traj, _ = gold_path(task, make_env(_long_env(tmp_path)))
    assert traj.steps[-2].text == ("It has a reservoir. Laurelhurst Park is a park in Portland, opened in 1914. "
                                   "So the answer is Mount Tabor Park.")
    assert traj.info["verdict"]["kept"]
    # a sentence no search shows and no question word finds: the path is judged not grounded, so never trained on
    hidden = Task(id="t11", question="Which is older, Mount Tabor Park or Laurelhurst Park?", answer="Mount Tabor Park",
                  split="train", meta={"supporting_titles": ["Mount Tabor Park", "Laurelhurst Park"],
                                       "kind": "comparison", "evidence": [["It has a statue."]]})
    traj, _ = gold_path(hidden, make_env(_long_env(tmp_path)))
    assert traj.info["verdict"]["missing_evidence"] == ["It has a statue."] and not traj.info["verdict"]["kept"]


def test_with_lookups_a_bridge_looks_up_a_question_word_and_answers_from_the_sentence_it_shows(tmp_path: Path) -> None:
    traj, why = gold_path(BRIDGE, make_env(_env(tmp_path)), lookups=True)
    assert why is None
    assert [(s.type, s.text) for s in traj.steps][5:] == [
        ("observation", "Adriana Trigiani is an American novelist. She lives in Greenwich Village."),
        ("thought", "I need to look up lives."),
        ("action", "lookup[lives]"),
        ("observation", "(Result 1 / 1) She lives in Greenwich Village."),
        ("thought", "She lives in Greenwich Village. So the answer is Greenwich Village."),
        ("answer", "finish[Greenwich Village]")]
    assert [s.iteration for s in traj.steps][6:] == [3, 3, 3, 4, 4]
    assert traj.info["verdict"]["kept"]
    # a comparison keeps its two facts and no lookup
    yes_no = _task(2, "Are Linux Format and Qvwm both about Linux?", "no", ["Linux Format", "Qvwm"])
    traj, _ = gold_path(yes_no, make_env(_env(tmp_path)), lookups=True)
    assert "lookup" not in [s.action_name for s in traj.steps]
    # evidence past the first five sentences is looked up once, not twice
    traj, _ = gold_path(DESIGNER, make_env(_long_env(tmp_path)), lookups=True)
    assert [s.action_arg for s in traj.steps if s.type == "action"] == ["Mount Tabor Park", "designed"]
    assert traj.steps[-2].text == DESIGNER.meta["evidence"][0][0] + " So the answer is John Charles Olmsted."


def test_a_reflact_gold_path_states_where_it_stands_against_the_goal_at_every_step(tmp_path: Path) -> None:
    env = make_env(_env(tmp_path))
    react, _ = gold_path(BRIDGE, env, lookups=True)
    traj = as_reflections(react, env, "reflact")
    assert [(s.type, s.text) for s in traj.steps if s.type in ("reflection", "answer")] == [
        ("reflection", "Current state: nothing is known yet. Latest discovery: none. Goal relation: the answer is not "
                       "found yet; I need to search Big Stone Gap."),
        ("reflection", "Current state: I have read Big Stone Gap. Latest discovery: It was directed by Adriana "
                       "Trigiani. Goal relation: the answer is not found yet; I need to search Adriana Trigiani."),
        ("reflection", "Current state: I have read Big Stone Gap and Adriana Trigiani. Latest discovery: the page of "
                       "Adriana Trigiani. Goal relation: the answer is not found yet; I need to look up lives."),
        ("reflection", "Current state: I have read Big Stone Gap and Adriana Trigiani. Latest discovery: She lives in "
                       "Greenwich Village. Goal relation: the goal is reached; the answer is Greenwich Village."),
        ("answer", "FINAL ANSWER: Greenwich Village")]
    assert [s.text for s in traj.steps if s.type in ("action", "observation")] == \
        [s.text for s in react.steps if s.type in ("action", "observation")]
    v = traj.info["verdict"]
    assert (traj.method, traj.info["prompt"]["method"], v["kept"], v["reflection_problems"]) == \
        ("reflact", "reflact", True, [])
    assert "Reflection" in traj.info["prompt"]["instruction"] and traj.episode_id != react.episode_id
    # the store holds each form once, resumed without duplicates
    tasks = [BRIDGE]
    for _ in range(2):
        write_gold_paths(tasks, str(tmp_path / "r.jsonl"), _env(tmp_path), method="reflact")
    assert [t.method for t in read_trajectories(tmp_path / "r.jsonl")] == ["reflact"]


def test_with_mentions_a_page_the_question_names_in_part_is_missed_then_picked_from_the_list(tmp_path: Path) -> None:
    corpus = tmp_path / "nba.jsonl"
    pages = {"Ricky Rubio": ["Ricky Rubio (born 1990) is a Spanish basketball player.",
                             "He played for the Minnesota Timberwolves."],
             "2011–12 Minnesota Timberwolves season": ["The 2011–12 Minnesota Timberwolves season was the team's "
                                                       "23rd season.", "Ricky Rubio was a rookie that season."]}
    corpus.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in pages.items()))
    env = make_env(EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "nidx")))
    question = "Which Spanish signee was a rookie when he played for the Timberwolves?"
    assert question_mention("2011–12 Minnesota Timberwolves season", question) == "Timberwolves"
    assert question_mention("Ricky Rubio", question) is None  # no run of its words in the question
    assert question_mention("Walden Ridge", "Which ridge is it?") is None  # a generic word is no mention
    task = _task(8, question, "Ricky Rubio", ["2011–12 Minnesota Timberwolves season", "Ricky Rubio"])
    plain, _ = gold_path(task, env, misses=True)
    assert [s.action_arg for s in plain.steps if s.type == "action"][0] == "2011–12 Minnesota Timberwolves season"
    traj, why = gold_path(task, env, misses=True, mentions=True)
    assert why is None
    steps = [(s.type, s.text) for s in traj.steps]
    assert steps[:4] == [("thought", "I need to search Timberwolves."), ("action", "search[Timberwolves]"),
                         ("observation", steps[2][1]),
                         ("thought", "2011–12 Minnesota Timberwolves season is among the similar pages. I need to "
                                     "search 2011–12 Minnesota Timberwolves season.")]
    assert steps[2][1].startswith("Could not find Timberwolves. Similar: [") and traj.info["verdict"]["kept"]


def test_searches_seen_asks_every_search_to_name_what_the_question_or_an_earlier_observation_showed() -> None:
    steps = [Step("action", "search[Big Stone Gap (film)]", 1, "search", "Big Stone Gap (film)"),
             Step("observation", "It was directed by Adriana Trigiani.", 1),
             Step("action", "search[adriana  TRIGIANI]", 2, "search", "adriana  TRIGIANI")]
    assert searches_seen("Who directed Big Stone Gap?", steps)  # a disambiguation and the case are not asked for
    assert not searches_seen("Who directed it?", steps)  # the first search names what nothing showed
    assert not searches_seen("Who directed Big Stone Gap?", [steps[0], steps[2], steps[1]])  # shown only after
    part = Step("action", "search[Stone]", 1, "search", "Stone")
    assert searches_seen("Who directed Big Stone Gap?", [part])
    assert not searches_seen("Who directed Big Stonehenge Gap?", [part])  # whole words only


def test_with_seen_names_a_path_reads_its_pages_in_the_order_that_shows_each_name_or_is_left_out(
        tmp_path: Path) -> None:
    corpus = tmp_path / "nba.jsonl"
    pages = {"Ricky Rubio": ["Ricky Rubio (born 1990) is a Spanish basketball player."],
             "2011–12 Minnesota Timberwolves season": ["The 2011–12 Minnesota Timberwolves season was the team's "
                                                       "23rd season.", "Ricky Rubio was a rookie that season."]}
    corpus.write_text("".join(json.dumps({"title": t, "sentences": s}) + "\n" for t, s in pages.items()))
    env = make_env(EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "nidx")))
    # neither page is named whole, so the given order stands: the answer's page first, a name recalled, not read
    task = _task(9, "Which Spanish signee was a rookie when he played for the Timberwolves?", "Ricky Rubio",
                 ["Ricky Rubio", "2011–12 Minnesota Timberwolves season"])
    guess, _ = gold_path(task, env, misses=True, mentions=True)
    assert [s.text for s in guess.steps if s.type == "action"][0] == "search[Ricky Rubio]"
    assert not searches_seen(task.question, guess.steps)
    traj, why = gold_path(task, env, misses=True, mentions=True, seen_names=True)
    assert why is None and searches_seen(task.question, traj.steps) and traj.info["verdict"]["kept"]
    assert [s.text for s in traj.steps if s.type == "action"] == [
        "search[Timberwolves]", "search[2011–12 Minnesota Timberwolves season]", "search[Ricky Rubio]"]
    assert traj.steps[6].text == "Ricky Rubio was a rookie that season. I need to search Ricky Rubio."
    # no order reaches a page the question does not name: left out rather than taught as a guess
    blind = _task(10, "Where does the director of the 2014 romantic comedy live?", "Greenwich Village",
                  ["Big Stone Gap (film)", "Adriana Trigiani"])
    assert gold_path(blind, make_env(_env(tmp_path)), seen_names=False)[1] is None
    assert gold_path(blind, make_env(_env(tmp_path)), seen_names=True) == (None, "unseen_name")
    summary = write_gold_paths([BRIDGE, blind], str(tmp_path / "seen.jsonl"), _env(tmp_path), seen_names=True)
    assert (summary.written, dict(summary.skipped)) == (1, {"unseen_name": 1})


def test_with_cues_the_last_thought_starts_with_the_question_word_that_singles_out_the_answers_sentence(
        tmp_path: Path) -> None:
    env = make_env(_env(tmp_path))
    traj, why = gold_path(BRIDGE, env, cues=True)
    assert why is None and traj.info["verdict"]["kept"]
    # "lives" is in the answer's sentence and in no other sentence of that page ("director" is in none of them)
    assert traj.steps[-2].text == "lives: She lives in Greenwich Village. So the answer is Greenwich Village."
    plain, _ = gold_path(BRIDGE, env)
    assert [s.text for s in plain.steps[:-2]] == [s.text for s in traj.steps[:-2]]
    # a question word another sentence of the page holds is no cue: "novelist" would be, were it not in both
    two = _task(12, "Which novelist lives in Greenwich Village?", "Adriana Trigiani", ["Adriana Trigiani"])
    corpus = tmp_path / "two.jsonl"
    corpus.write_text(json.dumps({"title": "Adriana Trigiani", "sentences": [
        "Adriana Trigiani is an American novelist.", "The novelist lives in Greenwich Village."]}) + "\n")
    both = make_env(EnvConfig(name="wiki", corpus=str(corpus), index_dir=str(tmp_path / "tidx")))
    assert gold_path(two, both, cues=True)[0].steps[-2].text == (
        "Adriana Trigiani is an American novelist. So the answer is Adriana Trigiani.")
    # no question word singles the sentence out: the thought is the plain one
    task = _task(11, "What is LXF the abbreviation of?", "Linux Format", ["Linux Format"])
    assert gold_path(task, env, cues=True)[0].steps[-2].text == gold_path(task, env)[0].steps[-2].text
