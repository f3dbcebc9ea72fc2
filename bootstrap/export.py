"""Export the kept records of bootstrap stores as one training dataset (``datasets`` on disk).

    summary = export_dataset("runs/store/trajectories.jsonl", "runs/dataset", wire="text")
    summary = export_dataset([react_store, cot_store], "runs/dataset", "text",
                             ExportConfig(steps_method="react", method_shares={"react": 0.7, "cot": 0.3}))

The records of all stores pass FireAct-style filters (kept only, converted to one step format, near-duplicates
dropped, capped per task, drawn in given method or store shares if asked), and each survivor is rendered as the
zero-shot episode a fine-tuned model will see and write in the loop (``trajectory_prompt_context`` +
``render_text``/``render_messages``), so training data and evaluation prompts cannot drift apart. Two layouts,
``text`` (segments) and ``chat`` (messages), each part flagged ``train``: only what the agent wrote is trained.
The folder is written whole or not at all, with an ``export_summary.json`` (:class:`ExportSummary`) and a
dataset card, and an export replaces only its own earlier output (:func:`claim_folder`).

The rules in full: docs/modules.md, actune.bootstrap.export.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import json
import random
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from actune.agent.config import WIRES, Wire
from actune.agent.method_registry import convertible, is_reflective, step_format
from actune.agent.reflection_parts import reflection_part_problems
from actune.agent.render import (
    COT_PREFIX,
    USER_STEP_TYPES,
    assistant_turns_trained,
    episode_segments,
    instruction_for,
    render_messages,
    render_text,
    trajectory_prompt_context,
)
from actune.agent.tool_calls import render_tool_messages, tools_for
from actune.bootstrap.config import ExportConfig
from actune.bootstrap.dataset_card import CARD_FILE, card_settings, dataset_card
from actune.bootstrap.export_summary import ExportSummary, MethodCounts
from actune.bootstrap.gold_paths import GOLD_PATH_MODEL
from actune.envs.actions import parse_described
from actune.judge import Verdict, verdict_of
from actune.records.atomic_write import check_output, output_lock, recover_folder, replace_folder, temp_folder_beside
from actune.records.trajectory import Step, Trajectory, read_trajectory_lines
from actune.runtime.provenance import provenance

__all__ = ["ExportError", "ExportSummary", "MethodCounts", "OWN_FOLDER_MARKERS", "OutputRefused", "SUMMARY_FILE",
           "WIRE_FORMATS", "chat_example", "claim_folder", "convert_steps", "convertible", "export_dataset",
           "export_rows", "judge_counts", "kept_records", "origin", "near_duplicates", "store_paths", "text_example",
           "text_turns_example", "tools_example", "write_export"]

SUMMARY_FILE = "export_summary.json"
#: The files that mark a folder as an export's own: its summary, or DPO's (:mod:`actune.bootstrap.preference_pairs`,
#: which builds on this module, so it is named here rather than imported).
OWN_FOLDER_MARKERS = (SUMMARY_FILE, "pairs_summary.json")

WIRE_FORMATS = WIRES


class ExportError(RuntimeError):
    """The store cannot be exported (missing, no kept records, a record that does not render)."""


class OutputRefused(ExportError):
    """The output would replace an input, or something no export wrote; nothing was changed."""


def _is_own_folder(out: Path) -> bool:
    """An export's own folder (a marker file inside), or an empty one: nothing to lose."""
    if out.is_symlink() or not out.is_dir():
        return False
    return any((out / m).is_file() for m in OWN_FOLDER_MARKERS) or not any(out.iterdir())


@contextlib.contextmanager
def claim_folder(out_dir: str | Path, inputs: Sequence[str | Path], overwrite: bool = False) -> Iterator[None]:
    """Hold ``out_dir``'s lock for the ``with`` block, after putting back a folder a crashed swap left aside and
    refusing (:class:`OutputRefused`) an ``out_dir`` that is or holds one of ``inputs``, or that exists without an
    export's mark (:data:`OWN_FOLDER_MARKERS`) unless ``overwrite``."""
    out = Path(out_dir)
    with output_lock(out, ExportError):
        recover_folder(out)
        check_output(out, inputs, OutputRefused, own=_is_own_folder(out), overwrite=overwrite,
                     mine=f"an export's folder holds {' or '.join(OWN_FOLDER_MARKERS)}")
        yield


