"""PreFlect's offline planning-error distillation from our own trajectory stores (``actune distill-errors``).

    summary = asyncio.run(distill_errors(["runs/x/trajectories.jsonl"], "runs/x/catalog.json",
                                         DistillConfig(diagnoser="rules")))
    # or, as the paper does it, with a model: await distill_errors(stores, out, cfg, llm=client)

The paper's recipe on the episodes bootstrap already keeps, failed ones included: find the tasks with both a kept
and a failed episode, diagnose which planning error separated each failed episode from a correct one
(``diagnoser="llm"``: the model; ``"rules"``: :func:`rule_diagnosis`, offline and exact), and merge the
diagnoses into categories, keeping the ``max_errors`` most supported. Model answers are data (only their first
``{...}`` block, read with ``json.loads``), and nothing unreadable is dropped silently. The output is the catalog
:func:`actune.agent.planning_errors.load_catalog` reads (``agent.preflect_catalog=<out>``), with each entry's
evidence beside it, written atomically.

The rules in full: docs/modules.md, actune.bootstrap.distill_errors.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from actune.agent.critique import extract_json_object
from actune.agent.planning_errors import CatalogError, PlanningErrorCatalog, load_catalog
from actune.envs.titles import normalize_title
from actune.judge import Verdict, titles_read, verdict_of
from actune.llm import Completion, Sampling
from actune.records.atomic_write import atomic_write_text, check_output
from actune.records.jsonl import json_object
from actune.records.trajectory import Trajectory, TrajectoryFormatError, read_trajectory_lines

__all__ = ["DistillConfig", "DistillError", "NothingToDistill", "DistillSummary", "Diagnosis", "EpisodeRef",
           "StoredEpisode", "Pair", "read_episodes", "mixed_pairs", "rule_diagnosis", "parse_diagnosis", "parse_merge",
           "diagnose_with_llm", "merge_with_llm", "distill_errors", "DIAGNOSE_INSTRUCTION", "MERGE_INSTRUCTION",
           "INFRA_FINISH_REASONS", "FAILED_RESULT_PREFIXES"]

INFRA_FINISH_REASONS = ("server_error", "context_overflow")
"""Episodes that ended for the server's sake, not the plan's: never contrasted."""

FAILED_RESULT_PREFIXES = ("Could not find", "No more results", "No passage matches", "No page is open",
                          "Nothing happens", "Invalid action")
"""How the environments' observations start when a tool call brought nothing (wiki, FEVER, docqa, ALFWorld)."""

ICV, ITS, SCV = "insufficient constraint verification", "ineffective tool selection", "shallow content verification"

_OBS_CHARS = 240  # an observation is cut here in the diagnoser's prompt
_TEXT_CHARS = 600  # any one text the model writes into the catalog is cut here
_NAME_CHARS = 80


class DistillError(RuntimeError):
    """The stores cannot be read (the message names ``file:line``) or nothing could be distilled."""


class NothingToDistill(DistillError):
    """The stores were read, and held nothing to distill: no task with a kept and a failed episode, no diagnosis
    naming a planning error, no category with enough support. No catalog is written."""


class ChatModel(Protocol):
    async def chat(self, messages: list[dict[str, str]], sampling: Sampling | None = None,
                   stop: list[str] | None = None) -> Completion: ...


