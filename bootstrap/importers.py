"""Import outside agent-trajectory sets into a trajectory store (``actune import``).

    summary = import_set("fireact/gpt_format/hotpotqa.jsonl", "runs/imported/trajectories.jsonl", "openai")
    print(summary.table())

Three layouts (``openai``, ``alpaca``, ``sharegpt``), each a JSONL file, a JSON array or a Hugging Face dataset.
Each record becomes the record the agent loop would have written for the same steps, read by the loop's own step
parser (:func:`actune.agent.parser.parse_step`) under the same zero-shot prompt head, so export renders it
exactly like a bootstrapped record. Outside sets come already filtered and hold no gold to check, so a record is
judged correct by construction and kept when its steps are well-ordered (:func:`actune.judge.judge`); every
record is imported or rejected with a reason and its ``file:line``, and importing a set again adds nothing.

The rules in full: docs/modules.md, actune.bootstrap.importers.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actune.agent.method_registry import method_names, method_spec, reason_type
from actune.agent.parser import ParsedStep, parse_answer, parse_step
from actune.agent.render import instruction_for, question_line
from actune.config import ConfigError
from actune.envs.config import EnvConfig
from actune.envs.factory import make_env
from actune.envs.registry import is_builtin_env
from actune.judge import judge, record_verdict
from actune.records.jsonl import JSON_ERRORS, json_problem
from actune.records.store import TrajectoryStore
from actune.records.trajectory import ModelRecord, Step, TaskRecord, Trajectory, read_trajectories

__all__ = ["FORMATS", "IMPORT_ENVS", "EnvActions", "ImportSetError", "ImportSummary", "Rejected",
           "SourceRecord", "Turn", "env_actions", "import_set", "read_source", "record_turns", "task_id_for",
           "import_methods", "to_trajectory"]

FORMATS = ("openai", "alpaca", "sharegpt")



def import_methods() -> dict[str, str]:
    """The source method a record is filed under -> the step format its text is read in (each method spec's
    ``imports_as``). ``cot`` is for sets of one-step records (a chain of thought, then ``finish[answer]``, as
    FireAct writes its CoT data): filing them apart lets ``bootstrap.export.method_shares`` mix them at a chosen
    share."""
    return {n: method_spec(n).imports_as or n for n in method_names(lambda s: s.imports_as is not None)}

#: Built-in environments whose actions are known without their data (a corpus): the imported steps are checked
#: against them, and a model trained on the records acts in them. A custom environment (``module:function`` or an
#: ``actune.envs`` entry point) is built to say its own actions (:func:`env_actions`).
IMPORT_ENVS = ("wiki", "fever")

EXAMPLES_PER_REASON = 3

KEPT_BECAUSE = ("outside set: its authors published it already filtered; actune did not run or judge the episode "
                "(no gold answer or page titles to check), so it counts as correct and is kept when its steps "
                "are well-ordered")


class ImportSetError(ValueError):
    """The source as a whole cannot be read (missing, not JSON, unknown format or option); names file:line."""


class Rejected(Exception):
    """One record cannot be imported: ``reason`` is a short code counted in the summary."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class SourceRecord:
    """One record of a source and where it is: ``file:line`` (JSONL), ``file[index]`` (JSON array) or
    ``id[split][index]`` (a ``datasets`` dataset)."""

    where: str
    index: int
    raw: Any
    line: int | None = None


@dataclass
class Turn:
    """One turn of a record, in the importer's own terms: ``user`` (the question, or an observation after
    an action), ``assistant`` (a step; ``call`` is a structured ``(name, argument)`` action), ``observation``
    (a tool's output) or ``system``."""

    role: str
    text: str
    call: tuple[str, str] | None = None