def judged_lines(store: str | Path) -> Iterator[tuple[int, Trajectory, Verdict]]:
    """(line number, record, verdict) of every record of a store, in file order. A missing store or a record
    without a verdict (which the store itself refuses) is an :class:`ExportError` naming file and line."""
    path = Path(store)
    if not path.is_file():
        raise ExportError(f"{path}: store not found (run `actune bootstrap` first)")
    # the shared reader: a torn last line (a writer killed mid-line) is skipped, any other bad line named
    for lineno, t in read_trajectory_lines(path):
        verdict = verdict_of(t)
        if verdict is None:
            raise ExportError(f"{path}:{lineno}: record has no judge verdict (info.verdict); is this a trajectory "
                              "store written by bootstrap or eval?")
        yield lineno, t, verdict


def _kept_lines(store: str | Path) -> list[tuple[int, Trajectory]]:
    """(line number, record) of the kept records of a store, in file order."""
    return [(lineno, t) for lineno, t, verdict in judged_lines(store) if verdict.kept]


def kept_records(store: str | Path) -> list[Trajectory]:
    """The records of a store whose verdict says kept, in file order (errors name ``file:line``)."""
    return [t for _, t in _kept_lines(store)]


def judge_counts(kept: Iterable[Trajectory]) -> dict[str, int]:
    """How the ``kept`` records were judged: kept, kept with grounding required (of them, grounded at the evidence
    level: the supporting sentences shown), kept on correctness alone (grounding not required, or not applicable to
    the method), and kept without a grounding check (the task names no supporting pages)."""
    out = Counter({"kept": 0, "grounding_required": 0, "grounded_evidence": 0, "grounding_not_required": 0,
                   "grounding_not_applicable": 0, "grounding_unchecked": 0})
    for v in filter(None, map(verdict_of, kept)):
        out["kept"] += 1
        if not v.grounding_applies:
            out["grounding_not_applicable"] += 1
        elif v.require_grounded:
            out["grounding_required"] += 1
            out["grounding_unchecked"] += int(not v.grounding_checked)
            out["grounded_evidence"] += int(v.grounding_checked and v.grounding_level == "evidence")
        else:
            out["grounding_not_required"] += 1
    return dict(out)


def origin(t: Trajectory) -> str:
    """Where an episode came from: ``imported`` (``actune import``), ``scripted`` (gold paths), ``bootstrapped``."""
    if isinstance(t.info.get("import"), dict):
        return "imported"
    return "scripted" if t.model.name == GOLD_PATH_MODEL else "bootstrapped"


# --- conversion into the adapter's step format ---------------------------------------------------

def _one_line(text: str) -> str:
    return " ".join(text.split())


def _final_answer(traj: Trajectory) -> tuple[Step | None, str | None]:
    """The answer step of a record (None if it has none) and the answer."""
    answers = [s for s in traj.steps if s.type == "answer"]
    step = answers[-1] if answers else None
    arg = step.action_arg if step is not None and step.action_arg is not None else traj.prediction
    return step, arg


def _reasoning(traj: Trajectory, source: str) -> tuple[str, list[Step]]:
    """What the record reasoned, on one line, and the steps that held it: a CoT's chain of thought without the
    ``Let's think step by step.`` the CoT prompt wrote (the model did not write it); the thoughts or reflections of
    an acting episode, each on one line, joined by spaces in order (empty ones left out); nothing for Standard."""
    f = step_format(source)
    acting = f is not None and f.acting
    kinds = ("thought", "reflection") if acting else (f.reason_type,) if f is not None and f.reason_type else ()
    held = [s for s in traj.steps if s.type in kinds]
    text = " ".join(t for t in (_one_line(s.text) for s in held) if t)
    if not acting:
        text = text.removeprefix(COT_PREFIX).strip()
    return text, held


def _answer_step(text: str, name: str, answer: str, like: Step | None) -> Step:
    """Step 1's answer with ``like``'s tokens, latency and meta (the answer step it replaces)."""
    a = like or Step("answer", "", 1)
    return Step("answer", text, 1, action_name=name, action_arg=answer, tokens=a.tokens, latency_s=a.latency_s,
                meta=a.meta)