@dataclass
class DistillConfig:
    """What ``actune distill-errors`` does; each field is one of its options."""

    diagnoser: Literal["llm", "rules"] = "llm"
    """llm: a model diagnoses each contrast and merges the diagnoses (the paper); rules: trajectory features
    name one of the paper's three types and diagnoses of one type merge (offline, deterministic)."""
    max_pairs_per_task: int = 2
    """Failed episodes contrasted per task (the paper: 68 diagnoses of 32 tasks)."""
    min_support: int = 2
    """Diagnoses a category needs to be kept in the catalog."""
    max_errors: int = 5
    """Most catalog entries (the most supported); every one is in each reflector prompt."""
    max_examples: int = 3
    """Evidence examples kept per entry (from distinct tasks first)."""
    max_tokens: int = 512
    """Most tokens of one diagnosis."""
    merge_max_tokens: int = 2048
    """Most tokens of the aggregator's answer."""

    def __post_init__(self) -> None:
        if self.diagnoser not in ("llm", "rules"):
            raise ValueError(f"diagnoser must be 'llm' or 'rules', not {self.diagnoser!r}")
        for name in ("max_pairs_per_task", "min_support", "max_errors", "max_examples", "max_tokens",
                     "merge_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


@dataclass(frozen=True)
class EpisodeRef:
    """Where one episode is: enough to find its record again."""

    store: str
    line: int
    episode_id: str
    method: str
    attempt: int


@dataclass
class StoredEpisode:
    traj: Trajectory
    verdict: Verdict
    ref: EpisodeRef


@dataclass
class Pair:
    """One contrast: a failed and a correct (kept) episode of the same task."""

    failed: StoredEpisode
    correct: StoredEpisode


@dataclass
class Diagnosis:
    """What separated one pair. ``name`` None: no planning error (or unreadable: ``unparseable`` set)."""

    task_id: str
    question: str
    failed: EpisodeRef
    correct: EpisodeRef
    name: str | None
    analysis: str = ""
    description: str = ""
    failure_pattern: str = ""
    success_pattern: str = ""
    unparseable: str | None = None
    raw: str = ""

    def example(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "question": self.question, "failed": asdict(self.failed),
                "correct": asdict(self.correct), "analysis": self.analysis}


@dataclass
class Category:
    name: str
    description: str
    failure_pattern: str
    success_pattern: str
    members: list[int] = field(default_factory=list)  # indices into the planning diagnoses


@dataclass
class DistillSummary:
    """The counts ``actune distill-errors`` prints (and writes as the catalog's ``summary``)."""

    stores: list[str]
    episodes: int = 0
    tasks: int = 0
    mixed_tasks: int = 0
    infra_skipped: int = 0
    diagnoses: int = 0
    planning: int = 0
    not_planning: int = 0
    unparseable: int = 0
    merge: str = ""
    categories_kept: list[str] = field(default_factory=list)
    categories_discarded: list[str] = field(default_factory=list)
    unassigned: int = 0
    out: str = ""

    def table(self) -> str:
        kept = ", ".join(self.categories_kept) or "none"
        discarded = ", ".join(self.categories_discarded) or "none"
        return "\n".join([
            f"tasks read           {self.tasks} ({self.episodes} episodes in {len(self.stores)} store(s); "
            f"{self.infra_skipped} ended by server or context left out)",
            f"mixed-outcome tasks  {self.mixed_tasks}",
            f"diagnoses            {self.diagnoses}: {self.planning} planning errors, {self.not_planning} not "
            f"planning, {self.unparseable} unparseable",
            f"merge                {self.merge}; {self.unassigned} planning diagnoses in no category",
            f"categories kept      {len(self.categories_kept)}: {kept}",
            f"categories discarded {len(self.categories_discarded)}: {discarded}",
            f"catalog              {self.out}",
        ])


# --- 1. reading the stores ------------------------------------------------------------------------------

def read_episodes(stores: Sequence[str | Path]) -> list[StoredEpisode]:
    """Every record of the stores, in order, with its verdict and where it is. A missing file, a malformed
    record or one without a verdict raises :class:`DistillError` naming ``file:line``."""
    out = []
    for store in stores:
        path = Path(store)
        if not path.is_file():
            raise DistillError(f"{path}: trajectory store not found")
        try:
            for line, traj in read_trajectory_lines(path):
                verdict = verdict_of(traj)
                if verdict is None:
                    raise DistillError(f"{path}:{line}: record has no judge verdict (info.verdict); is this a "
                                       "trajectory store written by bootstrap or eval?")
                ref = EpisodeRef(str(store), line, traj.episode_id, traj.method, traj.attempt)
                out.append(StoredEpisode(traj, verdict, ref))
        except TrajectoryFormatError as e:
            raise DistillError(str(e)) from None
    return out


def mixed_pairs(episodes: Iterable[StoredEpisode], max_pairs_per_task: int) -> tuple[list[Pair], dict[str, int]]:
    """The contrasts to diagnose, and counts (``tasks``, ``mixed_tasks``, ``infra_skipped``)."""
    tasks: dict[tuple[str, str], list[StoredEpisode]] = {}
    skipped = 0
    for ep in episodes:
        group = tasks.setdefault((ep.traj.task.id, ep.traj.task.question), [])
        if not ep.verdict.kept and ep.traj.finish_reason in INFRA_FINISH_REASONS:
            skipped += 1
            continue
        group.append(ep)
    pairs: list[Pair] = []
    mixed = 0
    for group in tasks.values():
        correct = [e for e in group if e.verdict.kept]
        failed = [e for e in group if not e.verdict.kept]
        if not correct or not failed:
            continue
        mixed += 1
        for f in failed[:max_pairs_per_task]:
            same = [c for c in correct if c.traj.method == f.traj.method]
            pairs.append(Pair(f, (same or correct)[0]))
    return pairs, {"tasks": len(tasks), "mixed_tasks": mixed, "infra_skipped": skipped}


# --- 2a. diagnosis by rules -----------------------------------------------------------------------------

def _failing_results(traj: Trajectory) -> list[str]:
    """The actions (as written) whose observation says the tool brought nothing."""
    out = []
    for k, s in enumerate(traj.steps[:-1]):
        nxt = traj.steps[k + 1]
        if s.type == "action" and s.action_name and nxt.type == "observation" \
                and nxt.text.lstrip().startswith(FAILED_RESULT_PREFIXES):
            out.append(s.text.strip())
    return out


def _pages(traj: Trajectory) -> dict[str, str]:
    """Pages read: normalised title -> the title as first read, in reading order."""
    pages: dict[str, str] = {}
    for t in titles_read(traj):
        pages.setdefault(normalize_title(t), t)
    return pages


def _listed(titles: Iterable[str]) -> str:
    return ", ".join(repr(t) for t in titles)


def rule_diagnosis(pair: Pair) -> tuple[str | None, str]:
    """(the paper's error type or None, why), from what the two episodes did:

    - ineffective tool selection: the failed episode was stopped for repeating an action, or got at least two
      failing tool results (and more than the correct one) without getting past them;
    - no answer (step budget, parse errors) or malformed steps otherwise: not a planning error these rules see;
    - shallow content verification: it answered without reading any page the correct episode read;
    - insufficient constraint verification: it read some of those pages, or all of them, and still answered
      without checking the answer against every part of the question.
    """
    f, c = pair.failed.traj, pair.correct.traj
    bad, bad_correct = _failing_results(f), _failing_results(c)
    if f.finish_reason == "repetition":
        return ITS, (f"The failed episode repeated an action until it was stopped (failing results: "
                     f"{_listed(bad) or 'none'}) instead of switching tool or query; the correct one did not.")
    if len(bad) >= 2 and len(bad) > len(bad_correct):
        return ITS, (f"The failed episode kept issuing calls that brought nothing ({_listed(bad)}) instead of "
                     f"switching tool or query; the correct one had {len(bad_correct)} such result(s).")
    if f.finish_reason != "answered":
        return None, f"No answer ({f.finish_reason}) and no repeated failing tool calls: not a planning error."
    v = pair.failed.verdict
    if v.correct and v.grounded and v.order_problems:
        return None, f"Right and grounded, but malformed steps ({v.order_problems[0]}): not a planning error."
    read_c, read_f = _pages(c), _pages(f)
    if not read_c:
        return None, "The correct episode read no pages: nothing to contrast."
    answer, right = f.prediction, c.prediction
    if not set(read_c) & set(read_f):
        return SCV, (f"The failed episode answered {answer!r} without reading {_listed(read_c.values())}, "
                     f"which the correct episode read before answering {right!r}.")
    unread = [t for k, t in read_c.items() if k not in read_f]
    if unread:
        seen = [t for k, t in read_c.items() if k in read_f]
        return ICV, (f"The failed episode answered {answer!r} after reading {_listed(seen)} but not "
                     f"{_listed(unread)}, which the correct episode also checked before answering {right!r}.")
    return ICV, (f"The failed episode read the pages the correct one read ({_listed(read_c.values())}) but "
                 f"answered {answer!r} instead of {right!r}, without checking it against the question.")


def _rules_diagnosis(pair: Pair) -> Diagnosis:
    name, why = rule_diagnosis(pair)
    return _diagnosis(pair, name, why)


def _diagnosis(pair: Pair, name: str | None, analysis: str, **texts: str) -> Diagnosis:
    t = pair.failed.traj.task
    return Diagnosis(t.id, t.question, pair.failed.ref, pair.correct.ref, name, analysis, **texts)


# --- 2b. diagnosis by a model ----------------------------------------------------------------------------

DIAGNOSE_INSTRUCTION = (
    "You compare two trajectories of the same agent on the same task: one succeeded, one failed. Decide whether "
    "the failure was caused by the agent's plan (its strategy: which steps, which tools, what to check before "
    "answering) rather than by chance or by the answer's format, and if so name the planning error that "
    "separated the two trajectories, as a root cause in general terms that would apply to other tasks. Answer "
    "with one JSON object with the keys \"planning_error\" (true or false), \"name\" (the error type, 2 to 5 "
    "words, lower case), \"analysis\" (one or two sentences on what separated the trajectories), "
    "\"description\" (the error type in one sentence), \"failure_pattern\" (what a plan with this error does) "
    "and \"success_pattern\" (what a plan should do instead), e.g. "
    + json.dumps({"planning_error": True, "name": "unchecked first candidate",
                  "analysis": "The failed run answered with the first person it found; the successful run "
                              "checked the birth year the question asks for.",
                  "description": "The plan accepts the first candidate without checking every condition.",
                  "failure_pattern": "Answer with the first entity that matches part of the question.",
                  "success_pattern": "Check the candidate against each condition of the question first."})
)

MERGE_INSTRUCTION = (
    "You merge diagnoses of an agent's planning errors into a catalog. Group the diagnoses that name the same "
    "root cause into one category, create a category for each distinct cause, and discard diagnoses that are "
    "no planning error or too specific to one task. For each category write a \"name\" (2 to 5 words, lower "
    "case), a \"description\", a \"failure_pattern\" and a \"success_pattern\" in general terms, and list its "
    "\"members\" by diagnosis number. Answer with one JSON object with the keys \"categories\" and "
    "\"discarded\" (diagnosis numbers), e.g. "
    + json.dumps({"categories": [{"name": "unchecked first candidate",
                                  "description": "The plan accepts the first candidate answer.",
                                  "failure_pattern": "Answer with the first match.",
                                  "success_pattern": "Check each condition first.", "members": [1, 3]}],
                  "discarded": [2]})
)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n].rstrip() + " ..."