@dataclass
class ImportSummary:
    """What one import did: ``imported + sum(rejected.values()) == total``."""

    source: str
    format: str
    store: str
    method: str
    env: str
    total: int = 0
    imported: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    """Records left out, per reason."""
    examples: dict[str, list[str]] = field(default_factory=dict)
    """The first few ``where: detail`` of each reason."""

    def reject(self, record: SourceRecord, why: Rejected) -> None:
        self.rejected[why.reason] = self.rejected.get(why.reason, 0) + 1
        shown = self.examples.setdefault(why.reason, [])
        if len(shown) < EXAMPLES_PER_REASON:
            shown.append(f"{record.where}: {why.detail}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """What ``actune import`` prints: the counts, then each rejection reason with examples."""
        n_rejected = sum(self.rejected.values())
        lines = [f"{self.source} ({self.format}): {self.total} records, {self.imported} imported, "
                 f"{n_rejected} rejected -> {self.store} (method {self.method}, env {self.env})"]
        for reason, n in sorted(self.rejected.items(), key=lambda kv: -kv[1]):
            lines.append(f"  rejected {n:>6}  {reason}")
            lines += [f"      e.g. {e}" for e in self.examples.get(reason, [])]
        return "\n".join(lines)


# --- reading a source ------------------------------------------------------------------------------

def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = 1 + data.count(b"\n", 0, e.start)
        raise ImportSetError(f"{path}:{line}: not UTF-8 text (save the file as UTF-8)") from None


def _file_records(path: Path) -> Iterator[SourceRecord]:
    text = _decode(path.read_bytes(), path)
    try:
        whole: Any = json.loads(text)
    except JSON_ERRORS as e:
        if text.lstrip().startswith("["):  # one JSON array, broken: nothing in it can be trusted to line up
            line, problem = json_problem(e)
            raise ImportSetError(f"{path}{f':{line}' if line else ''}: not valid JSON ({problem})") from None
        whole = None  # JSON lines, each read (or rejected) on its own below
    if isinstance(whole, list):
        for i, raw in enumerate(whole):
            yield SourceRecord(f"{path}[{i}]", i, raw)
        return
    if isinstance(whole, dict):  # one record, maybe spread over several lines
        yield SourceRecord(f"{path}:1", 0, whole, 1)
        return
    if whole is not None:
        raise ImportSetError(f"{path}:1: expected a JSON array of records or JSON lines, got {type(whole).__name__}")
    index = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except JSON_ERRORS as e:  # rejected alone, as any other bad record: the rest of the import goes on
            raw = Rejected("invalid_json", f"not valid JSON ({json_problem(e)[1]})")
        yield SourceRecord(f"{path}:{lineno}", index, raw, lineno)
        index += 1


def _dataset_records(source: str, split: str) -> Iterator[SourceRecord]:
    from datasets import load_dataset  # heavy: only for dataset sources

    try:
        ds = load_dataset(source, split=split)
    except Exception as e:  # the Hub, a folder's files, a missing split: datasets raises many kinds
        raise ImportSetError(f"{source}: cannot load it as a dataset (split {split!r}): {type(e).__name__}: {e}") from e
    for i, raw in enumerate(ds):
        yield SourceRecord(f"{source}[{split}][{i}]", i, raw)


_FILE_SUFFIXES = (".json", ".jsonl", ".parquet", ".csv", ".arrow", ".txt", ".gz")


def _check_source(source: str) -> None:
    """A source that names a local path must be a file or a folder there: a missing one is "not found" rather
    than a Hub lookup (which would send the local path out and retry for half a minute), and a FIFO or device
    (which reads forever) is refused. A Hub id is ``name`` or ``owner/name`` whose owner is no local folder."""
    path = Path(source)
    if path.exists():
        if not (path.is_file() or path.is_dir()):
            raise ImportSetError(f"{source}: not a regular file or a dataset folder")
        return
    local = (source.startswith(("/", ".", "~")) or len(path.parts) > 2 or path.suffix in _FILE_SUFFIXES
             or (len(path.parts) == 2 and Path(path.parts[0]).is_dir()))
    if local:
        raise ImportSetError(f"{source}: file not found")


def read_source(source: str | Path, split: str = "train") -> Iterator[SourceRecord]:
    """The records of ``source``: a JSONL or JSON-array file read here (so problems name ``file:line``),
    else a local dataset folder or a Hub id loaded with ``datasets.load_dataset(source, split=split)``."""
    path = Path(source)
    if path.is_file():
        return _file_records(path)
    return _dataset_records(str(source), split)


# --- a record's turns ------------------------------------------------------------------------------

def _text(value: Any, where: str) -> str:
    """A turn's text: a string, or OpenAI content parts (``[{"type": "text", "text": ...}]``)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") for p in value if isinstance(p, dict)]
        if all(isinstance(p, str) for p in parts) and len(parts) == len(value):
            return "".join(parts)
    raise Rejected("bad_turn", f"{where}: text must be a string or a list of text parts, got {type(value).__name__}")


def _call_argument(arguments: Any, where: str) -> str:
    """The single argument of a structured call: actune actions take one (``search[entity]``)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip().startswith("{") else arguments
        except (json.JSONDecodeError, RecursionError):  # nested past Python's limit: kept as the text it is
            pass
    if isinstance(arguments, dict):
        values = [v for v in arguments.values() if v is not None]
        if len(values) != 1:
            raise Rejected("invalid_action", f"{where}: a call with {len(values)} arguments; actune actions take one")
        arguments = values[0]
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _call(value: Any, where: str) -> tuple[str, str]:
    """``(name, argument)`` of a ShareGPT ``function_call`` value or an OpenAI tool call."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nested past Python's limit
            raise Rejected("invalid_action", f"{where}: function call is not JSON: {value[:80]!r}") from None
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise Rejected("invalid_action", f"{where}: a function call needs a name")
    return value["name"], _call_argument(value.get("arguments"), where)


_OPENAI_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                 "tool": "observation", "function": "observation"}
_SHAREGPT_ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
                   "observation": "observation", "tool": "observation", "function_call": "assistant"}


