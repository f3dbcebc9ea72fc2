"""The speed settings change nothing that is learned (the dropout masks: nothing in distribution): a
padding-free batch gives each example the logits and loss of a padded batch, actune's trainer (padding-free,
loss on the trained positions only) gives TRL's padded loss and gradients, the start-up check catches an
attention that lets a row's examples see each other, a whole recipe run trains the same adapter either way;
LoRA dropout masks drawn from geometric gaps drop each element independently with the dropout's probability;
and the thread count follows cores, affinity and quota."""

from __future__ import annotations

import json

import pytest
import torch
from training_records import tiny_config, write_store

from actune.bootstrap.export import export_dataset
from actune.train import speed
from actune.train.sft import sft_args, speed_line, train

VOCAB = 256


def tiny_model(kind: str = "llama", attn: str = "sdpa"):
    """A random-init 2-layer model of a real architecture's shape (grouped-query attention, rotary)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cls, config = {"llama": (LlamaForCausalLM, LlamaConfig), "qwen2": (Qwen2ForCausalLM, Qwen2Config)}[kind]
    torch.manual_seed(0)
    return cls(config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, attn_implementation=attn)).eval()


def tiny_tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0", eos_token="t1")


def trajectories(lengths=(23, 9, 31, 17)) -> list[dict]:
    """Agent-shaped examples: an untrained prompt, then trained steps between untrained observations."""
    g = torch.Generator().manual_seed(1)
    out = []
    for n in lengths:
        ids = torch.randint(2, VOCAB, (n,), generator=g).tolist()
        labels = [t if i >= 4 and (i // 3) % 2 else -100 for i, t in enumerate(ids)]
        out.append({"input_ids": ids, "labels": labels})
    return out


def per_example_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Summed NLL of the trained tokens of one sequence (``logits`` [T, V], ``labels`` [T])."""
    return torch.nn.functional.cross_entropy(logits[:-1].float(), labels[1:], ignore_index=-100, reduction="sum")


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("attn", ["sdpa", speed.VARLEN_SDPA])
def test_a_padding_free_batch_gives_each_example_its_padded_logits_and_loss(kind, attn):
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    speed.register_varlen_sdpa()
    model = tiny_model(kind, attn)
    exs = trajectories()
    padded = DataCollatorForLanguageModeling(pad_token_id=0)(exs)
    free = DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)(exs)
    assert free["input_ids"].shape == (1, sum(len(e["input_ids"]) for e in exs)) and "attention_mask" not in free
    with torch.no_grad():  # use_cache=False as in training: with a cache transformers' sdpa ignores the packing
        a = model(input_ids=padded["input_ids"], attention_mask=padded["attention_mask"], use_cache=False).logits
        b = model(**{k: v for k, v in free.items() if k != "labels"}, use_cache=False).logits[0]
    start = 0
    for i, e in enumerate(exs):
        n = len(e["input_ids"])
        torch.testing.assert_close(b[start:start + n], a[i, :n], rtol=1e-5, atol=1e-5)
        labels = torch.tensor(e["labels"])
        assert float(per_example_nll(b[start:start + n], labels)) == pytest.approx(
            float(per_example_nll(a[i, :n], labels)), rel=1e-5)
        start += n
    assert speed.padding_free_matches_padded(model)


def _trainer(cls, model, tmp_path, padding_free: bool, dropout: float = 0.0, **kw):
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig

    args = SFTConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, report_to="none", use_cpu=True,
                     gradient_checkpointing=False, padding_free=padding_free, max_length=None if padding_free else 64)
    # init_lora_weights=False: B random too, so that A gets a gradient
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=dropout, target_modules="all-linear", init_lora_weights=False)
    return cls(model=model, args=args, train_dataset=Dataset.from_list(trajectories()), processing_class=tiny_tokenizer(),
               peft_config=lora, **kw)


