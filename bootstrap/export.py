"""Export the kept records of a bootstrap store as a training dataset (``datasets`` on disk).

    n = export_dataset("runs/store/trajectories.jsonl", "runs/dataset", wire="text")

Each kept record is rendered as the zero-shot episode a fine-tuned model will see and write in the
loop (``trajectory_prompt_context`` + ``render_text``/``render_messages``: instruction, question, steps),
so training data and evaluation prompts cannot drift apart. Two layouts:

- ``text``: ``segments`` is a list of ``{"text", "train"}`` whose concatenation ``text`` is exactly
  ``render_text(ctx, traj.steps)``. The prompt head, every observation (format hints included) and
  every plan critique (PreFlect's reflector wrote it, not the agent) are ``train=false``; plans,
  thoughts, reflections, actions and answers are ``train=true``, except an action the
  parser could not read (the loop answered it with a format hint): a tuned model should not learn it.
  Each step is one segment holding its whole line (label and closing newline); in the loop the
  ``Thought i:`` label is written by the loop, so training on it only teaches what it will be given.
- ``chat``: ``messages`` is ``render_messages(ctx, traj.steps)`` (system: instruction; user: question;
  assistant turns: plan, thought + action lines; user turns: observations, critiques), each message with a ``train``
  flag: true for assistant turns (false for one that holds an unreadable action).

Both carry ids and metadata columns (``episode_id``, ``task_id``, ``method``, ``env``, ``wire``...).
The dataset folder is written whole or not at all (temp folder + rename).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from actune.agent.render import (
    USER_STEP_TYPES,
    render_messages,
    render_steps_text,
    render_text,
    trajectory_prompt_context,
)
from actune.bootstrap.judge import verdict_of
from actune.trajectory import Step, Trajectory, read_trajectories

__all__ = ["ExportError", "export_dataset", "kept_records", "text_example", "chat_example", "WIRE_FORMATS"]

WIRE_FORMATS = ("text", "chat")


class ExportError(RuntimeError):
    """The store cannot be exported (missing, no kept records, a record that does not render)."""


def _trained(step: Step) -> bool:
    if step.type in USER_STEP_TYPES:
        return False
    return not (step.type == "action" and step.action_name is None)


def kept_records(store: str | Path) -> list[Trajectory]:
    """The records of a store whose verdict says kept, in file order (errors name ``file:line``)."""
    path = Path(store)
    if not path.is_file():
        raise ExportError(f"{path}: store not found (run `actune bootstrap` first)")
    return [t for t in read_trajectories(path) if (v := verdict_of(t)) is not None and v.kept]


def _meta(traj: Trajectory, wire: str) -> dict[str, Any]:
    return {"episode_id": traj.episode_id, "task_id": traj.task.id, "run_id": traj.run_id,
            "attempt": traj.attempt, "method": traj.method, "steps_method": trajectory_prompt_context(traj).method,
            "env": traj.task.env, "wire": wire, "question": traj.task.question, "answer": traj.task.answer,
            "prediction": traj.prediction or "", "num_steps": len(traj.steps)}


def text_example(traj: Trajectory) -> dict[str, Any]:
    """One record as a text-format example (``segments``, ``text`` and metadata)."""
    ctx = trajectory_prompt_context(traj)
    segments = [{"text": render_text(ctx, []), "train": False}]
    segments += [{"text": render_steps_text(ctx, [s]), "train": _trained(s)} for s in traj.steps]
    text = "".join(s["text"] for s in segments)
    if text != render_text(ctx, traj.steps):  # the renderer changed so that steps no longer compose
        raise ExportError(f"episode {traj.episode_id!r}: segments do not concatenate to the rendered episode")
    return {**_meta(traj, "text"), "segments": segments, "text": text}


def chat_example(traj: Trajectory) -> dict[str, Any]:
    """One record as a chat-format example (``messages`` with per-turn ``train`` flags, and metadata)."""
    ctx = trajectory_prompt_context(traj)
    messages = render_messages(ctx, traj.steps)
    # Which assistant turns hold an unreadable action: render_messages groups the non-observation
    # steps between observations into one assistant turn, in order.
    bad_turns: list[bool] = []
    current, pending = False, False
    for s in traj.steps:
        if s.type in USER_STEP_TYPES:
            if pending:
                bad_turns.append(current)
            current, pending = False, False
        else:
            current, pending = current or not _trained(s), True
    if pending:
        bad_turns.append(current)
    assistant = iter(bad_turns)
    out = []
    for m in messages:
        train = m["role"] == "assistant" and not next(assistant)
        out.append({"role": m["role"], "content": m["content"], "train": train})
    return {**_meta(traj, "chat"), "messages": out}


def export_dataset(store: str | Path, out_dir: str | Path, wire: Literal["text", "chat"] = "text") -> int:
    """Write the kept records of ``store`` to ``out_dir`` (``Dataset.save_to_disk``), atomically.

    Returns the number of examples. An existing ``out_dir`` is replaced only once the new one is
    complete.
    """
    from datasets import Dataset  # heavy import: only when exporting

    if wire not in WIRE_FORMATS:
        raise ExportError(f"wire format must be one of {', '.join(WIRE_FORMATS)}, not {wire!r}")
    records = kept_records(store)
    if not records:
        raise ExportError(f"{store}: no kept records to export")
    make = text_example if wire == "text" else chat_example
    rows = []
    for t in records:
        try:
            rows.append(make(t))
        except (ValueError, KeyError) as e:
            raise ExportError(f"{store}: episode {t.episode_id!r} (task {t.task.id!r}): {e}") from None
    ds = Dataset.from_list(rows)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        ds.save_to_disk(str(tmp))
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            os.replace(out, old)
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return len(rows)