def _message_turns(raw: dict, key: str, role_key: str, text_key: str, roles: dict[str, str]) -> list[Turn]:
    messages = raw.get(key)
    if not isinstance(messages, list) or not messages:
        raise Rejected("missing_field", f"no {key!r} list of turns")
    turns = []
    for i, m in enumerate(messages):
        where = f"{key}[{i}]"
        if not isinstance(m, dict):
            raise Rejected("bad_turn", f"{where}: a turn must be an object, got {type(m).__name__}")
        tag = m.get(role_key)
        if tag not in roles:
            raise Rejected("bad_turn", f"{where}: unknown {role_key} {tag!r} (known: {', '.join(roles)})")
        if tag == "function_call":
            turns.append(Turn("assistant", "", _call(m.get(text_key), where)))
            continue
        calls = m.get("tool_calls") or []
        if not isinstance(calls, list):
            raise Rejected("invalid_action", f"{where}: tool_calls must be a list of calls, got {type(calls).__name__}")
        if len(calls) > 1:
            raise Rejected("invalid_action", f"{where}: {len(calls)} tool calls in one turn; a step takes one action")
        turns.append(Turn(roles[tag], _text(m.get(text_key), where), _call(calls[0], where) if calls else None))
    return turns


_STEP_LABEL = re.compile(r"^\s*(thought|reflection|action|observation|final answer)\s*\d*\s*:", re.IGNORECASE)


def _output_turns(output: str) -> list[Turn]:
    """An Alpaca output split into turns at its labels: an ``Observation`` line starts an observation, a
    ``Thought``/``Reflection`` line always starts a new assistant turn (two in a row, with no observation
    between, are then caught as such), an ``Action`` line continues the assistant turn it follows; other
    lines continue the turn they are in."""
    turns: list[Turn] = []
    for line in output.split("\n"):
        m = _STEP_LABEL.match(line)
        label = m.group(1).lower() if m else None
        current = turns[-1].role if turns else None
        if label == "observation":
            role, new = "observation", True
        elif label in ("thought", "reflection"):
            role, new = "assistant", True
        elif label is not None or current is None:
            role, new = "assistant", current != "assistant"
        else:
            role, new = current, False
        if new:
            turns.append(Turn(role, line))
        else:
            turns[-1].text += "\n" + line
    return [Turn(t.role, t.text.strip()) for t in turns if t.text.strip()]


