"""Few-shot exemplars: structured JSON (actune/prompts/<env>.json) and the ReAct repo's prompt files.

Structured format (one file per environment, rendered into any method's wire format)::

    {"env": "wiki", "source": "...", "exemplars": [
      {"question": "...", "kind": "bridge", "answer": "Y", "cot": "reasoning ...",
       "steps": [{"thought": "...", "reflection": "...", "action": "search[X]", "observation": "..."},
                 {"thought": "...", "reflection": "...", "action": "finish[Y]"}]}]}

An exemplar may also carry ``initial_observation`` (ALFWorld: the room description).

A set may name its ``style``: ``every_step`` (the default: a thought or reflection on every step) or
``sparse_think``, the form ReAct's paper evaluated on ALFWorld: no thought lines, reasoning only where it
helps, as the action ``think: ...`` that the environment answers ``OK.`` (``alfworld_sparse.json``). The
style fixes the loop's step format, so it holds in the zero-shot regime too.

The ReAct repository's own prompt files ship beside them, byte for byte (``react_prompts_naive.json``,
``react_fever.json``, ``react_alfworld_3prompts.json``; ``react_paper_sources.json`` names their commit, hashes
and license): ``AgentConfig.fidelity: paper`` reads them (:func:`paper_prompt_file`, :func:`paper_prompt_key`,
:func:`load_paper_alfworld_examples`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actune.config import ConfigError
from actune.records.jsonl import read_json

__all__ = [
    "ExemplarStep",
    "Exemplar",
    "ExemplarSet",
    "ExemplarError",
    "exemplar_path",
    "builtin_sets",
    "load_exemplars",
    "select_exemplars",
    "load_paper_prompt",
    "PAPER_KEY_METHODS",
    "PAPER_PROMPT_FILES",
    "paper_prompt_file",
    "paper_prompt_key",
    "load_paper_alfworld_examples",
    "BUILTIN_DIR",
    "EVERY_STEP",
    "SPARSE_THINK",
]

BUILTIN_DIR = Path(__file__).resolve().parents[1] / "prompts"

EVERY_STEP = "every_step"
SPARSE_THINK = "sparse_think"
_STYLES = (EVERY_STEP, SPARSE_THINK)

#: ReAct repository prompt keys -> the method they prompt (prefix before "_simple").
PAPER_KEY_METHODS = {"webthink": "react", "webact": "act", "cotqa": "cot", "webqa": "standard"}
_PAPER_KEY_PREFIX = {method: prefix for prefix, method in PAPER_KEY_METHODS.items()}

#: The ReAct repository's prompt file of each environment, as its notebooks load them (hotpotqa.ipynb
#: prompts_naive.json, FEVER.ipynb fever.json, alfworld.ipynb alfworld_3prompts.json), bundled byte for byte.
PAPER_PROMPT_FILES = {"wiki": "react_prompts_naive.json", "fever": "react_fever.json",
                      "alfworld": "react_alfworld_3prompts.json"}
#: The key suffix of the paper's runs: HotpotQA's six trajectories, FEVER's three.
_PAPER_KEY_SUFFIX = {"wiki": "simple6", "fever": "simple3"}
#: ALFWorld's keys are ``<method>_<task type>_<n>``, for these methods.
_ALFWORLD_METHODS = ("react", "act")


class ExemplarError(ConfigError):
    """An exemplar or prompt file is missing, malformed or unfit for the environment; the message names the file
    and key. A config error: the config names the file, and the commands report it as one."""


@dataclass
class ExemplarStep:
    thought: str = ""
    reflection: str = ""
    action: str = ""
    observation: str = ""


@dataclass
class Exemplar:
    question: str
    answer: str
    kind: str = ""
    cot: str = ""
    initial_observation: str = ""
    steps: list[ExemplarStep] = field(default_factory=list)


@dataclass
class ExemplarSet:
    env: str
    source: str
    exemplars: list[Exemplar]
    name: str = ""
    style: str = EVERY_STEP


def _str(d: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    if key not in d:
        if required:
            raise ExemplarError(f"{where}: missing key {key!r}")
        return ""
    v = d[key]
    if not isinstance(v, str):
        raise ExemplarError(f"{where}.{key}: must be a string, got {type(v).__name__}")
    return v


def exemplar_path(name_or_path: str | Path) -> Path:
    """The file a set name (``wiki`` -> actune/prompts/wiki.json) or path stands for, there or not."""
    p = Path(name_or_path)
    # A run folder named like a set (``runs/alfworld`` run from ``runs/``) must not shadow the built-in set:
    # only a file is taken as a path.
    return BUILTIN_DIR / f"{name_or_path}.json" if not p.suffix and not p.is_file() else p


def builtin_sets() -> list[str]:
    """The names of the sets actune ships: the files of :data:`BUILTIN_DIR` in this format (not the paper's)."""
    names = []
    for p in sorted(BUILTIN_DIR.glob("*.json")):
        data = read_json(p, ExemplarError, "exemplar file")
        if isinstance(data, dict) and isinstance(data.get("exemplars"), list):
            names.append(p.stem)
    return names


def load_exemplars(name_or_path: str | Path) -> ExemplarSet:
    """Load a structured exemplar set: a built-in name (``wiki``...) or a JSON file path."""
    p = exemplar_path(name_or_path)
    data = read_json(p, ExemplarError, "exemplar file")
    if not isinstance(data, dict) or not isinstance(data.get("exemplars"), list):
        raise ExemplarError(f"{p}: expected an object with an 'exemplars' list")
    style = data.get("style", EVERY_STEP)
    if style not in _STYLES:
        raise ExemplarError(f"{p}: style: must be one of {list(_STYLES)}, got {style!r}")
    known_ex = {"question", "answer", "kind", "cot", "initial_observation", "steps"}
    known_step = {"thought", "reflection", "action", "observation"}
    out = []
    for i, e in enumerate(data["exemplars"]):
        where = f"{p}: exemplars[{i}]"
        if not isinstance(e, dict):
            raise ExemplarError(f"{where}: must be an object")
        extra = sorted(set(e) - known_ex)
        if extra:
            raise ExemplarError(f"{where}: unknown key {extra[0]!r}")
        steps = []
        for j, s in enumerate(e.get("steps", [])):
            sw = f"{where}.steps[{j}]"
            if not isinstance(s, dict):
                raise ExemplarError(f"{sw}: must be an object")
            extra = sorted(set(s) - known_step)
            if extra:
                raise ExemplarError(f"{sw}: unknown key {extra[0]!r}")
            steps.append(ExemplarStep(**{k: _str(s, k, sw, required=(k == "action")) for k in known_step}))
        out.append(
            Exemplar(
                question=_str(e, "question", where, required=True),
                answer=_str(e, "answer", where, required=True),
                kind=_str(e, "kind", where),
                cot=_str(e, "cot", where),
                initial_observation=_str(e, "initial_observation", where),
                steps=steps,
            )
        )
    return ExemplarSet(env=str(data.get("env", "")), source=str(data.get("source", "")), exemplars=out,
                       name=str(name_or_path), style=style)


def select_exemplars(
    exemplar_set: ExemplarSet, kinds: list[str] | None = None, k: int | None = None
) -> list[Exemplar]:
    """Exemplars of the given kinds (all when None), at most ``k``, in file order."""
    chosen = [e for e in exemplar_set.exemplars if not kinds or e.kind in kinds]
    if kinds and not chosen:
        have = sorted({e.kind for e in exemplar_set.exemplars})
        raise ExemplarError(f"exemplar set {exemplar_set.name!r} has no exemplar of kinds {kinds} (has {have})")
    return chosen[:k] if k else chosen


def load_paper_prompt(path: str | Path, key: str) -> tuple[str, str]:
    """Read one prompt of the ReAct repository's JSON files -> (method, prompt text).

    The text is used as is (the paper's exact few-shot block); the method comes from the key prefix.
    """
    p = Path(path)
    data = read_json(p, ExemplarError, "prompt file")
    if not isinstance(data, dict) or key not in data:
        keys = sorted(data) if isinstance(data, dict) else []
        raise ExemplarError(f"{p}: no prompt key {key!r} (has {keys})")
    text = data[key]
    if not isinstance(text, str):
        raise ExemplarError(f"{p}: {key}: must be a string")
    prefix = key.split("_", 1)[0]
    method = PAPER_KEY_METHODS.get(prefix)
    if method is None:
        raise ExemplarError(f"{p}: key {key!r} does not name a known method prefix ({sorted(PAPER_KEY_METHODS)})")
    return method, text


def paper_prompt_file(env: str, path: str | Path | None = None) -> Path:
    """The ReAct prompt file of ``env``: ``path`` when given, else the bundled copy of the paper's."""
    if path is not None:
        return Path(path)
    if env not in PAPER_PROMPT_FILES:
        raise ExemplarError(f"the ReAct paper has no prompt file for environment {env!r} (it has "
                            f"{sorted(PAPER_PROMPT_FILES)}): name one with paper_prompt_file")
    return BUILTIN_DIR / PAPER_PROMPT_FILES[env]


def paper_prompt_key(method: str, env: str, key: str | None = None) -> str:
    """The key of ``method``'s prompt in the paper's HotpotQA or FEVER file. ``key`` (``paper_prompt_key``)
    names the variant by its suffix: ``webthink_simple6`` gives CoT ``cotqa_simple6``, so a hybrid's second
    phase reads the same variant of its own method; None: the paper's (HotpotQA ``simple6``, FEVER
    ``simple3``)."""
    if method not in _PAPER_KEY_PREFIX:
        raise ExemplarError(f"the ReAct paper's prompt files have no prompt for method {method!r}")
    suffix = key.split("_", 1)[1] if key and "_" in key else _PAPER_KEY_SUFFIX.get(env)
    if suffix is None:
        raise ExemplarError(f"no paper prompt key for environment {env!r}: set paper_prompt_key")
    return f"{_PAPER_KEY_PREFIX[method]}_{suffix}"


def load_paper_alfworld_examples(path: str | Path, method: str, kind: str | None) -> str:
    """The two trajectories ReAct prompted an ALFWorld game of type ``kind`` with, as alfworld.ipynb
    concatenates them: ``d[f"react_{v}_1"] + d[f"react_{v}_0"]`` (``act_`` for Act)."""
    if method not in _ALFWORLD_METHODS:
        raise ExemplarError(f"the ReAct paper prompted ALFWorld with react or act, not {method!r}")
    if not kind:
        raise ExemplarError("the ReAct paper prompts an ALFWorld game with trajectories of its type: the task "
                            "names none (task.meta['task_type'])")
    p = Path(path)
    data = read_json(p, ExemplarError, "prompt file")
    keys = [f"{method}_{kind}_{n}" for n in (1, 0)]
    missing = [k for k in keys if not isinstance(data, dict) or not isinstance(data.get(k), str)]
    if missing:
        raise ExemplarError(f"{p}: no prompt key {missing[0]!r}")
    return "".join(data[k] for k in keys)
