"""A padded batch scored as one padding-free row gives TRL's padded log-probabilities and gradients."""

from __future__ import annotations

import pytest
import torch
from test_speed import VOCAB, tiny_model

from actune.train.packed_rows import pack_fused_forward, pack_rows, unpack_log_probs


def _batch(lengths=(9, 4, 12, 6), trained_from=(5, 2, 7, 3)):
    """Right-padded rows (pad id 0) whose labels train each row's tail, as DPO's collator makes them."""
    torch.manual_seed(2)
    width = max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, n in enumerate(lengths):
        ids[r, :n], mask[r, :n] = torch.randint(1, VOCAB, (n,)), 1
    labels = ids.clone()
    for r, (n, t) in enumerate(zip(lengths, trained_from)):
        labels[r, :t], labels[r, n:] = -100, -100
    return ids, mask, labels


def test_pack_rows_concatenates_each_rows_tokens_with_positions_restarting():
    ids, mask, labels = _batch(lengths=(3, 1, 2), trained_from=(1, 0, 1))
    row = pack_rows(ids, mask, labels)
    assert row["input_ids"].tolist() == [[*ids[0, :3].tolist(), ids[1, 0].item(), *ids[2, :2].tolist()]]
    assert row["position_ids"].tolist() == [[0, 1, 2, 0, 0, 1]]
    assert row["cu_seq_lens_q"].tolist() == [0, 3, 4, 6] and row["max_length_q"] == 3
    # each sequence's first token is never a label: in the row it would be predicted from the sequence before
    assert row["labels"].tolist() == [[-100, ids[0, 1].item(), ids[0, 2].item(), -100, -100, ids[2, 1].item()]]
    assert row.starts.tolist() == [0, 3, 4]


def test_unpack_puts_each_packed_value_back_at_its_padded_position():
    ids, mask, labels = _batch(lengths=(3, 1, 2), trained_from=(1, 0, 1))
    row = pack_rows(ids, mask, labels)
    packed = torch.arange(1.0, 6.0)[None]  # index k scores packed token k + 1
    assert unpack_log_probs(packed, row).tolist() == [[1.0, 2.0], [0.0, 0.0], [5.0, 0.0]]


def test_left_padded_rows_are_refused():
    ids, mask, labels = _batch(lengths=(3, 2), trained_from=(1, 1))
    with pytest.raises(ValueError, match="right-padded"):
        pack_rows(ids, mask.flip(1), labels)


def _fused(packed: bool, ids, mask, labels):
    from trl.trainer.utils import add_fused_lm_head

    from actune.train.speed import register_varlen_sdpa

    model = tiny_model(attn=register_varlen_sdpa())
    add_fused_lm_head(model)
    if packed:
        pack_fused_forward(model)
        pack_fused_forward(model)  # idempotent: one packing, not two
    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    out.log_probs.sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return out.log_probs.detach(), grads


@pytest.mark.parametrize("trained_only", [False, True])
def test_the_packed_fused_forward_gives_the_padded_log_probs_and_gradients(trained_only):
    from actune.train.speed import fused_head_on_trained_positions

    ids, mask, labels = _batch()
    try:
        fused_head_on_trained_positions(trained_only)
        padded, padded_grads = _fused(False, ids, mask, labels)
        packed, packed_grads = _fused(True, ids, mask, labels)
    finally:
        fused_head_on_trained_positions(False)
    assert packed.shape == padded.shape == (4, 11)
    assert (packed[labels[:, 1:] == -100] == 0).all() and (packed[labels[:, 1:] != -100] < 0).all()
    torch.testing.assert_close(packed, padded, rtol=0, atol=1e-5)
    assert packed_grads.keys() == padded_grads.keys() and len(packed_grads) > 10
    for name, grad in padded_grads.items():
        torch.testing.assert_close(packed_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_row_that_sees_another_would_change_the_log_probs():
    """The test above can fail: without the sequence starts, the packed row's sequences attend each other."""
    from trl.trainer.utils import add_fused_lm_head

    ids, mask, labels = _batch()
    model = tiny_model(attn="sdpa")  # transformers' SDPA with no mask for the row: causal over all of it
    add_fused_lm_head(model)
    padded = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True).log_probs
    row = pack_rows(ids, mask, labels)
    leaky = model(input_ids=row["input_ids"], labels=row["labels"], fused_lm_head=True).log_probs
    assert not torch.allclose(unpack_log_probs(leaky, row)[1:], padded[1:], atol=1e-3)