def record_turns(raw: Any, fmt: str) -> list[Turn]:
    """The turns of one source record (system turns included); raises :class:`Rejected`."""
    if isinstance(raw, Rejected):
        raise raw
    if not isinstance(raw, dict):
        raise Rejected("not_a_record", f"expected a JSON object, got {type(raw).__name__}")
    if fmt == "openai":
        return _message_turns(raw, "messages", "role", "content", _OPENAI_ROLES)
    if fmt == "sharegpt":
        key = "conversations" if "conversations" in raw else "messages"
        turns_in = raw.get(key)
        first = turns_in[0] if isinstance(turns_in, list) and turns_in else None
        openai_keys = isinstance(first, dict) and "from" not in first
        role_key, text_key = ("role", "content") if openai_keys else ("from", "value")
        turns = _message_turns(raw, key, role_key, text_key, _SHAREGPT_ROLES)
        system = raw.get("system")
        return ([Turn("system", system)] if isinstance(system, str) and system else []) + turns
    if fmt == "alpaca":
        instruction, extra, output = raw.get("instruction"), raw.get("input"), raw.get("output")
        if not isinstance(instruction, str) or not isinstance(output, str):
            raise Rejected("missing_field", "an Alpaca record needs string 'instruction' and 'output'")
        question = instruction if not (isinstance(extra, str) and extra.strip()) else f"{instruction}\n{extra}"
        system = raw.get("system")
        head = [Turn("system", system)] if isinstance(system, str) and system else []
        return head + [Turn("user", question)] + _output_turns(output)
    raise ImportSetError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


# --- turns -> a trajectory --------------------------------------------------------------------------

_QUESTION_LABEL = re.compile(r"^\s*(?:question|claim)\s*:\s*", re.IGNORECASE)
_OBSERVATION_LABEL = re.compile(r"^\s*observation\s*\d*\s*:\s*", re.IGNORECASE)
_REWARD = re.compile(r"reward\s*[=:]\s*([^\s,.;]+)", re.IGNORECASE)
_FAILED = {"false", "0", "0.0", "-1"}
_BLANK_LINES = re.compile(r"\n\s*\n")


def task_id_for(question: str) -> str:
    """A stable task id for a question: the same text (case and spacing aside) is the same task."""
    norm = " ".join(question.lower().split())
    return "q-" + hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def _episode_id(fmt: str, raw: Any) -> str:
    canon = json.dumps(raw, sort_keys=True, default=str)  # ASCII: a lone surrogate still hashes
    return hashlib.sha256(f"{fmt}\x1f{canon}".encode()).hexdigest()[:16]


@dataclass
class EnvActions:
    """What the imported steps are checked against and the instruction names."""

    name: str
    action_names: tuple[str, ...]
    finish_action: str
    actions: str


def env_actions(name: str) -> EnvActions:
    """The actions of env ``name``: a built-in of :data:`IMPORT_ENVS`, or a custom environment (``module:function``
    or an ``actune.envs`` entry point) built with no settings but its name, as it describes its own actions."""
    if is_builtin_env(name):
        return _builtin_env_actions(name)
    try:
        env = make_env(EnvConfig(name=name))
    except Exception as e:  # an unknown name (a ConfigError), or a factory that needs settings or data
        why = str(e).removeprefix("env.name: ") if isinstance(e, ConfigError) else f"{type(e).__name__}: {e}"
        raise ImportSetError(f"env {name!r}: its actions are read from the environment, built with no settings "
                             f"but its name, and it was not built: {why}") from e
    if env.finish_action is None:
        raise ImportSetError(f"env {name!r}: has no finish action, and imported records end with an answer")
    return EnvActions(env.name, tuple(env.action_names), env.finish_action, env.describe_actions())


