"""Preference pairs from trajectory stores: a kept episode against a failed one of the same task, method and prompt.

    rows, summary = pair_rows(["react/round1/trajectories.jsonl"])
    summary = export_pairs(stores, "react/round1/pairs")      # a datasets folder, pairs_summary.json, its card

Every bootstrap store holds the failed episodes of the tasks it also solved; SFT never learns from them. A pair
puts the i-th kept episode of a (task, method, prompt) against its i-th failed one, up to ``max_pairs_per_task``.
Where the two open with the same steps (the same thoughts, actions and so the same observations), the pair starts
where they part, as ETO and step-level DPO do: the shared steps join the prompt, and chosen and rejected hold only
what differs. Each side is text segments with loss flags, rendered exactly as the SFT export renders a record (the
zero-shot prompt head a tuned model sees, then the steps): observations never carry loss; on the rejected side
every step the model wrote does, an unreadable action included (it is what the pair should push down), where
SFT's export leaves such a step out of the loss.

A failed episode that ended through no fault of the model (``server_error``, ``context_overflow``) is not a
rejected side. The flat ``prompt`` / ``chosen`` / ``rejected`` strings of each row are TRL's standard preference
format; a trainer that reads only those puts loss on the observations inside a completion, which the segments'
flags exist to avoid.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from actune.agent.render import episode_segments
from actune.bootstrap.dataset_card import CARD_FILE, card_yaml, saved_folder_text
from actune.bootstrap.export import ExportError, claim_folder, judged_lines
from actune.records.atomic_write import replace_folder, temp_folder_beside
from actune.records.trajectory import Step, Trajectory
from actune.runtime.provenance import provenance, provenance_markdown

__all__ = ["PAIRS_SUMMARY_FILE", "PairSummary", "export_pairs", "pair_example", "pair_rows", "pairs_card",
           "shared_steps", "sometimes_solved"]

PAIRS_SUMMARY_FILE = "pairs_summary.json"
NOT_THE_MODELS_FAULT = ("server_error", "context_overflow")


@dataclass
class PairSummary:
    stores: list[str]
    pairs: int = 0
    tasks: int = 0
    """Tasks with at least one pair."""
    cut_at_shared_prefix: int = 0
    """Pairs whose two episodes open with the same steps (the pair starts where they part)."""
    unpaired: dict[str, int] = field(default_factory=dict)
    """Groups without a pair: ``no_failed`` (every episode kept), ``no_kept`` (none kept), and pairs dropped as
    ``no_divergence`` (one episode is the other's opening: nothing to prefer)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def shared_steps(a: list[Step], b: list[Step]) -> int:
    """How many leading steps ``a`` and ``b`` have in common (same type and text)."""
    n = 0
    for x, y in zip(a, b):
        if (x.type, x.text) != (y.type, y.text):
            break
        n += 1
    return n


def pair_example(chosen: Trajectory, rejected: Trajectory) -> dict[str, Any] | None:
    """The pair of ``chosen`` over ``rejected`` (module docstring), or None when one is the other's opening."""
    k = shared_steps(chosen.steps, rejected.steps)
    if k == len(chosen.steps) or k == len(rejected.steps):
        return None
    # the rejected side: every step the model wrote carries loss; observations never
    good, bad = episode_segments(chosen), episode_segments(rejected, every_model_step=True)
    prompt = [{"text": s["text"], "train": False} for s in good[:1 + k]]
    row = {"task_id": chosen.task.id, "method": chosen.method, "question": chosen.task.question,
           "chosen_episode": chosen.episode_id, "rejected_episode": rejected.episode_id, "shared_steps": k,
           "prompt_segments": prompt, "chosen_segments": good[1 + k:], "rejected_segments": bad[1 + k:]}
    for side in ("prompt", "chosen", "rejected"):
        row[side] = "".join(s["text"] for s in row[f"{side}_segments"])
    return row


def _groups(stores: Sequence[Path]) -> dict[tuple, tuple[list[Trajectory], list[Trajectory]]]:
    """(task, method, prompt head) -> (kept episodes, failed episodes), in store order."""
    groups: dict[tuple, tuple[list[Trajectory], list[Trajectory]]] = {}
    for path in stores:
        for _, t, verdict in judged_lines(path):
            if not verdict.kept and t.finish_reason in NOT_THE_MODELS_FAULT:
                continue
            key = (t.task.id, t.method, json.dumps(t.info.get("prompt"), sort_keys=True))
            kept, failed = groups.setdefault(key, ([], []))
            (kept if verdict.kept else failed).append(t)
    return groups


def sometimes_solved(stores: Sequence[str | Path]) -> set[str]:
    """The task ids the stores hold both a kept and a failed episode of (the same grouping as the pairs): where
    GRPO's group of rollouts can differ in reward, so its advantages are not all zero."""
    return {key[0] for key, (kept, failed) in _groups([Path(p) for p in stores]).items() if kept and failed}


def pair_rows(stores: str | Path | Sequence[str | Path],
              max_pairs_per_task: int = 2) -> tuple[list[dict[str, Any]], PairSummary]:
    """The pairs of ``stores`` (one path or several, read in order) and their summary, written nowhere."""
    paths = [Path(stores)] if isinstance(stores, (str, Path)) else [Path(p) for p in stores]
    summary = PairSummary(stores=[str(p) for p in paths])
    unpaired: Counter = Counter()
    rows: list[dict[str, Any]] = []
    for kept, failed in _groups(paths).values():
        if not kept or not failed:
            unpaired["no_kept" if not kept else "no_failed"] += 1
            continue
        made = 0
        for chosen, rejected in zip(kept, failed):
            if made == max_pairs_per_task:
                break
            row = pair_example(chosen, rejected)
            if row is None:
                unpaired["no_divergence"] += 1
                continue
            rows.append(row)
            made += 1
            summary.cut_at_shared_prefix += int(row["shared_steps"] > 0)
        summary.tasks += int(made > 0)
    summary.pairs, summary.unpaired = len(rows), dict(sorted(unpaired.items()))
    return rows, summary


def export_pairs(stores: str | Path | Sequence[str | Path], out_dir: str | Path,
                 max_pairs_per_task: int = 2, *, overwrite: bool = False) -> PairSummary:
    """Write the pairs of ``stores`` to ``out_dir`` (``Dataset.save_to_disk`` + ``pairs_summary.json``), replacing
    an existing folder only once the new one is complete and only if an export wrote it (or ``overwrite``:
    :func:`~actune.bootstrap.export.claim_folder`); no pair at all is an :class:`ExportError`."""
    inputs = [stores] if isinstance(stores, (str, Path)) else list(stores)
    with claim_folder(out_dir, inputs, overwrite):
        return _write_pairs(inputs, Path(out_dir), max_pairs_per_task)


def _write_pairs(stores: list[str | Path], out: Path, max_pairs_per_task: int) -> PairSummary:
    from datasets import Dataset  # heavy import: only when exporting

    rows, summary = pair_rows(stores, max_pairs_per_task)
    if not rows:
        raise ExportError(f"{', '.join(summary.stores)}: no preference pair (a task needs a kept and a failed "
                          f"episode of the same method and prompt; unpaired: {summary.unpaired})")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_folder_beside(out)
    try:
        Dataset.from_list(rows).save_to_disk(str(tmp))
        written = {**summary.to_dict(), "provenance": provenance()}
        (tmp / PAIRS_SUMMARY_FILE).write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
        (tmp / CARD_FILE).write_text(pairs_card(summary, rows), encoding="utf-8")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return summary


def pairs_card(summary: PairSummary, rows: Sequence[dict[str, Any]]) -> str:
    """The card of a DPO pairs export (:func:`actune.bootstrap.preference_pairs.export_pairs`): the Hub loads its
    arrow files as the ``train`` split; the body says what a pair is, where the pairs came from and how to load
    them."""
    methods = sorted({str(r["method"]) for r in rows})
    front = card_yaml(f"actune {', '.join(methods)} preference pairs",
                      ["agent", *methods, "actune", "preference", "dpo"], summary.pairs, "data-*.arrow")
    unpaired = ", ".join(f"{k} {n}" for k, n in summary.unpaired.items()) or "none"
    return "\n".join([
        f"---\n{front}\n---", "", f"# actune {', '.join(methods)} preference pairs", "",
        f"{summary.pairs} preference pairs over {summary.tasks} tasks for DPO: each puts an episode actune's judge "
        "kept against a failed one of the same task, method and prompt (a failure the server or the context "
        "length caused is never a rejected side). Where the two episodes open with the same steps, the pair starts "
        f"where they part: the shared steps join the prompt ({summary.cut_at_shared_prefix} pairs).", "",
        "## Source", "", "Trajectory stores (in order): " + ", ".join(f"`{s}`" for s in summary.stores) + ".",
        f"Groups without a pair: {unpaired} (`no_failed`: every episode kept, `no_kept`: none kept, "
        "`no_divergence`: one episode is the other's opening).", "",
        "## Columns", "",
        "`prompt`, `chosen`, `rejected`: TRL's standard preference strings (a trainer that reads only these puts "
        "loss on the observations inside a completion); `prompt_segments`, `chosen_segments`, "
        "`rejected_segments`: the same text as segments with a `train` flag (observations never carry loss; on the "
        "rejected side every step the model wrote does), which `actune train train.objective=dpo` reads; "
        "`task_id`, `method`, `question`, `chosen_episode`, `rejected_episode`, `shared_steps`.", "",
        "## Load it", "",
        saved_folder_text("`pairs_summary.json`"), "",
        *provenance_markdown(provenance()),
    ])