def _direct_steps(out: Trajectory, source: str, steps_method: str, finish: str) -> list[Step] | None:
    """The steps of a one-step episode in ``steps_method`` (react, reflact, act, cot, standard): the record's
    reasoning (:func:`_reasoning`) and its answer; None for a record without an answer."""
    answer_step, answer = _final_answer(out)
    if answer is None:
        return None
    reasoning, held = _reasoning(out, source)
    t = step_format(steps_method)
    assert t is not None
    if t.reason_type is None:  # Standard: the answer; Act: the finish action
        return [_answer_step(f"{finish}[{answer}]", finish, answer, answer_step) if t.acting
                else _answer_step(answer, "answer", answer, answer_step)]
    if not t.acting:  # CoT: the reasoning steps' cost adds up into the one thought that now holds them
        thought = Step(t.reason_type, f"{COT_PREFIX} {reasoning}".strip(), 1, tokens=sum(s.tokens for s in held),
                       latency_s=sum(s.latency_s for s in held))
        return [thought, _answer_step(answer, "answer", answer, answer_step)]
    first = held[0] if held else None
    lead = (Step(t.reason_type, reasoning, 1, tokens=first.tokens, latency_s=first.latency_s, meta=first.meta)
            if first is not None else Step(t.reason_type, "", 1))
    text = f"FINAL ANSWER: {answer}" if t.reflections else f"{finish}[{answer}]"
    return [lead, _answer_step(text, finish, answer, answer_step)]


def _is_think(s: Step) -> bool:
    """A ReAct sparse-form thought (ALFWorld): the action ``think: ...``, which the game answers ``OK.``."""
    return s.type == "action" and (s.action_name or "").lower().rstrip(":") == "think"


def _acting_steps(out: Trajectory, source: str, finish: str | None) -> list[Step]:
    """A ReAct or ReflAct record's steps as Act's: its thoughts and reflections (and a sparse form's ``think``
    actions with the game's ``OK.``) left out, the other steps renumbered 1, 2, ... in order, ReflAct's
    ``FINAL ANSWER: x`` written as the action ``finish[x]``."""
    kept: list[Step] = []
    think_at: int | None = None  # the iteration of the last think action: its observation goes with it
    for s in out.steps:
        if s.type in ("thought", "reflection") or _is_think(s):
            think_at = s.iteration if _is_think(s) else think_at
            continue
        if s.type == "observation" and s.iteration == think_at:
            continue
        if s.type == "answer" and is_reflective(source):
            s = replace(s, text=f"{finish or 'finish'}[{s.action_arg or ''}]")
        kept.append(s)
    numbers = {it: n for n, it in enumerate(dict.fromkeys(s.iteration for s in kept), 1)}
    return [replace(s, iteration=numbers[s.iteration]) for s in kept]


def _reflections_as_thoughts(out: Trajectory, finish: str | None) -> list[Step]:
    """reflact -> react: each reflection a thought with the same text, ``FINAL ANSWER: x`` the action ``finish[x]``."""
    steps = []
    for s in out.steps:
        if s.type == "reflection":
            s = replace(s, type="thought")
        elif s.type == "answer":
            s.text = f"{finish or 'finish'}[{s.action_arg or ''}]"
        steps.append(s)
    return steps


def _converted_steps(out: Trajectory, source: str, steps_method: str, finish: str | None) -> list[Step] | None:
    """``out``'s steps in ``steps_method`` (a format :func:`convertible` from ``source``, not the same), or None."""
    s, t = step_format(source), step_format(steps_method)
    if s is not None and t is not None and s.acting and t.acting:
        return _acting_steps(out, source, finish) if t.reason_type is None else _reflections_as_thoughts(out, finish)
    if finish is None:  # ALFWorld: the environment, not an answer, ends an episode
        return None
    return _direct_steps(out, source, steps_method, finish)


