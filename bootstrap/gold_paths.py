"""Gold-path episodes: a scripted teacher that reads a training question's supporting pages in the run's own
environment and answers with the gold answer.

    summary = write_gold_paths(tasks, "gold_paths/trajectories.jsonl", env_config)

Where the model's own episodes keep almost nothing (SmolLM2-135M on real HotpotQA: 0 of 48) and a teacher's
released trajectories saw another search engine (FireAct's Google snippets open no page of a local corpus),
the training questions still name their supporting pages. Each gold path searches them in order (the pages the
question names first, as a reader would), with every observation the environment's own, so the tuned model
trains on exactly what it will see; a short thought links each step to the text it read, and the last quotes
the sentence that holds the answer. A question whose answer no page shows (beyond the sentences a search
returns) gets no path rather than an answer the episode never read. Every path is judged like the model's own
episodes (correct and grounded), and the store skips tasks it holds, so a stopped run resumes.

This is a data source for the training split only: it reads ``meta.supporting_titles``, which eval never sees.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from actune.agent.render import instruction_for, question_line
from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.titles import base_title, normalize_title
from actune.judge import judge, record_verdict
from actune.store import TrajectoryStore
from actune.task_record import Task
from actune.tasks.metrics import score_prediction
from actune.text import split_sentences
from actune.trajectory import ModelRecord, Step, TaskRecord, Trajectory

__all__ = ["GOLD_PATH_MODEL", "GoldPathSummary", "gold_path", "search_order", "write_gold_paths"]

GOLD_PATH_MODEL = "gold paths (scripted from supporting pages)"
_YES_NO = {"yes", "no"}


@dataclass
class GoldPathSummary:
    total: int = 0
    written: int = 0
    already: int = 0
    """Tasks the store held already (a resumed run)."""
    skipped: Counter = field(default_factory=Counter)
    """Why a task got no path: ``no_pages``, ``page_not_found``, ``answer_not_shown``."""


def _in_question(title: str, question: str) -> int:
    """Where the title's base form first appears in the question (normalised); -1 when it does not."""
    return normalize_title(question).find(base_title(title))


def search_order(titles: Iterable[str], question: str) -> list[str]:
    """The supporting titles in the order a reader searches them: those the question names, by where it names
    them, then the others (a bridge's second page is named by the first page, not by the question)."""
    titles = list(dict.fromkeys(titles))
    named = sorted((t for t in titles if _in_question(t, question) >= 0), key=lambda t: _in_question(t, question))
    return named + [t for t in titles if _in_question(t, question) < 0]


def _search_term(title: str, question: str, env: Environment) -> str:
    """The title as the question writes it when that finds the same page ("Big Stone Gap" for "Big Stone Gap
    (film)"), so the model learns to copy the entity from the question; else the page's full title."""
    start = _in_question(title, question)
    if start < 0 or base_title(title) == normalize_title(title):
        return title
    short = " ".join(question.split())[start:start + len(base_title(title))]
    found = env.step(Action("search", short)).info.get("titles") or []
    return short if found == [title] else title


def _sentence_with(text: str, needle: str) -> str | None:
    needle = needle.lower()
    return next((s for s in split_sentences(text) if needle in s.lower()), None)


def _first_sentence(text: str) -> str:
    sents = split_sentences(text)
    return sents[0] if sents else text


def _link_thought(obs: str, next_title: str) -> str:
    """The thought between two searches: the sentence that names the next page, when the page read names it."""
    sentence = _sentence_with(obs, base_title(next_title))
    return f"{sentence} I need to search {next_title}." if sentence else f"Next, I need to search {next_title}."


def _answer_thought(observations: list[str], answer: str) -> str | None:
    """The last thought: yes/no quotes each page's first sentence (the comparison's facts); any other answer
    quotes the sentence that shows it (None when no page shows it)."""
    if answer.strip().lower() in _YES_NO:
        facts = " ".join(_first_sentence(o) for o in observations)
        return f"{facts} So the answer is {answer}."
    for obs in reversed(observations):
        sentence = _sentence_with(obs, answer.strip())
        if sentence:
            return f"{sentence} So the answer is {answer}."
    return None


def _record(task: Task, env: Environment, steps: list[Step], titles: list[str], answer: str) -> Trajectory:
    traj = Trajectory(
        task=TaskRecord(task.id, task.question, task.answer, task.env, task.split, list(task.aliases), dict(task.meta)),
        method="react", model=ModelRecord(name=GOLD_PATH_MODEL), steps=steps, prediction=answer,
        finish_reason="answered", run_id="gold-paths",
        episode_id=hashlib.sha256(f"gold\x1f{task.id}".encode()).hexdigest()[:16],
        info={"prompt": {"method": "react", "env": env.name,
                         "instruction": instruction_for("react", env.name, env.describe_actions()),
                         "question": question_line(env.name, task.question), "finish_action": env.finish_action},
              "env_info": {"titles": titles}, "parse_errors": 0})
    traj.correct, scores = score_prediction(task, answer, {})
    traj.scores = {k: float(v) for k, v in scores.items()}
    return record_verdict(traj, judge(traj, require_grounded=True))


def gold_path(task: Task, env: Environment) -> tuple[Trajectory | None, str | None]:
    """(the gold-path episode of ``task``, None) or (None, why it has none; a key of
    :attr:`GoldPathSummary.skipped`)."""
    order = search_order(task.meta.get("supporting_titles") or [], task.question)
    if not order or not task.answer:
        return None, "no_pages"
    env.reset(task)
    terms = [_search_term(t, task.question, env) for t in order]
    env.reset(task)
    steps: list[Step] = []
    observations: list[str] = []
    read: list[str] = []
    thought = f"I need to search {terms[0]}."
    for i, term in enumerate(terms, 1):
        result: StepResult = env.step(Action("search", term))
        if not result.info.get("titles"):
            return None, "page_not_found"
        read += result.info["titles"]
        steps += [Step("thought", thought, i), Step("action", f"search[{term}]", i, "search", term),
                  Step("observation", result.observation, i)]
        observations.append(result.observation)
        if i < len(terms):
            thought = _link_thought(result.observation, terms[i])
    final = _answer_thought(observations, task.answer)
    if final is None:
        return None, "answer_not_shown"
    n = len(terms) + 1
    finish = env.finish_action
    steps += [Step("thought", final, n), Step("answer", f"{finish}[{task.answer}]", n, finish, task.answer)]
    return _record(task, env, steps, list(dict.fromkeys(read)), task.answer), None


def write_gold_paths(tasks: Iterable[Task], store: str, env: EnvConfig) -> GoldPathSummary:
    """Append the gold path of every task ``store`` does not hold yet; a path the judge does not keep (a
    metric that disagrees with the gold answer's own form) is counted under ``skipped["not_kept"]``."""
    summary = GoldPathSummary()
    environment = make_env(env)
    with TrajectoryStore.open(store) as out:
        for task in tasks:
            summary.total += 1
            if out.state.has(task.id, "react", 0):
                summary.already += 1
                continue
            traj, why = gold_path(task, environment)
            if traj is None or not traj.scores.get("kept"):
                summary.skipped[why or "not_kept"] += 1
                continue
            out.append(traj)
            summary.written += 1
    return summary
