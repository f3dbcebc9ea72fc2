"""Training speed without changing what is learned: padding-free batches attended example by example, a
loss that sends only the trained positions through the LM head, LoRA dropout masks drawn from the gaps
between drops, and torch's thread count on small CPUs.

    trainer = ActuneSFTTrainer(model=..., args=SFTConfig(padding_free=True, max_length=None, ...),
                               loss_head="trained", ...)

Each piece but the dropout masks computes what TRL's ``SFTTrainer`` with padded batches computes, to float
rounding (the masks are the same in distribution, from another random stream); together they make a CPU
training step cheaper: nothing is computed for padding or for the logits of untrained positions, and dropout
draws about n*p random numbers instead of n. It imports torch, transformers and TRL only (no actune), so
``bench/train_gpu.py`` can load it by its path where actune is not installed.

The rules in full: docs/modules.md, actune.train.speed.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from trl import SFTTrainer

__all__ = ["VARLEN_SDPA", "varlen_sdpa_attention", "register_varlen_sdpa", "padding_free_matches_padded",
           "fused_head_on_trained_positions", "ActuneSFTTrainer", "cpu_threads", "set_torch_threads", "LOSS_HEADS",
           "DROPOUT_MASKS", "GapDropout", "dropped_positions", "use_gap_dropout", "resolve_loss_head",
           "resolve_dropout_masks"]

VARLEN_SDPA = "actune_sdpa_varlen"
"""The ``attn_implementation`` name :func:`register_varlen_sdpa` registers."""
LOSS_HEADS = ("trained", "trl")
DROPOUT_MASKS = ("gaps", "torch")

# The sequence starts of the last forwards, by tensor: every layer gets the same tensors, so their values
# are copied to the host once a forward, not once a layer.
_bounds: dict[int, tuple[torch.Tensor, list[int]]] = {}


def _segment_bounds(cu_seq_lens: torch.Tensor) -> list[int]:
    hit = _bounds.get(id(cu_seq_lens))
    if hit is None or hit[0] is not cu_seq_lens:
        if len(_bounds) >= 4:
            _bounds.clear()
        hit = _bounds[id(cu_seq_lens)] = (cu_seq_lens, cu_seq_lens.tolist())
    return hit[1]


def varlen_sdpa_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          attention_mask: torch.Tensor | None, cu_seq_lens_q: torch.Tensor | None = None,
                          cu_seq_lens_k: torch.Tensor | None = None, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention; a padding-free row (batch of one, ``cu_seq_lens_q`` given by TRL's
    collator, the same for keys) is attended sequence by sequence with ``is_causal=True``. Anything else
    (padded batches, generation with a cache) goes to transformers' SDPA unchanged, with its mask."""
    length = query.shape[2]
    if cu_seq_lens_q is None or query.shape[0] != 1 or key.shape[2] != length:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    bounds = _segment_bounds(cu_seq_lens_q)
    if (bounds[0] != 0 or bounds[-1] != length
            or (cu_seq_lens_k is not None and _segment_bounds(cu_seq_lens_k) != bounds)):
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    kwargs.pop("is_causal", None)
    parts = [sdpa_attention_forward(module, query[:, :, s:e], key[:, :, s:e], value[:, :, s:e], None,
                                    is_causal=True, **kwargs)[0]
             for s, e in zip(bounds, bounds[1:]) if e > s]
    return torch.cat(parts, dim=1), None


