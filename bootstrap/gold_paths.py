"""Gold-path episodes: a scripted teacher that reads a training question's supporting pages in the run's own
environment and answers with the gold answer.

    summary = write_gold_paths(tasks, "gold_paths/trajectories.jsonl", env_config)

Where a small model's own episodes keep almost nothing and a teacher's released trajectories saw another search
engine, the training questions still name their supporting pages: each path reads them, showing the evidence
sentences, with every observation the environment's own, so the tuned model trains on exactly what it will see.
Every path is judged like the model's own episodes; one that cannot show its evidence is left out. Training
split only: it reads ``meta.supporting_titles`` and ``meta.evidence_sets``, which eval never sees.

The rules in full: docs/modules.md, actune.bootstrap.gold_paths.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import permutations

from actune.agent.method_registry import reason_type, reflection_formats, step_format
from actune.agent.render import instruction_for, question_line
from actune.envs.base import Action, Environment, StepResult
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.titles import base_title, normalize_title
from actune.envs.wiki_env import LOOKUP_PREFIX
from actune.judge import evidence_sets, is_shown, judge, record_verdict, shown_text
from actune.records.store import TrajectoryStore
from actune.records.task_record import Task
from actune.records.trajectory import ModelRecord, Step, TaskRecord, Trajectory
from actune.tasks.fever import claim_subject
from actune.tasks.metrics import score_prediction
from actune.text import split_sentences, word_tokens

__all__ = ["GOLD_PATH_MODEL", "GoldPathSummary", "as_reflections", "gold_path", "question_mention", "search_order",
           "searches_seen", "write_gold_paths"]

GOLD_PATH_MODEL = "gold paths (scripted from supporting pages)"
_YES_NO = {"yes", "no"}


@dataclass
class GoldPathSummary:
    total: int = 0
    written: int = 0
    already: int = 0
    """Tasks the store held already (a resumed run)."""
    skipped: Counter = field(default_factory=Counter)
    """Why a task got no path: ``no_pages``, ``page_not_found``, ``unseen_name``, ``answer_not_shown``."""


def _in_question(title: str, question: str) -> int:
    """Where the title's base form first appears in the question (normalised); -1 when it does not."""
    return normalize_title(question).find(base_title(title))


def search_order(titles: Iterable[str], question: str) -> list[str]:
    """The supporting titles in the order a reader searches them: those the question names, by where it names
    them, then the others (a bridge's second page is named by the first page, not by the question)."""
    titles = list(dict.fromkeys(titles))
    named = sorted((t for t in titles if _in_question(t, question) >= 0), key=lambda t: _in_question(t, question))
    return named + [t for t in titles if _in_question(t, question) < 0]


def question_mention(title: str, question: str) -> str | None:
    """The longest run of the question's words that is a run of the title's words but not all of them ("Timberwolves"
    of "... played for the Timberwolves?" for "2011–12 Minnesota Timberwolves season"), as the question writes it;
    None when there is none with a capitalised word of four letters or more (a generic "ridge" is no mention)."""
    words = question.replace("?", " ").split()
    norm = [normalize_title(w.strip(",;:\"'()")) for w in words]
    target = normalize_title(base_title(title)).split()
    best: tuple[int, int] | None = None
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + len(target) - 1) + 1):
            run = norm[i:j]
            inside = any(target[a:a + len(run)] == run for a in range(len(target) - len(run) + 1))
            named = any(w[:1].isupper() and len(w) >= 4 for w in words[i:j])
            if inside and named and (best is None or j - i > best[1] - best[0]):
                best = (i, j)
    return None if best is None else " ".join(w.strip(",;:\"'()") for w in words[best[0]:best[1]])


