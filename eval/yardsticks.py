"""Yardsticks: the best content-free policies, run on the same test tasks as the models and judged alike.

    results = run_yardsticks(tasks, train_tasks, env_config)      # one ModelResult per policy

A tuned model's gain means something only beside what needs no reading. Each policy (``constant``,
``kind-majority``, ``question-only``, ``question-only+search``; with a label set such as FEVER's, one constant a
label and a label guessed from the question's words, each also ``+search``) decides its answer from the question
text and the training questions and answers alone, never from a page, and every episode is scored and judged
(:func:`actune.judge.judge`) like a model's, so a yardstick's ``correct_grounded`` means what a model's does.

The rules in full: docs/modules.md, actune.eval.yardsticks.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from actune.config import ConfigError
from actune.envs.base import Action, Environment
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.eval.report import ModelResult
from actune.judge import judge, record_verdict
from actune.records.task_record import Task
from actune.records.trajectory import ModelRecord, Step, TaskRecord, Trajectory
from actune.tasks.metrics import normalize_answer, score_prediction
from actune.text import word_tokens

__all__ = ["LABEL_SET_MAX", "Policy", "claim_only", "named_entities", "options", "policies", "run_yardsticks",
           "yes_no_question"]

LABEL_SET_MAX = 4
"""Training answers drawn from at most this many distinct values, each given more than once, are a label set (FEVER's):
one constant policy each."""
YARDSTICK_PREFIX = "yardstick:"
_AUX = re.compile(r"^(are|is|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)
#: a name: capitalised words, joined by the small words names hold ("Nelson Pereira dos Santos")
_JOINERS = "of|the|de|da|das|do|dos|del|della|di|in|for|on|la|le|von|van|du|y|al|bin|ibn"
_ENTITY = re.compile(rf"(?:[A-Z0-9][\w'’.&-]*)(?:\s+(?:(?:{_JOINERS})\s+)*[A-Z0-9][\w'’.&-]*)*")
#: opening words that are not part of a name ("Both X and Y ...", "Between X and Y, ...")
_OPENERS = {"both", "between", "which", "what", "who", "whom", "whose", "where", "when", "how", "in", "are", "is",
            "was", "were", "do", "does", "did", "name"}


def yes_no_question(question: str) -> bool:
    """A question an auxiliary verb opens ("Are A and B both ...?", "Are both A or B a genus of ...?")."""
    return bool(_AUX.match(question.strip()))


def options(question: str) -> tuple[str, str] | None:
    """The two options of an "..., A or B?" question (the clause after the last comma or colon; else the
    named entities either side of " or "); None when it offers none."""
    text = question.strip().rstrip("?").strip()
    if " or " not in text or yes_no_question(question):
        return None
    head, _, tail = text.rpartition(" or ")
    clause = re.split(r",\s*", head)[-1]
    if clause == head:  # no comma: the named entity just before " or "
        found = named_entities(head)
        clause = found[-1] if found else ""
    found_tail = named_entities(tail)
    second = found_tail[0] if found_tail and tail.startswith(found_tail[0]) else tail
    first, second = clause.strip(" \"'"), second.strip(" \"'")
    return (first, second) if first and second and first != second else None


def named_entities(question: str) -> list[str]:
    """Capitalised spans of the question, in order, without its opening word when that is a plain word
    ("Which", "Are")."""
    found = []
    for span in _ENTITY.findall(question):
        words = span.split()
        while words and words[0].lower() in _OPENERS:
            words = words[1:]
        found.append(" ".join(words).rstrip("'’s").strip() if span.endswith(("'s", "’s")) else " ".join(words))
    return [f for f in dict.fromkeys(found) if len(f) > 1]


@dataclass(frozen=True)
class Policy:
    """One content-free policy: what it searches and what it answers, from the question alone."""

    name: str
    answer: Callable[[Task], str]
    searches: Callable[[Task], list[str]] = lambda task: []


def _most(counter: Counter, default: str) -> str:
    return counter.most_common(1)[0][0] if counter else default


def _relation(task: Task) -> str:
    m = task.meta
    return str(m.get("relation") or m.get("family") or m.get("template") or m.get("kind") or "")


def _searches(task: Task) -> list[str]:
    return list(options(task.question) or named_entities(task.question))[:3]


def claim_only(train: Sequence[Task]) -> Callable[[Task], str]:
    """A label guessed from the question's words alone: multinomial naive Bayes fitted on the training questions
    and their labels (add-one smoothing, words never seen in training included, which keeps more test claims right
    than dropping them; a tie goes to the label first in sorted order). FEVER's claims give their label away in
    their wording ("... is only a ...", "... was incapable of ..."); this is the yardstick that
    catches a model reading the claim and not the page. Hand-written: ten lines, where scikit-learn would be a
    dependency for one yardstick."""
    if not train:
        raise ValueError("claim_only needs training questions with their labels")
    by_label: dict[str, Counter] = {}
    for t in train:
        by_label.setdefault(t.answer, Counter()).update(word_tokens(t.question))
    vocabulary = len(set().union(*by_label.values())) or 1
    prior = Counter(t.answer for t in train)
    denominator = {label: sum(words.values()) + vocabulary for label, words in by_label.items()}

    def guess(task: Task) -> str:
        tokens = word_tokens(task.question)

        def log_p(label: str) -> float:
            words = by_label[label]
            return math.log(prior[label]) + sum(math.log((words[w] + 1) / denominator[label]) for w in tokens)
        return max(sorted(by_label), key=log_p)
    return guess


def policies(train: Sequence[Task], has_search: bool) -> list[Policy]:
    """The policies fitted on ``train`` (see the module docstring)."""
    answers = Counter(t.answer for t in train if t.answer)
    constant = _most(answers, "yes")
    if 0 < len(answers) <= LABEL_SET_MAX and min(answers.values()) > 1:
        out = [Policy(f"constant-{normalize_answer(a).replace(' ', '-') or 'blank'}", lambda t, a=a: a)
               for a in sorted(answers)]
        # a label set: the labels, and a label guessed from the question's words; with a search action each
        # again after opening the pages the question names, so that a model answering one label to every claim
        # after a search cannot pass for a reader where grounding asks only for the pages opened (FEVER's)
        out.append(Policy("question-only", claim_only([t for t in train if t.answer])))
        return (out + [Policy(p.name + "+search", p.answer, _searches) for p in out]) if has_search else out
    by_relation: dict[str, Counter] = {}
    for t in train:
        by_relation.setdefault(_relation(t), Counter())[t.answer] += 1
    yes_no = Counter(normalize_answer(t.answer) for t in train if yes_no_question(t.question)
                     and normalize_answer(t.answer) in ("yes", "no"))
    position = Counter()
    for t in train:
        opts = options(t.question)
        if opts:
            norm = [normalize_answer(o) for o in opts]
            if normalize_answer(t.answer) in norm:
                position[norm.index(normalize_answer(t.answer))] += 1
    majority_yes_no, side = _most(yes_no, "yes"), int(_most(position, 0))

    def read_off(t: Task) -> str:
        opts = options(t.question)
        if opts:
            return opts[side]
        if yes_no_question(t.question):
            return majority_yes_no
        entities = named_entities(t.question)
        return entities[-1] if entities else constant

    out = [Policy("constant", lambda t: constant),
           Policy("kind-majority", lambda t: _most(by_relation.get(_relation(t), Counter()), constant)),
           Policy("question-only", read_off)]
    if has_search:
        out.append(Policy("question-only+search", read_off, _searches))
    return out


def _episode(policy: Policy, task: Task, env: Environment | None) -> Trajectory:
    if env is not None:
        env.reset(task)
    steps: list[Step] = []
    titles: list[str] = []
    for i, term in enumerate(policy.searches(task), start=1):
        result = env.step(Action("search", term))
        titles += [t for t in result.info.get("titles") or [] if isinstance(t, str)]
        steps += [Step("action", f"search[{term}]", i, "search", term), Step("observation", result.observation, i)]
    answer = policy.answer(task)
    n = len(steps) // 2 + 1
    finish = env.finish_action if env is not None else "finish"
    steps.append(Step("answer", f"{finish}[{answer}]", n, finish, answer))
    traj = Trajectory(task=TaskRecord.of(task), method="act", model=ModelRecord(name=YARDSTICK_PREFIX + policy.name),
                      steps=steps, prediction=answer, finish_reason="answered", run_id="yardsticks",
                      episode_id=hashlib.sha256(f"{policy.name}\x1f{task.id}".encode()).hexdigest()[:16],
                      info={"env_info": {"titles": list(dict.fromkeys(titles))}, "parse_errors": 0})
    traj.correct, scores = score_prediction(task, answer, {})
    traj.scores = {k: float(v) for k, v in scores.items()}
    return record_verdict(traj, judge(traj, require_grounded=True))


def run_yardsticks(tasks: Sequence[Task], train: Sequence[Task], env_config: EnvConfig) -> list[ModelResult]:
    """Every policy of :func:`policies` run on ``tasks`` in the environment ``env_config`` names; where that
    environment cannot be built here (no corpus given), only the policies that open no page."""
    try:
        env: Environment | None = make_env(env_config)
    except (ConfigError, ValueError, OSError):
        env = None
    has_search = env is not None and "search" in (getattr(env, "action_names", ()) or ())
    return [ModelResult(label=YARDSTICK_PREFIX + p.name, model="(no model: " + p.name + ")",
                        records=[_episode(p, t, env) for t in tasks])
            for p in policies(train, has_search)]