def render_trajectory(traj: Trajectory) -> str:
    """The episode's steps as the diagnoser reads them (observations cut short)."""
    label = {"thought": "Thought", "reflection": "Reflection", "plan": "Plan", "critique": "Critique",
             "action": "Action", "observation": "Observation", "answer": "Answer"}
    lines = []
    for s in traj.steps:
        text = _clip(s.text, _OBS_CHARS) if s.type == "observation" else " ".join(s.text.split())
        lines.append(f"{label.get(s.type, s.type)} {s.iteration}: {text}")
    return "\n".join(lines) or "(no steps)"


def _outcome(ep: StoredEpisode) -> str:
    t, v = ep.traj, ep.verdict
    if t.finish_reason != "answered":
        return f"no answer (stopped: {t.finish_reason})"
    if not v.correct:
        return f"wrong answer {t.prediction!r}"
    if not v.grounded and v.missing_titles:
        return f"right answer {t.prediction!r} without reading {_listed(v.missing_titles)}"
    if not v.grounded and v.missing_evidence:  # the pages were opened, the sentences that hold the answer not shown
        return f"right answer {t.prediction!r} without seeing {_listed(v.missing_evidence)}"
    return f"answer {t.prediction!r} with malformed steps"


def diagnose_request(pair: Pair) -> str:
    f, c = pair.failed.traj, pair.correct.traj
    return (f"Task: {c.task.question.strip()}\nCorrect answer: {c.task.answer}\n\n"
            f"Successful trajectory (answered {c.prediction!r}):\n{render_trajectory(c)}\n\n"
            f"Failed trajectory ({_outcome(pair.failed)}):\n{render_trajectory(f)}")