def _loss_and_grads(trainer) -> tuple[float, dict[str, torch.Tensor]]:
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(len(trainer.train_dataset))])
    n_items = (batch["labels"][..., 1:] != -100).sum()  # as the Trainer counts them
    trainer.model.train()
    trainer.model.zero_grad()
    loss = trainer.compute_loss(trainer.model, batch, num_items_in_batch=n_items)
    loss.backward()
    grads = {k: p.grad.clone() for k, p in trainer.model.named_parameters() if p.requires_grad}
    return float(loss.detach()), grads


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_actunes_trainer_gives_trls_padded_loss_and_gradients(tmp_path, kind):
    from trl import SFTTrainer

    attn = speed.register_varlen_sdpa()
    plain = _trainer(SFTTrainer, tiny_model(kind), tmp_path / "trl", padding_free=False)
    ours = _trainer(speed.ActuneSFTTrainer, tiny_model(kind, attn), tmp_path / "ours", padding_free=True,
                    loss_head="trained")
    ours.model.load_state_dict(plain.model.state_dict())  # the same LoRA weights
    assert "attention_mask" not in ours.data_collator(trajectories()[:2])  # padding-free indeed
    loss_trl, grads_trl = _loss_and_grads(plain)
    loss_ours, grads_ours = _loss_and_grads(ours)
    assert loss_ours == pytest.approx(loss_trl, rel=1e-5)
    assert grads_ours.keys() == grads_trl.keys() and len(grads_ours) == 2 * 7 * 2  # A and B of 7 layers x 2
    for name, g in grads_trl.items():
        assert float(g.abs().max()) > 0
        torch.testing.assert_close(grads_ours[name], g, rtol=1e-4, atol=1e-6, msg=name)
    assert ours._metrics["train"].keys() == {"num_tokens"}  # no vocabulary-wide entropy / accuracy
    assert ours._metrics["train"]["num_tokens"] == [sum(len(e["input_ids"]) for e in trajectories())]
    assert {"entropy", "mean_token_accuracy"} <= plain._metrics["train"].keys()


def test_the_check_catches_an_attention_that_lets_a_rows_examples_see_each_other():
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def leaky(module, query, key, value, attention_mask, **kwargs):  # causal over the whole row
        return sdpa_attention_forward(module, query, key, value, None, **kwargs)

    AttentionInterface.register("leaky_test", leaky)  # no mask function: transformers builds no mask for it
    for dtype in (torch.float32, torch.bfloat16):  # bf16: its rounding passes, a leak does not
        assert not speed.padding_free_matches_padded(tiny_model("llama", "leaky_test").to(dtype))
        assert speed.padding_free_matches_padded(tiny_model("llama", speed.register_varlen_sdpa()).to(dtype))
        assert speed.padding_free_matches_padded(tiny_model("llama", "eager").to(dtype))


def test_a_recipe_run_learns_the_same_either_way(tmp_path, embedded_model):
    """Two steps of the recipe: padded batches and TRL's loss head against the defaults (padding-free, loss on
    the trained positions): the same losses, dev losses and adapter weights. With SGD: Adam's first steps
    divide each gradient element by its own size, so an element whose gradient is float noise around zero
    moves by +-lr either way (a few in a thousand here, with the same losses)."""
    from safetensors.torch import load_file

    export_dataset(write_store(tmp_path / "store.jsonl"), tmp_path / "ds", "text")
    runs = {}
    for name, kw in {"trl": {"padding_free": False, "loss_head": "trl"}, "fast": {}}.items():
        lines: list[str] = []
        cfg = tiny_config(tmp_path, embedded_model, max_steps=2, output_dir=tmp_path / name,
                          sft={"optim": "sgd"}, **kw)
        res = train(cfg, log=lines.append)
        meta = json.loads((tmp_path / name / "training_meta.json").read_text())
        runs[name] = (res, meta, load_file(str(tmp_path / name / "adapter_model.safetensors")), lines)
    (res_t, meta_t, w_t, lines_t), (res_f, meta_f, w_f, lines_f) = runs["trl"], runs["fast"]
    assert res_f.losses == pytest.approx(res_t.losses, rel=1e-4)
    assert [e["loss"] for e in res_f.eval_losses] == pytest.approx([e["loss"] for e in res_t.eval_losses], rel=1e-4)
    assert w_f.keys() == w_t.keys()
    for k in w_t:
        torch.testing.assert_close(w_f[k], w_t[k], rtol=1e-4, atol=1e-7, msg=k)
    assert meta_f["speed"] == {"padding_free": True, "padding_free_check": "passed", "attention": speed.VARLEN_SDPA,
                               "loss_head": "trained", "dropout_masks": None,  # lora.dropout 0
                               "torch_threads": torch.get_num_threads()}
    assert meta_t["speed"]["padding_free"] is False and meta_t["speed"]["loss_head"] == "trl"
    assert (f"train: padding-free batches ({speed.VARLEN_SDPA} attention; exactness check passed), "
            "loss on the trained positions only") in lines_f
    assert "train: padded batches, TRL's loss head (entropy and token accuracy logged)" in lines_t