def convert_steps(traj: Trajectory, steps_method: str, instruction: str | None = None) -> Trajectory | None:
    """A copy of ``traj`` whose steps are in ``steps_method``'s format (react, reflact, act, cot, standard), or
    None when its steps cannot be (:func:`~actune.agent.method_registry.convertible`). ``traj`` is never changed.

    The source format is the record's ``info.prompt.method`` (the format its steps are in: a hybrid
    that answered in its ReAct phase holds ReAct steps, one that answered by CoT-SC holds CoT steps).
    Rules (tokens, latency and meta of every step kept are kept):

    - same format: the record as is (a copy);
    - reflact -> react: each reflection becomes a thought with the same text; a ``FINAL ANSWER: x``
      becomes the action ``finish[x]``;
    - react, reflact -> act: the thoughts and reflections are left out (ReAct's sparse form, ALFWorld: its
      ``think:`` actions and the game's ``OK.`` too), every other step kept in order and renumbered from 1
      (``Action i:`` follows the steps), a ``FINAL ANSWER: x`` written ``finish[x]``;
    - react, reflact -> cot: one thought ``Let's think step by step. <reasoning>``, the reasoning the episode's
      thoughts or reflections, each on one line, joined by spaces in order (the observations are left out: CoT
      reads no pages), then the answer (``Answer: x``), both step 1, as the loop's CoT writes its episodes; the
      thought's tokens and latency are the reasoning steps' sums;
    - any -> standard: the answer alone (``Answer: x``), step 1;
    - cot (CoT, CoT-SC) -> react: one thought holding the chain of thought, then ``finish[answer]``,
      both step 1; the ``Let's think step by step.`` the CoT prompt wrote is dropped (the model did not
      write it, and a tuned ReAct model should not learn to) and the reasoning is put on one line (the
      ReAct loop stops a step at a blank line and at a new ``Thought``, so it could not produce more);
    - standard -> react: nothing is invented: an empty thought (the loop writes ``Thought 1:`` before
      every step, so a record always opens with one) and ``finish[answer]``;
    - cot/standard -> reflact: the same, the reasoning as one reflection and ``FINAL ANSWER: answer``;
    - cot/standard -> act: the action ``finish[answer]`` alone, step 1;
    - anything else (react -> reflact, act -> react or cot, standard -> cot, preflect): None. Between a direct
      answer (cot, standard) and an acting format, a record of an environment without a finish action (ALFWorld)
      is None too: there the environment, not an answer, ends an episode.

    A converted record's ``info.prompt`` is the head of ``steps_method`` (``instruction`` is its
    instruction, required when the formats differ; no sparse ``style``) and ``info.converted_from`` names the
    source format, so ``trajectory_prompt_context`` + ``render_text``/``render_messages`` render it exactly as
    a record the loop collected with ``steps_method``.
    """
    ctx = trajectory_prompt_context(traj)
    source = ctx.method
    if not convertible(source, steps_method):
        return None
    out = copy.deepcopy(traj)
    if source == steps_method:
        return out
    if instruction is None:
        raise ValueError(f"converting {source} steps into {steps_method} needs the {steps_method} instruction")
    steps = _converted_steps(out, source, steps_method, ctx.finish_action)
    if steps is None:
        return None
    out.steps = steps
    head = {k: v for k, v in out.info["prompt"].items() if k != "style"}  # Act, CoT, Standard: every step written
    out.info["prompt"] = {**head, "method": steps_method, "instruction": instruction}
    out.info["converted_from"] = source
    return out


# --- dedupe ---------------------------------------------------------------------------------------