def _json_object(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the first JSON object of a model's answer, its keys lower case with ``_`` for spaces; or None with
    why). The block starts at ``{``, so what parses is an object."""
    block = extract_json_object(raw)
    if block is None:
        return None, "no JSON object in the answer"
    try:
        data = json.loads(block)
    except (json.JSONDecodeError, RecursionError) as e:
        return None, f"invalid JSON: {getattr(e, 'msg', type(e).__name__)}"
    return {str(k).strip().lower().replace(" ", "_"): v for k, v in data.items()}, None


def _text(data: dict[str, Any], key: str, n: int = _TEXT_CHARS) -> str:
    value = data.get(key)
    return _clip(value, n) if isinstance(value, str) else ""


def parse_diagnosis(raw: str) -> tuple[dict[str, str] | None, bool, str | None]:
    """(the named error's texts, whether the model saw a planning error, why unreadable). Never raises."""
    data, why = _json_object(raw)
    if data is None:
        return None, False, why
    flag = data.get("planning_error")
    if isinstance(flag, str) and flag.strip().lower() in ("true", "false", "yes", "no"):
        flag = flag.strip().lower() in ("true", "yes")
    if not isinstance(flag, bool):
        return None, False, f"planning_error is {flag!r}, not true or false"
    texts = {k: _text(data, k) for k in ("analysis", "description", "failure_pattern", "success_pattern")}
    texts["name"] = _text(data, "name", _NAME_CHARS).lower()
    if flag and not texts["name"]:
        return None, True, "a planning error without a name"
    return texts, flag, None


def _retry(messages: list[dict[str, str]], raw: str, why: str, keys: str) -> list[dict[str, str]]:
    # The same prompt again would bring the same answer under greedy decoding: say what was wrong.
    return [*messages, {"role": "assistant", "content": raw},
            {"role": "user", "content": f"Your previous answer could not be read ({why}). Answer with one JSON "
                                        f"object only, with the keys {keys}."}]


async def diagnose_with_llm(llm: ChatModel, pair: Pair, max_tokens: int = 512) -> Diagnosis:
    """One contrast diagnosed by the model; an unreadable answer is asked for once more."""
    messages = [{"role": "system", "content": DIAGNOSE_INSTRUCTION},
                {"role": "user", "content": diagnose_request(pair)}]
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens)
    raw = (await llm.chat(messages, sampling=sampling)).text
    texts, flag, why = parse_diagnosis(raw)
    if why is not None:
        keys = '"planning_error", "name", "analysis", "description", "failure_pattern" and "success_pattern"'
        raw = (await llm.chat(_retry(messages, raw, why, keys), sampling=sampling)).text
        texts, flag, why = parse_diagnosis(raw)
    if texts is None:
        return _diagnosis(pair, None, "", unparseable=why or "unreadable", raw=raw)
    name = texts.pop("name") if flag else None
    if not flag:
        texts = {"analysis": texts["analysis"]}
    return _diagnosis(pair, name, texts.pop("analysis"), raw=raw, **texts)


# --- 3. merging -----------------------------------------------------------------------------------------

def _render_diagnoses(diagnoses: Sequence[Diagnosis]) -> str:
    return "\n".join(f"{i}. {d.name}: {d.analysis} Failure pattern: {d.failure_pattern} Success pattern: "
                     f"{d.success_pattern}" for i, d in enumerate(diagnoses, 1))


def parse_merge(raw: str, n: int) -> tuple[list[Category], list[int], str | None]:
    """(categories, discarded diagnosis indices (0-based), why unreadable) from the aggregator's answer over
    ``n`` diagnoses. A category without a name or pattern is kept out with its members unassigned; member
    numbers outside 1..n, or already in an earlier category, are ignored. Never raises."""
    data, why = _json_object(raw)
    if data is None:
        return [], [], why
    cats = data.get("categories")
    if not isinstance(cats, list):
        return [], [], "no \"categories\" list"
    taken: set[int] = set()

    def numbers(value: Any) -> list[int]:
        out = []
        for x in value if isinstance(value, list) else []:
            if isinstance(x, str) and x.strip().isdigit():
                x = int(x)
            if isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= n and x - 1 not in taken:
                taken.add(x - 1)
                out.append(x - 1)
        return out

    out: list[Category] = []
    for c in cats:
        if not isinstance(c, dict):
            continue
        c = {str(k).strip().lower().replace(" ", "_"): v for k, v in c.items()}
        texts = [_text(c, "name", _NAME_CHARS).lower(),
                 *(_text(c, k) for k in ("description", "failure_pattern", "success_pattern"))]
        if not all(texts):
            continue
        members = numbers(c.get("members"))
        if members:
            out.append(Category(*texts, members=members))
    return out, numbers(data.get("discarded")), None


def _by_name(diagnoses: Sequence[Diagnosis], wording: PlanningErrorCatalog | None) -> list[Category]:
    """Diagnoses of one name form one category; worded as ``wording`` words that name, else as the first
    diagnosis of the name that says every part."""
    groups: dict[str, Category] = {}
    for i, d in enumerate(diagnoses):
        key = " ".join((d.name or "").lower().split())
        if key not in groups:
            entry = wording.find(key) if wording is not None else None
            texts = (entry.description, entry.failure_pattern, entry.success_pattern) if entry else ("", "", "")
            groups[key] = Category(key, *texts)
        cat = groups[key]
        if not (cat.description and cat.failure_pattern and cat.success_pattern) \
                and d.description and d.failure_pattern and d.success_pattern:
            cat.description, cat.failure_pattern, cat.success_pattern = \
                d.description, d.failure_pattern, d.success_pattern
        cat.members.append(i)
    return list(groups.values())


async def merge_with_llm(llm: ChatModel, diagnoses: Sequence[Diagnosis], max_tokens: int = 2048,
                         ) -> tuple[list[Category], list[int], str]:
    """(categories, discarded indices, how merged): the aggregator's grouping, asked once more when unreadable;
    unreadable again, the diagnoses are grouped by the name they gave."""
    messages = [{"role": "system", "content": MERGE_INSTRUCTION},
                {"role": "user", "content": f"Diagnoses:\n{_render_diagnoses(diagnoses)}"}]
    sampling = Sampling(temperature=0.0, max_tokens=max_tokens)
    raw = (await llm.chat(messages, sampling=sampling)).text
    cats, discarded, why = parse_merge(raw, len(diagnoses))
    if why is not None:
        raw = (await llm.chat(_retry(messages, raw, why, '"categories" and "discarded"'), sampling=sampling)).text
        cats, discarded, why = parse_merge(raw, len(diagnoses))
    if why is not None:
        return _by_name(diagnoses, None), [], f"by diagnosis name (the aggregator's answer was unreadable twice: {why})"
    return cats, discarded, "llm aggregator"


# --- the whole command ----------------------------------------------------------------------------------

async def _diagnose_all(llm: ChatModel, pairs: Sequence[Pair], max_tokens: int,
                        log: Callable[[str], None]) -> list[Diagnosis]:
    done = 0
    every = max(1, len(pairs) // 10)

    async def one(pair: Pair) -> Diagnosis:
        nonlocal done
        d = await diagnose_with_llm(llm, pair, max_tokens)
        done += 1
        if done % every == 0 or done == len(pairs):
            log(f"diagnosed {done}/{len(pairs)}")
        return d

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def _examples(diagnoses: Sequence[Diagnosis], members: list[int], n: int) -> list[dict[str, Any]]:
    """Up to ``n`` members, distinct tasks first."""
    first, rest, seen = [], [], set()
    for i in members:
        key = (diagnoses[i].task_id, diagnoses[i].question)
        (rest if key in seen else first).append(diagnoses[i].example())
        seen.add(key)
    return (first + rest)[:n]


_SOURCE_PREFIX = "actune distill-errors"
"""How the ``source`` of every catalog this command writes starts: how a rerun knows its own earlier output."""


def _is_catalog_we_wrote(path: Path) -> bool:
    source = (json_object(path) or {}).get("source")
    return isinstance(source, str) and source.startswith(_SOURCE_PREFIX)


async def distill_errors(stores: Sequence[str | Path], out: str | Path, cfg: DistillConfig | None = None, *,
                         llm: ChatModel | None = None, model: str = "",
                         log: Callable[[str], None] = print, overwrite: bool = False) -> DistillSummary:
    """Distill a planning-error catalog from ``stores`` into ``out`` (see the module docstring). ``llm`` (an
    open :class:`actune.llm.LLMClient`) is needed by ``diagnoser="llm"``; ``model`` names it in ``source``.
    ``out`` is never a store, nor a file this command did not write unless ``overwrite``.
    Async only for the model's sake: ``asyncio.run(distill_errors(...))``."""
    cfg = cfg or DistillConfig()
    check_output(out, stores, DistillError, own=_is_catalog_we_wrote(Path(out)), overwrite=overwrite,
                 mine=f"a JSON catalog whose source starts with {_SOURCE_PREFIX!r}")
    if cfg.diagnoser == "llm" and llm is None:
        raise DistillError("diagnoser 'llm' needs a model client (or use the rules diagnoser)")
    summary = DistillSummary([str(s) for s in stores], out=str(out))
    episodes = read_episodes(stores)
    pairs, counts = mixed_pairs(episodes, cfg.max_pairs_per_task)
    summary.episodes, summary.tasks = len(episodes), counts["tasks"]
    summary.mixed_tasks, summary.infra_skipped = counts["mixed_tasks"], counts["infra_skipped"]
    log(f"read {len(episodes)} episodes of {summary.tasks} tasks; {summary.mixed_tasks} tasks have both kept and "
        f"failed episodes: {len(pairs)} contrasts to diagnose ({cfg.diagnoser})")
    if not pairs:
        raise NothingToDistill("no task has both a kept and a failed episode: nothing to contrast (bootstrap keeps "
                           "failed episodes; sample more attempts per task, at a temperature above 0)")
    if cfg.diagnoser == "rules":
        diagnoses = [_rules_diagnosis(p) for p in pairs]
    else:
        assert llm is not None
        diagnoses = await _diagnose_all(llm, pairs, cfg.max_tokens, log)
    planning = [d for d in diagnoses if d.name]
    unreadable = [d for d in diagnoses if d.unparseable]
    summary.diagnoses, summary.planning, summary.unparseable = len(diagnoses), len(planning), len(unreadable)
    summary.not_planning = len(diagnoses) - len(planning) - len(unreadable)
    if not planning:
        raise NothingToDistill(f"none of the {len(diagnoses)} diagnoses named a planning error "
                           f"({len(unreadable)} unparseable): no catalog written")
    if cfg.diagnoser == "rules":
        cats, dropped, summary.merge = _by_name(planning, load_catalog()), [], "by type (rules)"
    else:
        assert llm is not None
        log(f"merging {len(planning)} planning diagnoses")
        cats, dropped, summary.merge = await merge_with_llm(llm, planning, cfg.merge_max_tokens)
    summary.unassigned = len(planning) - len(dropped) - sum(len(c.members) for c in cats)
    cats = _distinct(cats)
    cats.sort(key=lambda c: -len(c.members))  # stable: first named first among equals
    kept, discarded, reasons = [], [], {}
    for c in cats:  # most supported first
        if not (c.description and c.failure_pattern and c.success_pattern):
            reasons[c.name] = "no description, failure pattern or success pattern"
        elif len(c.members) < cfg.min_support:
            reasons[c.name] = f"fewer than {cfg.min_support} diagnoses"
        elif len(kept) == cfg.max_errors:
            reasons[c.name] = f"beyond the {cfg.max_errors} most supported"
        (discarded if c.name in reasons else kept).append(c)
    summary.categories_kept = [f"{c.name} ({len(c.members)})" for c in kept]
    summary.categories_discarded = [f"{c.name} ({len(c.members)})" for c in discarded]
    if not kept:
        raise NothingToDistill(f"no category has {cfg.min_support} diagnoses (largest: "
                           f"{len(cats[0].members) if cats else 0}): no catalog written; lower --min-support")
    support = sum(len(c.members) for c in kept)
    catalog = {
        "source": (f"{_SOURCE_PREFIX} ({cfg.diagnoser}{', ' + model if model else ''}): {len(diagnoses)} "
                   f"contrasts of failed and correct episodes of {summary.mixed_tasks} mixed-outcome tasks in "
                   f"{', '.join(summary.stores)}; share of kept diagnoses "
                   + " / ".join(f"{100 * len(c.members) / support:.1f}%" for c in kept) + "."),
        "errors": [{"name": c.name, "description": c.description, "failure_pattern": c.failure_pattern,
                    "success_pattern": c.success_pattern} for c in kept],
        "evidence": [{"error": c.name, "diagnoses": len(c.members),
                      "share": round(len(c.members) / support, 3),
                      "examples": _examples(planning, c.members, cfg.max_examples)} for c in kept],
        "discarded": [{"name": c.name, "diagnoses": len(c.members), "reason": reasons[c.name]} for c in discarded]
                     + [{"name": planning[i].name, "diagnoses": 1, "reason": "discarded by the aggregator",
                         "example": planning[i].example()} for i in dropped],
        "unparseable": [{**d.example(), "error": d.unparseable, "raw": _clip(d.raw, _TEXT_CHARS)}
                        for d in unreadable],
        "summary": {k: v for k, v in asdict(summary).items() if k not in ("stores", "out")},
    }
    _write_catalog(Path(out), catalog)
    return summary


def _write_catalog(out: Path, catalog: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, json.dumps(catalog, indent=2, ensure_ascii=False) + "\n")
    try:
        load_catalog(out)  # what PreFlect will do with it: fail here, not in the first episode
    except CatalogError as e:
        raise DistillError(f"the written catalog does not load: {e}") from None


def _distinct(cats: list[Category]) -> list[Category]:
    """Categories of the same name (case and spacing aside) as one: the catalog's names must be distinct."""
    out: dict[str, Category] = {}
    for c in cats:
        key = " ".join(c.name.lower().split())
        if key in out:
            out[key].members.extend(c.members)
        else:
            out[key] = c
    return list(out.values())