def test_sft_args_padding_free(tmp_path, embedded_model):
    args = sft_args(tiny_config(tmp_path, embedded_model), "float32", tmp_path)
    assert (args.padding_free, args.max_length) == (True, None)  # examples are cut by tokenize_dataset
    one = sft_args(tiny_config(tmp_path, embedded_model, per_device_train_batch_size=1), "float32", tmp_path)
    assert (one.padding_free, one.max_length) == (False, 128)  # nothing to pad
    off = sft_args(tiny_config(tmp_path, embedded_model, padding_free=False), "float32", tmp_path)
    assert (off.padding_free, off.max_length) == (False, 128)
    packed = sft_args(tiny_config(tmp_path, embedded_model, packing=True), "float32", tmp_path)
    assert (packed.padding_free, packed.max_length) == (True, 128)  # the pack length


def test_train_sft_padding_free_is_refused_with_the_key_to_use():
    from pydantic import ValidationError

    from actune.train.config import TrainConfig

    with pytest.raises(ValidationError, match="actune sets it from its own key: write train.padding_free instead"):
        TrainConfig(sft={"padding_free": False})


CPUINFO = "".join(f"processor\t: {p}\nphysical id\t: 0\ncore id\t\t: {p // 2}\n\n" for p in range(8))  # 4 cores x 2


@pytest.mark.parametrize("affinity, quota, local_world, expected", [
    ({0, 1, 2, 3, 4, 5, 6, 7}, None, None, 4),  # hyper-threads of a core count once
    ({0, 1, 2, 3}, None, None, 2),  # the cores this process may run on
    ({0, 2, 4, 6}, "150000 100000", None, 2),  # a quota of 1.5 CPUs rounds up
    ({0, 2, 4, 6}, "max 100000", "2", 2),  # two processes share the node's 4 cores
    ({0}, "50000 100000", "2", 1),  # at least one
])
def test_cpu_threads(tmp_path, monkeypatch, affinity, quota, local_world, expected):
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    if quota:
        (tmp_path / "cpu.max").write_text(quota + "\n")
    monkeypatch.setattr(speed.os, "sched_getaffinity", lambda pid: affinity)
    if local_world:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_world)
    else:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert speed.cpu_threads(tmp_path / "cpuinfo", tmp_path) == expected


def test_set_torch_threads(monkeypatch):
    before = torch.get_num_threads()
    try:
        assert speed.set_torch_threads(1) == 1 == torch.get_num_threads()
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert speed.set_torch_threads(0) == 1  # the launcher's or the user's choice stands
        monkeypatch.delenv("OMP_NUM_THREADS")
        monkeypatch.setattr(speed, "cpu_threads", lambda: 2)
        assert speed.set_torch_threads(0) == 2
    finally:
        torch.set_num_threads(before)


def test_loss_head_auto():
    from actune.train.speed import resolve_loss_head

    assert [resolve_loss_head("auto", d) for d in ("cpu", "cuda")] == ["trained", "trl"]
    assert resolve_loss_head("trl", "cpu") == "trl" and resolve_loss_head("trained", "cuda") == "trained"