def _norm(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def _actions(traj: Trajectory) -> tuple[tuple[str, str], ...]:
    """The episode's actions, normalised; an answer is one action whatever its name (finish/answer)."""
    out = []
    for s in traj.steps:
        if s.type == "answer":
            out.append(("answer", _norm(s.action_arg)))
        elif s.type == "action":
            out.append(((s.action_name or "").lower(), _norm(s.action_arg if s.action_name else s.text)))
    return tuple(out)


def _written(traj: Trajectory) -> str:
    """What the model wrote besides actions (thoughts, reflections, plans), normalised."""
    return "\n".join(_norm(s.text) for s in traj.steps if s.type in ("thought", "reflection", "plan"))


def near_duplicates(a: Trajectory, b: Trajectory, similarity: float) -> bool:
    """Same normalised actions and written text at least ``similarity`` alike (``difflib`` ratio)."""
    if _actions(a) != _actions(b):
        return False
    x, y = _written(a), _written(b)
    if x == y:
        return True
    m = difflib.SequenceMatcher(None, x, y, autojunk=False)  # autojunk would skip spaces, letters of long texts
    # the quick ratios are upper bounds: most pairs are told apart without the quadratic match
    return m.real_quick_ratio() >= similarity and m.quick_ratio() >= similarity and m.ratio() >= similarity


def _meta(traj: Trajectory, wire: str) -> dict[str, Any]:
    return {"episode_id": traj.episode_id, "task_id": traj.task.id, "run_id": traj.run_id,
            "attempt": traj.attempt, "method": traj.method, "source_method": traj.method,
            "steps_method": trajectory_prompt_context(traj).method,
            "env": traj.task.env, "wire": wire, "question": traj.task.question, "answer": traj.task.answer,
            "prediction": traj.prediction or "", "num_steps": len(traj.steps)}


def text_example(traj: Trajectory) -> dict[str, Any]:
    """One record as a text-format example (``segments``, ``text`` and metadata)."""
    segments = episode_segments(traj)
    text = "".join(s["text"] for s in segments)
    # the renderer changed so that steps no longer compose
    if text != render_text(trajectory_prompt_context(traj), traj.steps):
        raise ExportError(f"episode {traj.episode_id!r}: segments do not concatenate to the rendered episode")
    return {**_meta(traj, "text"), "segments": segments, "text": text}


def text_turns_example(traj: Trajectory) -> dict[str, Any]:
    """One record as the text wire's trained turns: ``turns`` of ``{"prompt": the text before the turn,
    "completion": the turn}``, a turn being the steps between two observations as the chat wire groups them (a
    thought with its action: a trainer that ends each completion with EOS never puts one between them), each turn
    :func:`assistant_turns_trained` keeps."""
    segments = episode_segments(traj)
    trained = iter(assistant_turns_trained(traj.steps))
    turns: list[dict[str, str]] = []
    prompt, turn = segments[0]["text"], ""
    for step, seg in [*zip(traj.steps, segments[1:]), (None, None)]:
        if step is not None and step.type not in USER_STEP_TYPES:
            turn += seg["text"]
            continue
        if turn and next(trained):
            turns.append({"prompt": prompt, "completion": turn})
        prompt, turn = prompt + turn + (seg["text"] if seg else ""), ""
    return {**_meta(traj, "text"), "turns": turns}


def chat_example(traj: Trajectory) -> dict[str, Any]:
    """One record as a chat-format example (``messages`` with per-turn ``train`` flags, and metadata)."""
    ctx = trajectory_prompt_context(traj)
    messages = render_messages(ctx, traj.steps)
    trained = iter(assistant_turns_trained(traj.steps))
    out = [{"role": m["role"], "content": m["content"], "train": m["role"] == "assistant" and next(trained)}
           for m in messages]
    return {**_meta(traj, "chat"), "messages": out}


def tools_example(traj: Trajectory) -> dict[str, Any]:
    """One record as a tools-wire example: OpenAI ``messages`` with tool calls and per-turn ``train`` flags, and
    ``tools`` (a JSON string: Arrow would give every tool's schema the properties of all the others)."""
    ctx = trajectory_prompt_context(traj)
    specs = parse_described(ctx.instruction)
    if not specs:
        raise ValueError("its instruction names no action as 'name[argument]: help': it cannot be offered as tools")
    return {**_meta(traj, "tools"), "messages": render_tool_messages(ctx, traj.steps, specs),
            "tools": json.dumps(tools_for(specs), ensure_ascii=False)}


@dataclass
class _Item:
    traj: Trajectory  # converted
    store: Path
    line: int

    @property
    def where(self) -> str:
        return f"{self.store}:{self.line}: episode {self.traj.episode_id!r} (task {self.traj.task.id!r})"


def _source_method(it: _Item) -> str:
    return it.traj.method


def _source_store(it: _Item) -> str:
    return str(it.store)


def _share_counts(shares: Mapping[str, float], available: Mapping[str, int]) -> dict[str, int]:
    """Examples per method: the largest total N with share*N <= available for every method, split by
    largest remainder (ties: the order of ``shares``), so no method gets more than it has."""
    w = {m: Fraction(str(v)) for m, v in shares.items()}  # str: 0.7 is 7/10, not the float's binary value
    total_w = sum(w.values())
    w = {m: v / total_w for m, v in w.items()}
    n = min(int(Fraction(available.get(m, 0)) / v) for m, v in w.items())
    quota = {m: v * n for m, v in w.items()}
    counts = {m: int(q) for m, q in quota.items()}
    order = sorted(w, key=lambda m: -(quota[m] - counts[m]))  # stable: ties keep the shares' order
    for m in order[: n - sum(counts.values())]:
        counts[m] += 1
    return counts


def _store_shares(shares: Mapping[str, float], stores: Sequence[Path]) -> dict[str, float]:
    """``store_shares`` keyed by the exported stores' own paths (a key names its store by any spelling of the
    same path), or an :class:`ExportError` naming a key that is none of them."""
    by_path = {p.resolve(): str(p) for p in stores}
    out = {}
    for key, share in shares.items():
        store = by_path.get(Path(key).resolve())
        if store is None:
            raise ExportError(f"store_shares.{key}: not one of the exported stores "
                              f"({', '.join(map(str, stores))}: bootstrap.store and bootstrap.export.stores)")
        if store in out:
            raise ExportError(f"store_shares.{key}: the store {store} has a share already (under another spelling)")
        out[store] = share
    return out


def _draw(items: list[_Item], count: int, rng: random.Random) -> list[_Item]:
    """``count`` of ``items`` spread across tasks: one per task (tasks in a seeded order) per round,
    each task's in store order."""
    by_task: dict[str, list[_Item]] = {}
    for it in items:
        by_task.setdefault(it.traj.task.id, []).append(it)
    tasks = list(by_task)
    rng.shuffle(tasks)
    chosen: list[_Item] = []
    depth = 0
    while len(chosen) < count:
        for t in tasks:
            if depth < len(by_task[t]) and len(chosen) < count:
                chosen.append(by_task[t][depth])
        depth += 1
    return chosen


def _target_instruction(items: list[tuple[Path, int, Trajectory]], steps_method: str,
                        actions: Mapping[str, str] | Callable[[str], str] | None) -> Callable[[str], str]:
    """env -> the ``steps_method`` instruction for records converted from another format: the one a
    record collected in that format carries (first in store order: exactly what the loop showed), else
    ``instruction_for`` with the environment's actions from ``actions`` (CoT's and Standard's name no action)."""
    native: dict[str, str] = {}
    for _, _, t in items:
        p = t.info.get("prompt")
        if isinstance(p, dict) and p.get("method") == steps_method and isinstance(p.get("instruction"), str):
            native.setdefault(p.get("env", ""), p["instruction"])

    fmt = step_format(steps_method)

    def get(env: str) -> str:
        if env not in native and fmt is not None and not fmt.acting:
            native[env] = instruction_for(steps_method, env, "")
        if env not in native:
            try:
                text = actions.get(env) if isinstance(actions, Mapping) else actions(env) if actions else None
            except ExportError:
                raise
            except Exception as e:  # building an environment can fail for reasons of its own
                raise ExportError(f"the {env} environment's actions (for the {steps_method} instruction): {e}") from e
            if text is None:
                raise ExportError(f"records of env {env!r} need converting into {steps_method} steps, but no "
                                  f"{steps_method} record of that env is exported and its actions are not known")
            native[env] = instruction_for(steps_method, env, text)
        return native[env]

    return get


def export_rows(
    stores: str | Path | Sequence[str | Path],
    wire: Wire = "text",
    config: ExportConfig | None = None,
    *,
    actions: Mapping[str, str] | Callable[[str], str] | None = None,
    example: Callable[[Trajectory], dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], ExportSummary]:
    """The examples :func:`export_dataset` would write (rows of ``text_example``/``chat_example`` plus
    ``source_store``) and the summary, written nowhere: the other output formats start from these. ``example``
    makes each row in place of the wire's own (the TRL form's :func:`text_turns_example`).

    The filters run in the module docstring's order, each counting what it removed into the summary."""
    cfg = config or ExportConfig()
    if wire not in WIRE_FORMATS:
        raise ExportError(f"wire format must be one of {', '.join(WIRE_FORMATS)}, not {wire!r}")
    paths = store_paths(stores)
    summary = ExportSummary(steps_method=cfg.steps_method, wire=wire, stores=[str(p) for p in paths],
                            by_store={str(p): 0 for p in paths})
    kept = _kept(paths, summary)
    items = _convert(kept, cfg, actions, summary)
    capped = _cap_per_task(_dedupe(items, cfg, summary), cfg, summary)
    chosen = _apply_shares(capped, cfg, paths, summary) if cfg.method_shares or cfg.store_shares else capped
    rows = _rows(chosen, example or _EXAMPLES[wire], summary)
    summary.origins = dict(Counter(origin(it.traj) for it in chosen))
    summary.exported = len(rows)
    summary.tasks = len({it.traj.task.id for it in chosen})
    return rows, summary


def store_paths(stores: str | Path | Sequence[str | Path]) -> list[Path]:
    """``stores`` (one path or several) as a list, a store listed twice refused."""
    paths = [Path(stores)] if isinstance(stores, (str, Path)) else [Path(p) for p in stores]
    seen_paths: set[Path] = set()
    for p in paths:
        if p.resolve() in seen_paths:
            raise ExportError(f"{p}: store listed twice (bootstrap.store and bootstrap.export.stores)")
        seen_paths.add(p.resolve())
    return paths


def _kept(paths: list[Path], summary: ExportSummary) -> list[tuple[Path, int, Trajectory]]:
    """1. ``(store, line, record)`` of every kept record, stores in order."""
    kept = [(p, line, t) for p in paths for line, t in _kept_lines(p)]
    if not kept:
        raise ExportError(f"{', '.join(map(str, paths))}: no kept records to export")
    for _, _, t in kept:
        summary.counts(t.method).kept += 1
    summary.judge = judge_counts(t for _, _, t in kept)
    return kept


def _convert(kept: list[tuple[Path, int, Trajectory]], cfg: ExportConfig,
             actions: Mapping[str, str] | Callable[[str], str] | None, summary: ExportSummary) -> list[_Item]:
    """2. Each record in the ``cfg.steps_method`` step format, those that cannot be left out."""
    target = cfg.steps_method
    instruction = _target_instruction(kept, target, actions)
    items: list[_Item] = []
    for p, line, t in kept:
        where = f"{p}:{line}: episode {t.episode_id!r} (task {t.task.id!r})"
        try:
            ctx = trajectory_prompt_context(t)
            needs = convertible(ctx.method, target) and ctx.method != target
            converted = convert_steps(t, target, instruction(ctx.env) if needs else None)
        except (ValueError, KeyError) as e:
            raise ExportError(f"{where}: {e}") from None
        if converted is None:
            summary.counts(t.method).unconvertible += 1
        elif cfg.require_reflection_parts and reflection_part_problems(converted):
            summary.counts(t.method).incomplete_reflections += 1
        else:
            items.append(_Item(converted, p, line))
    if not items:
        methods = ", ".join(sorted(summary.methods))
        raise ExportError(f"none of the {len(kept)} kept records can be converted into {target} steps "
                          f"(methods: {methods}); see bootstrap.export.steps_method")
    return items


def _dedupe(items: list[_Item], cfg: ExportConfig, summary: ExportSummary) -> list[_Item]:
    """3. Within a task, against the episodes kept so far."""
    by_task: dict[str, list[_Item]] = {}
    unique: list[_Item] = []
    for it in items:
        earlier = by_task.setdefault(it.traj.task.id, [])
        if any(near_duplicates(e.traj, it.traj, cfg.dedupe_similarity) for e in earlier):
            summary.counts(it.traj.method).duplicates += 1
            continue
        earlier.append(it)
        unique.append(it)
    return unique


def _cap_per_task(items: list[_Item], cfg: ExportConfig, summary: ExportSummary) -> list[_Item]:
    """4. The first ``cfg.max_per_task`` episodes of each task."""
    capped: list[_Item] = []
    per_task: dict[str, int] = {}
    for it in items:
        n = per_task.get(it.traj.task.id, 0)
        if cfg.max_per_task is not None and n >= cfg.max_per_task:
            summary.counts(it.traj.method).capped += 1
            continue
        per_task[it.traj.task.id] = n + 1
        capped.append(it)
    return capped


def _apply_shares(capped: list[_Item], cfg: ExportConfig, paths: list[Path], summary: ExportSummary) -> list[_Item]:
    """5. ``cfg.method_shares`` of source methods, or ``cfg.store_shares`` of stores, drawn per group."""
    # what a record's group is, and the label that seeds the group's draw
    if cfg.method_shares:
        key, what, shares = "method_shares", "method", dict(cfg.method_shares)
        group_of: Callable[[_Item], str] = _source_method
        label = {g: g for g in shares}
    else:
        key, what, shares = "store_shares", "store", _store_shares(cfg.store_shares, paths)
        group_of = _source_store
        # a store's draw is seeded by its place in the list, not its path: the same config draws the same
        # records wherever the stores lie
        label = {str(p): f"store{i}" for i, p in enumerate(paths)}
    available: dict[str, list[_Item]] = {}
    for it in capped:
        available.setdefault(group_of(it), []).append(it)
    want = _share_counts(shares, {g: len(v) for g, v in available.items()})
    picked: set[int] = set()
    for g, n in want.items():
        rng = random.Random(f"{cfg.seed}:{label[g]}")  # a str seed is hashed stably (not by PYTHONHASHSEED)
        picked.update(id(it) for it in _draw(available.get(g, []), n, rng))
    chosen = [it for it in capped if id(it) in picked]
    for it in capped:
        if id(it) not in picked:
            summary.counts(it.traj.method).shares += 1
    if not chosen:
        have = ", ".join(f"{g} {len(available.get(g, []))}" for g in shares)
        raise ExportError(f"{key} {dict(getattr(cfg, key))}: a named {what} has no records left "
                          f"after conversion, dedupe and max_per_task (available: {have})")
    return chosen


_EXAMPLES = {"text": text_example, "chat": chat_example, "tools": tools_example}


def _rows(chosen: list[_Item], make: Callable[[Trajectory], dict[str, Any]],
          summary: ExportSummary) -> list[dict[str, Any]]:
    """Each chosen record as ``make`` writes it, with the store it came from."""
    rows = []
    for it in chosen:
        try:
            rows.append({**make(it.traj), "source_store": str(it.store)})
        except (ValueError, KeyError) as e:
            raise ExportError(f"{it.where}: {e}") from None
        summary.counts(it.traj.method).exported += 1
        summary.by_store[str(it.store)] += 1
    return rows


def export_dataset(
    stores: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    wire: Wire = "text",
    config: ExportConfig | None = None,
    *,
    actions: Mapping[str, str] | Callable[[str], str] | None = None,
    overwrite: bool = False,
) -> ExportSummary:
    """Write the kept records of ``stores`` (one path or several, in order) to ``out_dir``
    (``Dataset.save_to_disk`` + ``export_summary.json``), atomically, as the module docstring says.

    ``actions`` (env name -> the environment's ``describe_actions()``) is asked only when records must be
    converted into ``config.steps_method`` for an env of which no record is already in that format (its
    instruction names the actions). An existing ``out_dir`` is replaced only once the new one is
    complete, and only if an export wrote it (or ``overwrite``: :func:`claim_folder`). Nothing to export is an
    :class:`ExportError` naming the filter that removed everything.
    """
    # claimed before the stores are read: a refusal or a crashed swap's repair comes first, even if the export fails
    with claim_folder(out_dir, store_paths(stores), overwrite):
        rows, summary = export_rows(stores, wire, config, actions=actions)
        return _write_folder(rows, summary, Path(out_dir), config)


def write_export(rows: list[dict[str, Any]], summary: ExportSummary, out_dir: str | Path,
                 config: ExportConfig | None = None, *, overwrite: bool = False) -> ExportSummary:
    """Write rows :func:`export_rows` selected (with its summary, under ``config``) as :func:`export_dataset`
    does: for a caller that looked at the selection before writing it."""
    with claim_folder(out_dir, summary.stores, overwrite):
        return _write_folder(rows, summary, Path(out_dir), config)


def _write_folder(rows: list[dict[str, Any]], summary: ExportSummary, out: Path,
                  config: ExportConfig | None) -> ExportSummary:
    """The dataset, its summary and its card in a temp folder beside ``out``, swapped in whole."""
    from datasets import Dataset  # heavy import: only when exporting

    ds = Dataset.from_list(rows)
    tmp = temp_folder_beside(out)
    try:
        ds.save_to_disk(str(tmp))
        # inside the folder before the swap: the dataset and its summary appear together or not at all
        written = {**summary.to_dict(), "provenance": provenance()}
        (tmp / SUMMARY_FILE).write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
        card = dataset_card(summary, rows, fmt="actune", data_files="data-*.arrow", settings=card_settings(config))
        (tmp / CARD_FILE).write_text(card, encoding="utf-8")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary
