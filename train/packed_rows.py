"""A padded batch scored as one padding-free row: DPO's and GRPO's log-probabilities without padding.

TRL 1.16's ``DPOTrainer`` batches a pair's two sides padded to the longest sequence of the batch, and turns its
own ``padding_free`` off ("temporarily unavailable after a refactor"). An agent episode's sides differ in length
by whole turns, so most of a padded DPO batch can be padding, computed through every layer forward and backward.
:func:`pack_fused_forward` wraps a model's fused LM head (TRL's ``add_fused_lm_head``: ``fused_lm_head=True``
returns per-token log-probabilities): a right-padded batch is concatenated into one row, position ids restarting
at each sequence and the sequence starts passed as ``cu_seq_lens_q``/``cu_seq_lens_k``, so an attention that reads
them (:func:`actune.train.speed.varlen_sdpa_attention`) attends each sequence alone; the log-probabilities come
back in the padded shape the trainer expects, zero where the label is ``-100`` or padding, as TRL's are. No token
sees another sequence, and every token sees the keys and positions it sees padded, so the log-probabilities and
their gradients are the padded ones to float rounding (``tests/train/test_packed_rows.py``).

This module imports torch only (no actune, no TRL), like ``speed.py``.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

__all__ = ["PackedRow", "pack_rows", "unpack_log_probs", "pack_fused_forward"]


class PackedRow(dict):
    """The model's keyword arguments for the packed row (``input_ids``, ``position_ids``, ``cu_seq_lens_q`` and
    ``_k``, ``max_length_q`` and ``_k``), with ``labels`` packed alike; ``mask`` and ``starts`` (each row's first
    index in the packed row) say how to put the outputs back."""

    mask: torch.Tensor
    starts: torch.Tensor


def pack_rows(input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> PackedRow:
    """A right-padded batch (``attention_mask`` 1 on each row's tokens, then 0) as one padding-free row. Each
    sequence's first label is ignored (-100): in the packed row it would be predicted from the sequence before."""
    mask = attention_mask.bool()
    lengths = mask.sum(1)
    if not bool((mask == (torch.arange(mask.shape[1], device=mask.device) < lengths[:, None])).all()):
        raise ValueError("pack_rows takes right-padded rows (each row's tokens first, then its padding)")
    starts = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)[mask]
    packed_labels = labels.masked_fill(~mask, -100)[mask].clone()
    packed_labels[positions == 0] = -100
    longest = int(lengths.max()) if len(lengths) else 0
    row = PackedRow(input_ids=input_ids[mask][None], position_ids=positions[None], labels=packed_labels[None],
                    cu_seq_lens_q=starts.to(torch.int32), cu_seq_lens_k=starts.to(torch.int32),
                    max_length_q=longest, max_length_k=longest)
    row.mask, row.starts = mask, starts[:-1]
    return row


def unpack_log_probs(packed: torch.Tensor, row: PackedRow) -> torch.Tensor:
    """The packed row's shifted per-token values (``(1, total - 1)``: index k scores token k + 1) in the padded
    batch's shifted shape ``(rows, width - 1)``: row r's position j is packed index ``starts[r] + j``; zero where
    the padded row has no next token (its padding)."""
    next_exists = row.mask[:, 1:]
    width = next_exists.shape[1]
    index = row.starts[:, None] + torch.arange(width, device=packed.device)[None]
    values = packed[0].gather(0, index[next_exists])
    return packed.new_zeros(next_exists.shape).masked_scatter(next_exists, values)


def pack_fused_forward(model: Any) -> None:
    """Make ``model``'s fused forward (``fused_lm_head=True``, patched by TRL's ``add_fused_lm_head`` on this
    instance) run a padded batch as one padding-free row (module docstring). Calls without the fused head (and
    batches already given position ids) run as before. Idempotent."""
    fused = model.forward
    if getattr(fused, "packs_rows", False):
        return

    @functools.wraps(fused)
    def forward(*args: Any, fused_lm_head: bool = False, **kwargs: Any) -> Any:
        mask = kwargs.get("attention_mask")
        if (not fused_lm_head or args or mask is None or "position_ids" in kwargs
                or kwargs.get("shift_labels") is not None or kwargs.get("labels") is None):
            return fused(*args, fused_lm_head=fused_lm_head, **kwargs)
        row = pack_rows(kwargs.pop("input_ids"), kwargs.pop("attention_mask"), kwargs.pop("labels"))
        out = fused(fused_lm_head=True, **row, **kwargs)
        for name in ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1", "label_mask"):
            value = getattr(out, name, None)
            if value is not None:
                out[name] = unpack_log_probs(value, row)
        return out

    forward.packs_rows = True  # type: ignore[attr-defined]
    model.forward = forward