def _fused_log_probs(compact: bool, labels: torch.Tensor, ids: torch.Tensor):
    from trl.trainer.utils import add_fused_lm_head

    from actune.train.speed import fused_head_on_trained_positions

    assert fused_head_on_trained_positions(compact) is compact
    model = tiny_model()
    add_fused_lm_head(model)
    out = model(input_ids=ids, labels=labels, fused_lm_head=True)
    out.log_probs.sum().backward()
    return out.log_probs.detach(), model.lm_head.weight.grad.clone()


def test_the_fused_head_on_trained_positions_gives_trls_log_probs_and_gradients():
    import trl.trainer.utils as trl_utils

    from actune.train.speed import fused_head_on_trained_positions

    torch.manual_seed(1)
    ids = torch.randint(0, VOCAB, (2, 12))
    labels = ids.clone()
    labels[0, :5], labels[1, :8] = -100, -100  # prompts and observations are not trained
    try:
        every_position, every_grad = _fused_log_probs(False, labels, ids)
        assert trl_utils._use_triton(torch.device("cpu")) is False  # TRL's own rule: every position on a CPU
        trained_only, trained_grad = _fused_log_probs(True, labels, ids)
        assert trl_utils._use_triton(torch.device("cpu")) is True
        wrapped = trl_utils._use_triton
        fused_head_on_trained_positions(True)
        assert trl_utils._use_triton.trl_rule is wrapped.trl_rule  # a second call wraps TRL's rule, not the wrap
    finally:
        fused_head_on_trained_positions(False)
    assert trl_utils._use_triton(torch.device("cpu")) is False
    assert (trained_only[labels[:, 1:] == -100] == 0).all() and (trained_only[labels[:, 1:] != -100] < 0).all()
    torch.testing.assert_close(trained_only, every_position, rtol=0, atol=1e-5)
    torch.testing.assert_close(trained_grad, every_grad, rtol=0, atol=1e-5)