def _builtin_env_actions(name: str) -> EnvActions:
    # lazy: the built-in envs import bm25s (numba with it, ~0.15 s), which a custom env's import never needs
    from actune.envs.fever_env import FeverEnv
    from actune.envs.wiki_env import WikiEnv  # lazy: bm25s, as above

    classes = {"wiki": WikiEnv, "fever": FeverEnv}
    if name not in classes:
        raise ImportSetError(f"env {name!r}: imported steps are checked against an environment whose actions are "
                             f"known without its data; one of {', '.join(IMPORT_ENVS)}, or your own "
                             "(module:function or an actune.envs entry point)")
    # The constructor only stores the backend: these objects describe their actions and are never stepped.
    env = classes[name](backend=None)
    return EnvActions(name, tuple(env.action_names), env.finish_action, env.describe_actions())


def _thought(text: str) -> str:
    # The loop stops a step at a blank line, so a tuned model could never write one inside a thought.
    return _BLANK_LINES.sub("\n", text).strip()


def _assistant_step(turn: Turn, env: EnvActions, last: bool, k: int) -> ParsedStep:
    """Parse one assistant turn with the loop's parser -> ParsedStep with an action or an answer."""
    text = turn.text
    if turn.call is not None:
        text = f"{text}\nAction: {turn.call[0]}[{turn.call[1]}]"
    parsed = parse_step(text, env.action_names, env.finish_action)
    if parsed.action_text is None and last and turn.call is None:
        # A prose last turn (chat and tool-calling sets) is the answer when it states one.
        reasoning, answer = parse_answer(turn.text)
        if answer is not None:
            parsed.thought, parsed.answer = reasoning, answer
            parsed.action_text, parsed.error = f"{env.finish_action}[{answer}]", None
    if parsed.answer is None and (parsed.action is None or parsed.error):
        reason = "no_action" if parsed.action_text is None else "invalid_action"
        raise Rejected(reason, f"assistant turn {k}: {parsed.error or 'no action'} ({turn.text[:80]!r})")
    return parsed


def to_trajectory(turns: list[Turn], env: EnvActions, method: str, *, split: str = "train") -> Trajectory:
    """The record the loop would have written for these turns (no verdict yet); raises :class:`Rejected`."""
    steps_format = import_methods()[method]
    thought_type = reason_type(steps_format)
    system = [t.text for t in turns if t.role == "system"]
    rest = [t for t in turns if t.role != "system"]
    if not rest or rest[0].role != "user" or not rest[0].text.strip():
        raise Rejected("no_question", "the first turn after any system prompt must be the user's question")
    question = _QUESTION_LABEL.sub("", rest[0].text, count=1).strip()
    last_assistant = max((i for i, t in enumerate(rest) if t.role == "assistant"), default=-1)
    steps: list[Step] = []
    answer: str | None = None
    after: list[str] = []
    waiting = False  # an action was taken and its observation has not come yet
    it = 0
    for k, turn in enumerate(rest[1:], 1):
        if turn.role == "assistant":
            if answer is not None:
                raise Rejected("after_answer", f"turn {k}: an assistant turn after the answer")
            if waiting:
                raise Rejected("missing_observation", f"turn {k}: two assistant turns with no observation between")
            it += 1
            parsed = _assistant_step(turn, env, k == last_assistant, k)
            steps.append(Step(thought_type, _thought(parsed.thought), it))
            if parsed.answer is not None:
                answer = parsed.answer.strip()
                steps.append(Step("answer", parsed.action_text or f"{env.finish_action}[{answer}]", it,
                                  action_name=env.finish_action, action_arg=answer))
            else:
                steps.append(Step("action", parsed.action_text or str(parsed.action), it,
                                  action_name=parsed.action.name, action_arg=parsed.action.argument))
                waiting = True
        elif answer is not None:
            after.append(turn.text)
        elif not waiting:
            raise Rejected("missing_action", f"turn {k}: a {turn.role} turn that follows no action")
        else:
            obs = " ".join(_OBSERVATION_LABEL.sub("", turn.text, count=1).strip().split("\n"))
            steps.append(Step("observation", obs, it))
            waiting = False
    if answer is None:
        raise Rejected("no_answer", "the record ends without a final answer (finish[...])")
    if not answer:
        raise Rejected("no_answer", "the final answer is empty")
    reward = next((m.group(1) for t in after for m in [_REWARD.search(t)] if m), None)
    if reward is not None and reward.lower() in _FAILED:
        raise Rejected("failed_episode", f"its last observation says it failed ({after[-1][:80]!r})")
    info: dict[str, Any] = {
        "prompt": {"method": steps_format, "env": env.name,
                   "instruction": instruction_for(steps_format, env.name, env.actions),
                   "question": question_line(env.name, question), "finish_action": env.finish_action},
        "env_info": {"titles": []}, "parse_errors": 0,
        "import": {"kept_because": KEPT_BECAUSE, "reward": reward, "after_answer": after, "system": system}}
    return Trajectory(task=TaskRecord(task_id_for(question), question, answer, env.name, split,
                                      meta={"answer_from": "the imported record's own final answer"}),
                      method=method, model=ModelRecord(name="unknown (imported)"), steps=steps,
                      prediction=answer, correct=True, finish_reason="answered", info=info)