def _search_term(title: str, question: str, env: Environment, misses: bool = False,
                 mentions: bool = False) -> tuple[str, str | None]:
    """(what to search for ``title``, a search to miss first or None). The title as the question writes it when
    that finds the same page ("Big Stone Gap" for "Big Stone Gap (film)"), so the model learns to copy the entity
    from the question; else the page's full title, and with ``misses``, when the question's form misses but lists
    the page among the similar ones, that miss first (so the model learns to pick the page from the list).
    ``mentions``: a title the question names only in part (:func:`question_mention`) is searched that way too."""
    start = _in_question(title, question)
    mention = question_mention(title, question) if mentions and start < 0 else None
    if mention is not None:
        short = mention
    elif start < 0 or base_title(title) == normalize_title(title):
        return title, None
    else:
        short = " ".join(question.split())[start:start + len(base_title(title))]
    result = env.step(Action("search", short))
    if (result.info.get("titles") or []) == [title]:
        return short, None
    listed = misses and not result.info.get("titles") and title in (result.info.get("similar") or [])
    return title, short if listed else None


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


_QUOTE_WORDS = 60
"""At most this many words quoted in a last thought: eval generates a step in ``max_tokens`` (128 in the presets),
and a thought cut off there leaves no action."""


def _quoted(sentences: list[str], words: int = _QUOTE_WORDS) -> str:
    """The sentences, each cut to its share of ``words`` (a cut one ends in "...")."""
    share = max(8, words // max(1, len(sentences)))
    out = []
    for s in sentences:
        words = s.split()
        out.append(" ".join(words[:share]) + (" ..." if len(words) > share else ""))
    return " ".join(out)


def _comparison(answer: str, task: Task | None) -> bool:
    """A yes/no answer, or a task whose ``meta.kind`` says comparison: its last thought quotes both facts."""
    return answer.strip().lower() in _YES_NO or (task is not None and task.meta.get("kind") == "comparison")


def _cue(question: str, sentence: str, observations: list[str], answer: str) -> str | None:
    """The question's word that singles ``sentence`` out of the observation showing it: a word of four letters or
    more, no stop word and none of the answer's, that the sentence holds and no other sentence of that observation
    does (a lookup's observation shows one sentence, so there any such word does); the longest (the question's
    first on a tie), as the question writes it; None when there is none."""
    def words(text: str) -> set[str]:
        return {w.lower() for w in re.findall(r"[A-Za-z0-9][\w'-]*", text)}

    obs = next((o for o in reversed(observations) if sentence in o), None)
    if obs is None:
        return None
    others = set().union(*(words(x) for x in split_sentences(LOOKUP_PREFIX.sub("", obs)) if x.strip() != sentence))
    held, barred = words(sentence), words(answer) | others
    found = [w for w in _question_words(question) if w.lower() in held and w.lower() not in barred]
    return max(found, key=len) if found else None


def _answer_thought(observations: list[str], answer: str, task: Task | None = None,
                    cues: bool = False) -> str | None:
    """The last thought: a comparison (a yes/no answer, or ``meta.kind == "comparison"``) quotes both facts (its
    evidence sentences where known, else each page's first sentence); any other answer quotes the sentence that
    shows it (None when no page shows it), with ``cues`` after the question's word that singles it out
    (:func:`_cue`): "directed: Written by Matt Roller and directed by Wes Archer, ..." for "... directed by whom?"."""
    evidence = (evidence_sets(task.meta) or [[]])[0] if task is not None else []
    if _comparison(answer, task):
        facts = _quoted(evidence or [_first_sentence(o) for o in observations])
        return f"{facts} So the answer is {answer}."
    shown = shown_text(observations)
    found = next((x for x in reversed(evidence)  # the evidence sentence that shows the answer, where the path showed it
                  if answer.strip().lower() in x.lower() and is_shown(x, shown)), None)
    quote = None if found is None else _quoted([found])
    if found is None:  # else the latest observation's sentence that holds it, whole
        found = quote = next(filter(None, (_sentence_with(LOOKUP_PREFIX.sub("", o), answer.strip())
                                           for o in reversed(observations))), None)
    if found is None:
        return None
    cue = _cue(task.question, found, observations, answer) if cues and task is not None else None
    return f"{cue + ': ' if cue else ''}{quote} So the answer is {answer}."


def _record(task: Task, env: Environment, steps: list[Step], titles: list[str], answer: str) -> Trajectory:
    traj = Trajectory(
        task=TaskRecord.of(task),
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


@dataclass
class _Read:
    """The searches of a path, run: its steps so far, what each search showed and the pages it opened."""

    steps: list[Step]
    observations: list[str]
    titles: list[str]

    def act(self, env: Environment, it: int, thought: str, name: str, arg: str, shown: bool = True) -> StepResult:
        """Run ``name[arg]`` as iteration ``it`` after ``thought``: its thought, action and observation appended,
        the observation among what the path showed unless ``shown`` is False (a miss shows no page)."""
        result = env.step(Action(name, arg))
        self.steps += [Step("thought", thought, it), Step("action", f"{name}[{arg}]", it, name, arg),
                       Step("observation", result.observation, it)]
        if shown:
            self.observations.append(result.observation)
        return result


_STOP = frozenset("what which where when who whom whose that this with from were was are is the and for did does "
                  "have has had also both than then into their there they them been being film album".split())


def _question_words(question: str) -> list[str]:
    """The question's words a reader could look for: four letters or more, no stop word, each once, in order."""
    return list(dict.fromkeys(w for w in re.findall(r"[A-Za-z0-9][\w'-]*", question)
                              if len(w) >= 4 and w.lower() not in _STOP))


def _keyword(sentence: str, page: list[str], question: str) -> tuple[str, int] | None:
    """(a word of the question that ``sentence`` holds, how many lookups of it reach the sentence): the word whose
    hits reach it soonest, the longer word on a tie; None when no question word of four letters or more does (or
    only past the third hit)."""
    words = _question_words(question)
    best: tuple[int, int, str] | None = None
    for w in words:
        hits = [x for x in page if w.lower() in x.lower()]
        if sentence in hits and hits.index(sentence) < 3:
            cand = (hits.index(sentence) + 1, -len(w), w)
            best = cand if best is None or cand < best else best
    return None if best is None else (best[2], best[0])


def _look_up_evidence(task: Task, env: Environment, read: "_Read", it: int) -> int:
    """After a search opened a page: look up each evidence sentence of the page that no observation showed yet
    (:func:`_keyword`), appending the steps to ``read``; the last iteration used."""
    page = getattr(env, "page", None)  # the wiki environment's open page; other environments show whole pages
    evidence = (evidence_sets(task.meta) or [[]])[0]
    if page is None or not evidence:
        return it
    sentences = [x.strip() for x in page.sentences]
    for sentence in evidence:
        if sentence not in sentences or is_shown(sentence, shown_text(read.observations)):
            continue
        found = _keyword(sentence, sentences, task.question)
        if found is None:
            continue
        word, times = found
        for k in range(times):
            it += 1
            thought = (f"The page does not say it yet. I need to look up {word}." if k == 0
                       else f"Not this one. I need to look up {word} again.")
            read.act(env, it, thought, "lookup", word)
    return it


def _look_up_answer(task: Task, env: Environment, read: _Read) -> str | None:
    """The last page's sentence that holds the answer (an evidence sentence where the task names its evidence),
    looked up with a word of the question whose first hit it is, the steps appended to ``read``; None when no such
    sentence or word exists. The answer then sits in the latest observation, alone, where a small model copies it
    from, and a question word is what a reader looks up on a long page."""
    page = getattr(env, "page", None)
    if page is None or not read.steps:
        return None
    answer = task.answer.strip().lower()
    sentences = [x.strip() for x in page.sentences]
    evidence = (evidence_sets(task.meta) or [[]])[0]
    for sentence in (s for s in sentences if answer in s.lower() and (not evidence or s in evidence)):
        last = read.observations[-1]
        if LOOKUP_PREFIX.match(last) and last.endswith(sentence):
            return sentence  # _look_up_evidence just showed it
        found = _keyword(sentence, sentences, task.question)
        if found is None or found[1] != 1:
            continue
        read.act(env, read.steps[-1].iteration + 1, f"I need to look up {found[0]}.", "lookup", found[0])
        return sentence
    return None


def _search_all(task: Task, env: Environment, plan: list[tuple[str, str | None]]) -> _Read | None:
    """Run ``plan`` (each a search and the search to miss before it, or None) in a fresh episode, each step's
    thought linking it to the page before; None when a search meant to open a page opens none."""
    env.reset(task)
    read = _Read([], [], [])
    thought = f"I need to search {plan[0][1] or plan[0][0]}."
    it = 0
    for k, (term, miss) in enumerate(plan):
        if miss is not None:
            it += 1
            read.act(env, it, thought, "search", miss, shown=False)
            thought = f"{term} is among the similar pages. I need to search {term}."
        it += 1
        result = read.act(env, it, thought, "search", term)
        if not result.info.get("titles"):
            return None
        read.titles += result.info["titles"]
        seen = len(read.observations) - 1
        it = _look_up_evidence(task, env, read, it)
        if k + 1 < len(plan):
            nxt, nxt_miss = plan[k + 1]
            thought = _link_thought(" ".join(read.observations[seen:]), nxt_miss or nxt)
    return read


def _finished(task: Task, env: Environment, read: _Read, final: str) -> Trajectory:
    n = read.steps[-1].iteration + 1
    finish = env.finish_action
    steps = [*read.steps, Step("thought", final, n), Step("answer", f"{finish}[{task.answer}]", n, finish, task.answer)]
    return _record(task, env, steps, list(dict.fromkeys(read.titles)), task.answer)


def searches_seen(question: str, steps: Iterable[Step]) -> bool:
    """Whether every search of ``steps`` names what the question or an earlier observation shows (its base form,
    normalised: "Utopia (Björk album)" once "Utopia" was shown), so a model trained on the path copies names
    rather than recalling them."""
    seen = normalize_title(question)
    for step in steps:
        name = base_title(step.action_arg or "") if step.type == "action" and step.action_name == "search" else None
        if name is not None and not (name and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", seen)):
            return False  # whole words only: "Ann" is not shown by "Annapolis"
        if step.type == "observation":
            seen += " " + normalize_title(step.text)
    return True


def _read_in_order(task: Task, env: Environment, titles: list[str], misses: bool, mentions: bool,
                   seen_names: bool) -> tuple[_Read | None, str | None]:
    """(the searches of ``titles`` run, None) or (None, why not). With ``seen_names`` each order of the titles (of
    three at most; more keep the question's) is tried, the question's first, until every search names what was
    shown before it (:func:`searches_seen`): a bridge whose first page names the second is read that way round,
    and a path whose pages no order reaches from the question is left out (``unseen_name``) rather than teach a
    guess."""
    orders = list(permutations(titles)) if seen_names and len(titles) <= 3 else [tuple(titles)]
    why = "page_not_found"
    for order in orders:
        env.reset(task)
        read = _search_all(task, env, [_search_term(t, task.question, env, misses, mentions) for t in order])
        if read is not None and (not seen_names or searches_seen(task.question, read.steps)):
            return read, None
        why = why if read is None else "unseen_name"
    return None, why


def gold_path(task: Task, env: Environment, misses: bool = False, lookups: bool = False,
              mentions: bool = False, seen_names: bool = False,
              cues: bool = False) -> tuple[Trajectory | None, str | None]:
    """(the gold-path episode of ``task``, None) or (None, why it has none; a key of
    :attr:`GoldPathSummary.skipped`). ``misses``, ``mentions``: see :func:`_search_term`; ``lookups``: an answer
    that is no comparison's is looked up on the last page before it is given (:func:`_look_up_answer`);
    ``seen_names``: see :func:`_read_in_order`; ``cues``: see :func:`_answer_thought`. A FEVER claim takes
    :func:`_fever_path`."""
    if task.env == "fever":
        return _fever_path(task, env, misses)
    order = search_order(task.meta.get("supporting_titles") or [], task.question)
    if not order or not task.answer:
        return None, "no_pages"
    read, why = _read_in_order(task, env, order, misses, mentions, seen_names)
    if read is None:
        return None, why
    looked_up = _look_up_answer(task, env, read) if lookups and not _comparison(task.answer, task) else None
    final = (f"{_quoted([looked_up])} So the answer is {task.answer}." if looked_up
             else _answer_thought(read.observations, task.answer, task, cues))
    if final is None:
        return None, "answer_not_shown"
    return _finished(task, env, read, final), None


# --- ReflAct: the same path, each thought a reflection on where it stands against the goal ------------------------

_INTENT = re.compile(r"(?:Next, )?(I need to (?:search|look up) .+?)(?: again)?\.$|(So (?:the answer is|the claim is|"
                     r"there is) .+?\.)$")
_REFLECTION_QUOTE_WORDS = 45
"""A reflection also states where the path stands and how that relates to the goal, in the same 128 tokens."""


def _reflection(thought: str, pages: list[str], first: bool) -> str:
    """A ReAct gold path's thought as ReflAct's three parts: the pages read (the state), what the thought quoted
    (the latest discovery: "none" at the start), and the thought's intent as the goal relation (what is still
    needed, or that the goal is reached)."""
    m = _INTENT.search(thought)
    intent = (m.group(1) or m.group(2)) if m else thought
    quote = thought[:m.start()].strip() if m else ""
    state = f"I have read {' and '.join(pages)}." if pages else "nothing is known yet."
    discovery = (_quoted([quote], _REFLECTION_QUOTE_WORDS) if quote else "none." if first
                 else f"the page of {pages[-1]}." if pages else "nothing new.")
    if m and m.group(2):
        relation = f"the goal is reached; {intent[3:]}"
    else:
        relation = f"the answer is not found yet; {intent}."
    return f"Current state: {state} Latest discovery: {discovery} Goal relation: {relation}"


def reflective_formats() -> tuple[str, ...]:
    """The trained step formats whose gold paths are written in their own form (reflections)."""
    return tuple(n for n in reflection_formats() if (f := step_format(n)) is not None and f.trainable)


def as_reflections(traj: Trajectory, env: Environment, method: str) -> Trajectory:
    """A ReAct gold path in the goal-state reflections of format ``method`` (ReflAct's: the same actions and
    observations; :func:`_reflection` for each thought, ``FINAL ANSWER: x`` for the finish), judged again. A ReAct
    record cannot be exported in such a format (:func:`~actune.agent.method_registry.convertible`): its thoughts say
    what to do, not where the agent stands."""
    pages: list[str] = []
    steps: list[Step] = []
    for k, step in enumerate(traj.steps):
        if step.type == "thought":
            steps.append(replace(step, type=reason_type(method), text=_reflection(step.text, list(pages), k == 0)))
        elif step.type == "answer":
            steps.append(replace(step, text=f"FINAL ANSWER: {step.action_arg}"))
        else:
            steps.append(step)
        if step.type == "action" and step.action_name == "search":
            nxt = traj.steps[k + 1] if k + 1 < len(traj.steps) else None
            if nxt is not None and not nxt.text.startswith("Could not find"):
                pages.append(step.action_arg or "")
    prompt = {**traj.info["prompt"], "method": method,
              "instruction": instruction_for(method, env.name, env.describe_actions())}
    out = replace(traj, method=method, steps=steps, info={**traj.info, "prompt": prompt},
                  episode_id=hashlib.sha256(f"gold\x1f{method}\x1f{traj.task.id}".encode()).hexdigest()[:16])
    return record_verdict(out, judge(out, require_grounded=True))


# --- FEVER: a label is no sentence of a page, so the last thought quotes the sentence the verdict rests on ------

_VERDICT = {"SUPPORTS": "So the claim is supported.", "REFUTES": "So the claim is refuted.",
            "NOT ENOUGH INFO": "So there is not enough information."}
def _content_words(text: str) -> set[str]:
    return {w for w in word_tokens(text) if len(w) > 3 or w.isdigit()}


def _closest_sentence(observations: list[str], claim: str, titles: list[str]) -> str:
    """The sentence the pages read share most words with the claim (the first on a tie), not counting the pages'
    titles (what a page is about, not what it says of it), of five words or more where there is one (a fragment cut
    at an abbreviation, "Dilwale Dulhania Le Jayenge (transl.", says nothing)."""
    words = _content_words(claim) - _content_words(" ".join(titles))
    sentences = [s for o in observations for s in split_sentences(o)]
    whole = [s for s in sentences if len(s.split()) >= 5] or sentences
    return max(whole, key=lambda s: len(words & _content_words(s)))


def _claim_subject(task: Task, env: Environment) -> str | None:
    """For a claim without evidence: the longest run of its first words that is a page's title ("Bea Arthur" of
    "Bea Arthur was married to Bernice Frankel."), the page a reader would check first; None when none is."""
    env.reset(task)
    return claim_subject(task.question, lambda term: bool(env.step(Action("search", term)).info.get("titles")))


def _fever_path(task: Task, env: Environment, misses: bool = False) -> tuple[Trajectory | None, str | None]:
    """SUPPORTS / REFUTES: the first evidence set's pages searched, the sentence closest to the claim quoted, the
    verdict. NOT ENOUGH INFO: the page the claim is about searched, its first sentence quoted, nothing more said."""
    label = task.answer
    if label not in _VERDICT:
        return None, "no_pages"
    if label == "NOT ENOUGH INFO":
        subject = _claim_subject(task, env)
        read = _search_all(task, env, [(subject, None)]) if subject else None
        if read is None:
            return None, "page_not_found"
        claim = task.question.rstrip(".")
        final = f"{_first_sentence(read.observations[0])} It does not say whether {claim}. {_VERDICT[label]}"
        return _finished(task, env, read, final), None
    sets = task.meta.get("evidence_sets") or []
    order = search_order(sets[0], task.question) if sets else []
    if not order:
        return None, "no_pages"
    env.reset(task)
    read = _search_all(task, env, [_search_term(t, task.question, env, misses) for t in order])
    if read is None:
        return None, "page_not_found"
    evidence = _closest_sentence(read.observations, task.question, read.titles)
    return _finished(task, env, read, f"{evidence} {_VERDICT[label]}"), None


def write_gold_paths(tasks: Iterable[Task], store: str, env: EnvConfig, misses: bool = False,
                     lookups: bool = False, method: str = "react", mentions: bool = False,
                     seen_names: bool = False, cues: bool = False) -> GoldPathSummary:
    """Append the gold path of every task ``store`` does not hold yet (``misses``, ``lookups``, ``mentions``,
    ``seen_names``, ``cues``: :func:`gold_path`),
    in ReAct's form or a trained reflective format's, ReflAct's (:func:`as_reflections`); a path the judge does not
    keep (a metric that disagrees with the gold answer's own form) is counted under ``skipped["not_kept"]``."""
    if method != "react" and method not in reflective_formats():
        raise ValueError(f"gold paths are written as react episodes or in a reflective format "
                         f"({', '.join(reflective_formats())}), not {method}")
    summary = GoldPathSummary()
    environment = make_env(env)
    with TrajectoryStore.open(store) as out:
        for task in tasks:
            summary.total += 1
            if out.state.has(task.id, method, 0):
                summary.already += 1
                continue
            traj, why = gold_path(task, environment, misses, lookups, mentions, seen_names, cues)
            if traj is not None and method != "react":
                traj = as_reflections(traj, environment, method)
            if traj is None or not traj.scores.get("kept"):
                summary.skipped[why or "not_kept"] += 1
                continue
            out.append(traj)
            summary.written += 1
    return summary