@pytest.mark.parametrize("p, batch", [(0.05, 0), (0.05, 7), (0.3, 0)])  # batch 7: many draws to cover n
def test_dropped_positions_drop_each_element_independently_with_probability_p(p, batch):
    n = 1_000_000
    torch.manual_seed(3)
    pos = speed.dropped_positions(n, p, batch=batch)
    assert pos.dtype == torch.long and int(pos[0]) >= 0 and int(pos[-1]) < n
    assert bool((pos[1:] > pos[:-1]).all())  # ascending, no position twice
    dropped = torch.zeros(n, dtype=torch.float64)
    dropped[pos] = 1
    sigma = (p * (1 - p) / n) ** 0.5
    for part in (dropped, dropped[: n // 2], dropped[n // 2:]):  # the rate is the same all along
        assert abs(float(part.mean()) - p) < 6 * sigma * (n / len(part)) ** 0.5
    assert abs(float((dropped[1:] * dropped[:-1]).mean()) - p * p) < 6 * (p * p / n) ** 0.5  # neighbours independent
    torch.manual_seed(3)
    assert torch.equal(speed.dropped_positions(n, p, batch=batch), pos)  # seeded by torch's generator
    assert speed.dropped_positions(0, p).numel() == 0


def _positions_one_by_one(n: int, p: float, uniforms: list[float]) -> list[int]:
    """The dropped positions as the definition reads: from each drop (or the start), skip
    floor(log(V) / log(1-p)) kept elements, then drop one; V = 1 - uniform."""
    import math

    out, at = [], 0
    for u in uniforms:
        at += math.floor(math.log(1.0 - u) / math.log1p(-p))
        if at >= n:
            return out
        out.append(at)
        at += 1
    raise AssertionError("not enough uniforms")


@pytest.mark.parametrize("n, p, batch", [(50, 0.3, 0), (50, 0.3, 2), (2000, 0.05, 0), (1, 0.5, 0)])
def test_dropped_positions_are_the_gaps_of_the_uniforms_it_draws(n, p, batch):
    torch.manual_seed(11)
    got = speed.dropped_positions(n, p, batch=batch).tolist()
    torch.manual_seed(11)
    uniforms = torch.rand(4 * n + 64, dtype=torch.float32).tolist()  # the same stream, drawn at once
    assert got == _positions_one_by_one(n, p, uniforms)


def test_dropped_positions_refuse_a_probability_outside_0_1_and_ignore_the_default_dtype():
    for p in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match=r"\(0, 1\)"):
            speed.dropped_positions(10, p)
    before = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        torch.manual_seed(2)
        wide = speed.dropped_positions(5000, 0.1)
    finally:
        torch.set_default_dtype(before)
    torch.manual_seed(2)
    assert torch.equal(wide, speed.dropped_positions(5000, 0.1))


def test_gap_dropout_zeroes_or_scales_each_element_and_its_gradient():
    torch.manual_seed(0)
    x = torch.randn(64, 300, requires_grad=True)
    d = speed.GapDropout(0.2)
    assert d.eval()(x) is x and speed.GapDropout(0.0).train()(x) is x
    y = d.train()(x)
    kept = y != 0
    assert 0.15 < 1 - float(kept.float().mean()) < 0.25
    torch.testing.assert_close(y[kept], x[kept] / 0.8)
    y.backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, kept.float() / 0.8)  # the same elements dropped in the backward
    # a transposed (non-contiguous) bf16 input: the same rule, nn.Dropout's bf16 scale
    xt = torch.randn(300, 64, dtype=torch.bfloat16).t().requires_grad_()
    yt = d(xt)
    kept = yt != 0
    assert not xt.is_contiguous() and yt.dtype == torch.bfloat16 and yt.shape == xt.shape
    assert torch.equal(yt[kept], (xt * (1 / 0.8))[kept])
    yt.backward(torch.ones_like(yt))
    assert torch.equal(xt.grad, kept.to(torch.bfloat16) * (1 / 0.8))
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        speed.GapDropout(1.0)


@pytest.mark.parametrize("masks, expected", [("gaps", speed.GapDropout), ("torch", torch.nn.Dropout)])
def test_actunes_trainer_draws_lora_dropout_as_told(tmp_path, masks, expected):
    trainer = _trainer(speed.ActuneSFTTrainer, tiny_model(), tmp_path, padding_free=True, dropout=0.1,
                       dropout_masks=masks)
    dropouts = [d for m in trainer.model.modules() if isinstance(getattr(m, "lora_dropout", None), torch.nn.ModuleDict)
                for d in m.lora_dropout.values()]
    assert len(dropouts) == 7 * 2 and all(type(d) is expected and d.p == 0.1 for d in dropouts)
    assert trainer.gap_dropouts == (14 if masks == "gaps" else 0)
    with pytest.raises(ValueError, match="dropout_masks must be one of"):
        _trainer(speed.ActuneSFTTrainer, tiny_model(), tmp_path, padding_free=True, dropout_masks="fast")


def test_dropout_masks_auto():
    from actune.train.speed import resolve_dropout_masks

    assert [resolve_dropout_masks("auto", d) for d in ("cpu", "cuda")] == ["gaps", "torch"]
    assert resolve_dropout_masks("torch", "cpu") == "torch" and resolve_dropout_masks("gaps", "cuda") == "gaps"
    assert resolve_dropout_masks("auto", "cpu", compiled=True) == "torch"  # no graph breaks at every LoRA layer
    settings = {"padding_free": True, "padding_free_check": "passed", "attention": speed.VARLEN_SDPA,
                "loss_head": "trained"}
    assert speed_line({**settings, "dropout_masks": "gaps"}).endswith(
        "loss on the trained positions only, LoRA dropout masks from geometric gaps")
    assert speed_line({**settings, "dropout_masks": None}).endswith("loss on the trained positions only")