def register_varlen_sdpa() -> str:
    """Make :data:`VARLEN_SDPA` an ``attn_implementation`` (its masks are SDPA's) and return the name."""
    AttentionInterface.register(VARLEN_SDPA, varlen_sdpa_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(VARLEN_SDPA, sdpa_mask)
    return VARLEN_SDPA


def _padded_and_free(sequences: list[torch.Tensor], pad_id: int) -> tuple[dict, dict]:
    """The same sequences as TRL's collator batches them: padded (right) and padding-free."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(sequences):
        ids[i, :len(s)], mask[i, :len(s)] = s, 1
    lengths = torch.tensor([len(s) for s in sequences])
    cu = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)]).to(torch.int32)
    positions = torch.cat([torch.arange(n) for n in lengths])[None]
    free = {"input_ids": torch.cat(sequences)[None], "position_ids": positions, "cu_seq_lens_q": cu,
            "cu_seq_lens_k": cu, "max_length_q": int(lengths.max()), "max_length_k": int(lengths.max())}
    return {"input_ids": ids, "attention_mask": mask}, free


def padding_free_matches_padded(model: Any, lengths: tuple[int, ...] = (7, 12, 4), seed: int = 0) -> bool:
    """Whether ``model`` gives a padding-free row the logits it gives the same sequences padded (random
    token ids; in the model's dtype, to its rounding), as in training (no cache: with one, transformers'
    own attentions do not look for the sequence starts). False when its attention lets the sequences of
    a row see each other."""
    vocab = model.get_input_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(seed)
    sequences = [torch.randint(0, vocab, (n,), generator=g) for n in lengths]
    padded, free = _padded_and_free(sequences, pad_id=0)
    device = model.get_input_embeddings().weight.device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            a = model(**{k: v.to(device) if torch.is_tensor(v) else v for k, v in padded.items()},
                      use_cache=False).logits.float()
            b = model(**{k: v.to(device) if torch.is_tensor(v) else v for k, v in free.items()},
                      use_cache=False).logits.float()
    finally:
        model.train(was_training)
    rows = torch.cat([a[i, :n] for i, n in enumerate(lengths)])
    # bf16 rounding moved SmolLM2-135M's logits by up to 2% of the largest one (padded vs padding-free,
    # either attention); a row whose sequences see each other moves them by about 80%
    tol = 1e-4 if model.dtype == torch.float32 else 5e-2
    return float((rows - b[0]).abs().max()) <= tol * (float(rows.abs().max()) or 1.0)


def dropped_positions(n: int, p: float, device: torch.device | str = "cpu", batch: int = 0) -> torch.Tensor:
    """The positions in ``range(n)`` that a dropout of probability ``p`` drops, each independently with
    probability ``p`` (to float32 rounding), ascending, as int64: the gaps between drops are geometric,
    ``floor(log(V) / log(1-p))`` for V uniform on (0, 1], so about ``n*p`` uniforms are drawn (torch's
    generator on ``device``) instead of ``n``, ``batch`` at a time (0: enough to cover ``n`` at once but
    about once in a billion)."""
    if not 0 < p < 1:
        raise ValueError(f"dropout probability must be in (0, 1) to draw positions, not {p}")
    if n <= 0:
        return torch.zeros(0, dtype=torch.long, device=device)
    scale = 1.0 / math.log1p(-p)  # negative: log(V) <= 0 gives a gap >= 0
    batch = batch or int(n * p + 6 * math.sqrt(n * p * (1 - p)) + 16)
    parts, start = [], 0
    while True:
        v = 1.0 - torch.rand(batch, device=device, dtype=torch.float32)  # (0, 1], whatever the default dtype
        steps = torch.log(v).mul_(scale).floor_().long().add_(1)  # a drop after gap elements kept
        positions = steps.cumsum_(0).add_(start - 1)
        if int(positions[-1]) >= n:
            parts.append(positions[positions < n])
            return torch.cat(parts)
        parts.append(positions)
        start = int(positions[-1]) + 1


def _dropped(t: torch.Tensor, positions: torch.Tensor, p: float) -> torch.Tensor:
    """``t`` scaled by 1/(1-p) with the elements at ``positions`` (of its flat view) zeroed, contiguous."""
    out = (t * (1.0 / (1.0 - p))).contiguous()
    out.view(-1).index_fill_(0, positions, 0)
    return out


class _GapDropoutFunction(torch.autograd.Function):
    # the backward drops the same elements of the gradient, at the same scale
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, p: float) -> torch.Tensor:
        positions = dropped_positions(x.numel(), p, x.device)
        ctx.p = p
        ctx.save_for_backward(positions)
        return _dropped(x, positions, p)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (positions,) = ctx.saved_tensors
        return _dropped(grad, positions, ctx.p), None


class GapDropout(torch.nn.Module):
    """``nn.Dropout(p)`` whose mask is drawn by :func:`dropped_positions` (module docstring): in training
    each element is zeroed with probability ``p`` and the others are multiplied by 1/(1-p); in eval the
    identity. Unlike ``nn.Dropout``, a dropped NaN or inf becomes 0 (it is overwritten, not multiplied by
    0); the output is contiguous."""

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"dropout probability must be in [0, 1), not {p}")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        return _GapDropoutFunction.apply(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def use_gap_dropout(model: torch.nn.Module) -> int:
    """Replace the ``nn.Dropout`` of every PEFT LoRA layer of ``model`` (its ``lora_dropout`` dicts) by a
    :class:`GapDropout` of the same probability; returns how many were replaced."""
    n = 0
    for module in model.modules():
        dropouts = getattr(module, "lora_dropout", None)
        if not isinstance(dropouts, torch.nn.ModuleDict):
            continue
        for name, d in dropouts.items():
            if type(d) is torch.nn.Dropout and 0 < d.p < 1:
                dropouts[name] = GapDropout(d.p).train(d.training)
                n += 1
    return n


def resolve_loss_head(setting: str, device_type: str) -> str:
    """``trained`` or ``trl`` for a ``TrainConfig.loss_head`` setting; auto: ``trained`` on CPU (where TRL's
    head projects every position), ``trl`` elsewhere (its Triton kernel projects only the trained ones)."""
    return setting if setting != "auto" else "trained" if device_type == "cpu" else "trl"


def fused_head_on_trained_positions(on: bool = True) -> bool:
    """Make TRL's fused LM head (DPO's and GRPO's log-probabilities, ``add_fused_lm_head``) project only the
    positions whose label is trained on a CPU too (``on``; False restores TRL's rule). TRL 1.16 compacts them
    where Triton runs and scores every position elsewhere, to keep Neuron's tile shapes fixed; a CPU compiles
    nothing, and the other positions' outputs are zero either way, so the log-probabilities are the same. TRL
    has no setting for it: its private switch ``trl.trainer.utils._use_triton`` is wrapped. Returns whether the
    compaction is on (False also when this TRL has no such switch)."""
    import trl.trainer.utils as trl_utils

    current = getattr(trl_utils, "_use_triton", None)
    if current is None:
        return False
    original = getattr(current, "trl_rule", current)
    if not on:
        trl_utils._use_triton = original
        return False

    def compact(device: torch.device) -> bool:
        return device.type == "cpu" or original(device)

    compact.trl_rule = original  # type: ignore[attr-defined]
    trl_utils._use_triton = compact
    return True


def resolve_dropout_masks(setting: str, device_type: str, compiled: bool = False) -> str:
    """``gaps`` or ``torch`` for a ``TrainConfig.dropout_masks`` setting; auto: ``gaps`` on CPU unless the
    model is compiled (``train.sft.torch_compile``: the gaps' data-dependent sizes would break its graph at
    every LoRA layer)."""
    return setting if setting != "auto" else "gaps" if device_type == "cpu" and not compiled else "torch"


class ActuneSFTTrainer(SFTTrainer):
    """TRL's ``SFTTrainer`` whose training and dev loss (``loss_head="trained"``) take the logits of the
    trained positions only (module docstring). Settings this loss does not cover (``loss_type="dft"``,
    label smoothing, a ``compute_loss_func``, MoE auxiliary losses, sequence parallelism) and
    ``loss_head="trl"`` use TRL's own loss. ``dropout_masks="gaps"``: the LoRA layers' dropout is
    :class:`GapDropout`."""

    def __init__(self, *args: Any, loss_head: str = "trained", dropout_masks: str = "torch", **kwargs: Any) -> None:
        if loss_head not in LOSS_HEADS:
            raise ValueError(f"loss_head must be one of {LOSS_HEADS}, not {loss_head!r}")
        if dropout_masks not in DROPOUT_MASKS:
            raise ValueError(f"dropout_masks must be one of {DROPOUT_MASKS}, not {dropout_masks!r}")
        self.loss_head = loss_head
        super().__init__(*args, **kwargs)
        # after SFTTrainer wrapped the model with the peft_config; what the model ended up with is recorded
        self.gap_dropouts = use_gap_dropout(self.model) if dropout_masks == "gaps" else 0

    def _trl_loss(self) -> bool:
        parallelism = getattr(self.accelerator, "parallelism_config", None)
        return (self.loss_head == "trl" or self.args.loss_type != "nll" or self.compute_loss_func is not None
                or self.label_smoother is not None or self.aux_loss_enabled
                or bool(parallelism is not None and (parallelism.sp_enabled or parallelism.cp_enabled)))

    def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                     num_items_in_batch: Any = None) -> Any:
        if return_outputs or self._trl_loss():
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                         num_items_in_batch=num_items_in_batch)
        labels = inputs["labels"]
        targets = labels[:, 1:]  # position p predicts token p + 1
        positions = (targets != -100).any(0).nonzero().flatten()
        forward = {k: v for k, v in inputs.items() if k != "labels"}
        logits = model(**forward, use_cache=False, logits_to_keep=positions).logits
        kept = targets[:, positions]  # -100 where another row of a padded batch trains this position
        # the log-probabilities in float32, as TRL's head computes them
        nll = F.cross_entropy(logits.flatten(0, 1).float(), kept.flatten(), ignore_index=-100, reduction="sum")
        # as TRL's loss: a sum over the trained tokens divided by their count in the whole batch (every
        # accumulation step and process: the Trainer's num_items_in_batch), or in this one when not given
        count = (kept != -100).sum() if num_items_in_batch is None else num_items_in_batch
        loss = nll / torch.as_tensor(count).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())
        if self.model.training:  # TRL's num_tokens log: the tokens of the batch, padding excluded
            if "attention_mask" in inputs:
                local = inputs["attention_mask"].sum()
            else:
                local = torch.tensor(inputs["input_ids"].size(1), device=inputs["input_ids"].device)
            self._total_train_tokens += self.accelerator.gather_for_metrics(local).sum().item() // self._tp_size
            self._metrics["train"]["num_tokens"] = [self._total_train_tokens]
        return loss


def _physical_cores(cpus: set[int], cpuinfo: Path) -> int | None:
    try:
        blocks = cpuinfo.read_text(errors="replace").split("\n\n")
    except OSError:
        return None
    cores = set()
    for block in blocks:
        fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in block.splitlines())}
        if fields.get("processor", "").isdigit() and int(fields["processor"]) in cpus and "core id" in fields:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def _cpu_quota(cgroup: Path) -> float | None:
    try:  # cgroup v2: "max 100000" or "200000 100000"
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1
        quota = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None


def cpu_threads(cpuinfo: Path = Path("/proc/cpuinfo"), cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """One thread per physical core this process may use: the cores of its CPU affinity (hyper-threads of
    one core count once), at most its cgroup CPU quota (rounded up), shared among the processes of a
    launcher on this node (``LOCAL_WORLD_SIZE``); at least 1."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    n = _physical_cores(cpus, cpuinfo) or len(cpus)
    quota = _cpu_quota(cgroup)
    if quota:
        n = min(n, math.ceil(quota))
    return max(1, n // max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))


def set_torch_threads(setting: int) -> int:
    """Set torch's intra-op threads: ``setting`` when > 0; 0 (auto): :func:`cpu_threads`, unless
    ``OMP_NUM_THREADS`` is set (a launcher's or the user's choice, which torch already follows). Returns
    the number torch uses."""
    n = setting or (None if os.environ.get("OMP_NUM_THREADS") else cpu_threads())
    if n and n != torch.get_num_threads():
        torch.set_num_threads(n)
    return torch.get_num_threads()