# --- the import --------------------------------------------------------------------------------------

def import_set(source: str | Path, store: str | Path, fmt: str, *, env: str = "wiki", method: str = "react",
               split: str = "train") -> ImportSummary:
    """Import every record of ``source`` (format ``fmt``) into the trajectory store ``store``, as the module
    docstring says. Returns the counts; raises :class:`ImportSetError` when the source cannot be read at all
    and :class:`actune.records.store.StoreError` when the store cannot be used."""
    if fmt not in FORMATS:
        raise ImportSetError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if method not in import_methods():
        raise ImportSetError(f"method {method!r}: imported records are read as one of {', '.join(import_methods())}")
    environment = env_actions(env)
    _check_source(str(source))
    records = iter(read_source(source, split))
    summary = ImportSummary(str(source), fmt, str(store), method, env)
    first = next(records, None)
    if first is None:  # nothing to import: no store is created for it
        return summary
    records = itertools.chain([first], records)
    with TrajectoryStore.open(store) as st:
        earlier = {t.episode_id: t.info["import"].get("where", "") for t in read_trajectories(st.path)
                   if isinstance(t.info.get("import"), dict)}
        now: dict[str, str] = {}
        attempts: dict[tuple[str, str], int] = {}
        for task, m, attempt in st.state.done:
            attempts[(task, m)] = max(attempts.get((task, m), 0), attempt + 1)
        run_id = f"import-{hashlib.sha256(str(source).encode()).hexdigest()[:8]}"
        for rec in records:
            summary.total += 1
            try:
                traj = to_trajectory(record_turns(rec.raw, fmt), environment, method, split=split)
                episode = _episode_id(fmt, rec.raw)
                if episode in now:
                    raise Rejected("duplicate", f"the same record as {now[episode]}")
                if episode in earlier:
                    raise Rejected("already_imported", f"imported before from {earlier[episode]}")
                verdict = judge(traj, require_grounded=False)
                if not verdict.kept:
                    raise Rejected("order_problems", "; ".join(verdict.order_problems))
            except Rejected as why:
                summary.reject(rec, why)
                continue
            key = (traj.task.id, method)
            traj.attempt = attempts.get(key, 0)
            attempts[key] = traj.attempt + 1
            traj.episode_id, traj.run_id = episode, run_id
            traj.info["import"].update({"format": fmt, "source": str(source), "where": rec.where,
                                        "index": rec.index, "line": rec.line})
            st.append(record_verdict(traj, verdict))
            now[episode] = rec.where
            summary.imported += 1
    return summary
