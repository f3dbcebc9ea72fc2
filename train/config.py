"""TrainConfig: the recipe every objective shares (LoRA, learning rate, batches, dev slice...) and one typed section
per objective (``sft``, ``dpo``, ``grpo``) on a shared base, as TRL's SFTConfig, DPOConfig and GRPOConfig share
TrainingArguments (:class:`ObjectiveSettings`)."""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from actune.agent.config import Wire
from actune.config import StrictModel


class LoraSettings(StrictModel):
    """PEFT LoRA settings."""

    r: int = Field(16, ge=1)
    """LoRA rank. vLLM serves adapters up to serve.max_lora_rank."""
    alpha: int = Field(32, ge=1)
    """LoRA scaling numerator (scale = alpha / r)."""
    dropout: float = Field(0.05, ge=0, lt=1)
    """Dropout on the LoRA branch."""
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    """Modules that get adapters: a list of names (q_proj, v_proj...) or all-linear."""

    def peft_config(self) -> Any:
        """PEFT's ``LoraConfig`` of these settings for a causal LM (every objective trains one)."""
        from peft import LoraConfig

        return LoraConfig(r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=self.target_modules, task_type="CAUSAL_LM")


class GrpoReward(StrictModel):
    """What an episode earns: the judge's verdict, less a penalty per unreadable action. The verdict alone gives
    a group of failures nothing to tell apart; the penalty pushes down the format errors that end most of a
    small model's failed episodes (three unreadable actions in a row end an episode)."""

    kept: float = 1.0
    """Correct and grounded (the judge keeps it)."""
    correct: float = 0.0
    """Correct but not grounded (answered without reading the supporting pages)."""
    wrong: float = 0.0
    """Any other episode: a wrong answer, or none."""
    unreadable_action: float = Field(0.1, ge=0)
    """Subtracted for each action the parser could not read."""


class ObjectiveSettings(StrictModel):
    """What the objectives' sections share, as TRL's SFTConfig, DPOConfig and GRPOConfig share TrainingArguments:
    the settings actune reads are typed fields, and any other field of the objective's TRL config
    (:attr:`TRL_CONFIG`) is passed to TRL as written, on top of what actune sets (:meth:`trl_settings`), checked
    against the installed TRL when the config is read: an unknown key is an error naming it. ``sft`` and ``dpo``
    hold such keys beside their typed fields (``train.sft.optim``, ``train.dpo.loss_type``); ``grpo``, whose own
    fields are the rollouts', in its ``trl`` mapping (``train.grpo.trl.epsilon``)."""

    model_config = ConfigDict(extra="allow")
    TRL_CONFIG: ClassVar[str] = ""
    """The ``trl`` config class (``SFTConfig``...) the section's keys belong to."""

    def trl_keys(self) -> tuple[tuple[str, ...], dict[str, Any]]:
        """(where in the section, the keys passed to TRL as written): here, those beside the typed fields."""
        return (), dict(self.model_extra or {})

    @model_validator(mode="after")
    def _check_trl_keys(self) -> ObjectiveSettings:
        where, keys = self.trl_keys()
        errors = [InitErrorDetails(type=PydanticCustomError("trl_field", msg), loc=(*where, *loc), input=value)
                  for loc, msg, value in self.key_errors(keys)]
        if errors:
            # a ValidationError keeps its own locations, so the message names train.<section>.<key>
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    @classmethod
    def key_errors(cls, keys: dict[str, Any]) -> list[tuple[list[str], str, Any]]:
        """``(location, message, value)`` for each of the section's TRL ``keys`` that cannot be passed to TRL."""
        fields = trl_config_fields(cls.TRL_CONFIG) if keys else frozenset()
        return [([key], f"not a field of trl.{cls.TRL_CONFIG}", value) for key, value in keys.items()
                if key not in fields]

    def trl_settings(self) -> dict[str, Any]:
        """What goes to TRL on top of actune's settings: the typed fields that TRL's config has under the same
        name, then the TRL keys, as written."""
        fields = trl_config_fields(self.TRL_CONFIG)
        typed = {name: getattr(self, name) for name in type(self).model_fields if name in fields}
        return {**typed, **self.trl_keys()[1]}


class SftSettings(ObjectiveSettings):
    """``objective: sft`` (``train.sft``): the tracker, and any other ``trl.SFTConfig`` field, each checked by name
    and type; one that ``train`` has a key for (learning_rate, max_steps, bf16...) is refused, naming that key."""

    TRL_CONFIG: ClassVar[str] = "SFTConfig"
    report_to: str | list[str] | None = "none"
    """Where training's losses go as it runs: tensorboard, trackio, wandb, mlflow (a list for several); none.
    TensorBoard event files are written to ``<output_dir>.checkpoints/runs/`` while training and kept in
    ``<output_dir>/runs/``."""

    @classmethod
    def key_errors(cls, keys: dict[str, Any]) -> list[tuple[list[str], str, Any]]:
        return sft_errors(keys)

    def init_kwargs(self) -> dict[str, Any]:
        """``model_init_kwargs``: the base model's ``from_pretrained`` arguments (actune loads the model itself)."""
        return dict((self.model_extra or {}).get("model_init_kwargs") or {})

    def trl_settings(self) -> dict[str, Any]:
        # model_init_kwargs is TRL's for a model it loads itself; actune loads the model (init_kwargs)
        return {k: v for k, v in super().trl_settings().items() if k != "model_init_kwargs"}


class DpoSettings(ObjectiveSettings):
    """``objective: dpo`` (``train.dpo``): beta, and any other ``trl.DPOConfig`` field, checked by name (TRL checks
    the values when training starts)."""

    TRL_CONFIG: ClassVar[str] = "DPOConfig"
    beta: float = 0.1
    """How far the policy may move from the reference model (the start model): the weight of DPO's implicit KL
    penalty; higher keeps it closer."""


class GrpoSettings(ObjectiveSettings):
    """GRPO over the agent loop (``objective: grpo``): each step, ``tasks_per_step`` training tasks, each played
    ``num_generations`` times by the current adapter on the vLLM server, the episodes judged and rewarded, and
    the loss on the model's own tokens, advantages taken within each task's group."""

    model_config = ConfigDict(extra="forbid")
    TRL_CONFIG: ClassVar[str] = "GRPOConfig"
    num_generations: int = Field(4, ge=2)
    """Episodes per task per step: the group whose rewards are compared."""
    tasks_per_step: int = Field(2, ge=1)
    """Tasks per rollout batch; ``tasks_per_step * num_generations`` must be a multiple of
    ``per_device_train_batch_size * gradient_accumulation_steps``."""
    temperature: float = Field(1.0, gt=0)
    """Sampling temperature of the rollouts (the agent section's is for bootstrap)."""
    concurrency: int = Field(16, ge=1)
    """Episodes in flight during a rollout."""
    reward: GrpoReward = Field(default_factory=GrpoReward)
    trl: dict[str, Any] = Field(default_factory=dict)
    """Any ``trl.GRPOConfig`` field on top of what actune sets (``beta``, ``loss_type``, ``epsilon``...), checked
    against the installed TRL by name (TRL checks the values when training starts)."""

    def trl_keys(self) -> tuple[tuple[str, ...], dict[str, Any]]:
        return ("trl",), dict(self.trl)


class TrainConfig(StrictModel):
    """Fine-tune a LoRA adapter on bootstrapped trajectories (the ReAct paper's §3.3 step)."""

    base_model: str = "smollm2-135m"
    """Model to adapt: a known name, a Hugging Face id or a local folder."""
    dataset: Path = Path("runs/dataset")
    """Exported training dataset folder (``actune export`` writes it from ``bootstrap.store``)."""
    output_dir: Path = Path("runs/adapter")
    """Where the adapter (the best checkpoint by dev loss), ``actune_prompt.json``, ``training_meta.json``,
    ``training_tasks.json``, ``loss.png`` and, with ``merge``, ``merged/`` are written (replaced whole);
    checkpoints go to ``<output_dir>.checkpoints`` while training runs."""
    wire_format: Wire = "text"
    """Train on the paper's text format, on chat turns, or on chat turns with OpenAI tool calls (``tools``); the
    dataset must be exported in the same. Evaluation uses the same automatically (it reads the adapter's
    ``actune_prompt.json``; for ``tools`` it serves the model with a tool parser)."""
    chat_template: Path | None = None
    """tools: a Jinja chat template file to render the turns with (None: the model's own when it renders tools,
    else actune's ChatML one, as the server picks; ``serve.chat_template`` must then name the same file)."""
    mask_observations: bool = True
    """Compute loss only on model-written tokens (thoughts, actions, answers; chat: assistant turns and
    their end-of-turn token), never on the prompt or observations. False: train on every token."""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    """LoRA settings."""
    learning_rate: float = Field(2e-4, gt=0)
    """Peak learning rate (cosine schedule with warm-up; ``sft.lr_scheduler_type`` picks another)."""
    warmup_ratio: float = Field(0.03, ge=0, lt=1)
    """Fraction of the optimizer steps spent warming up linearly."""
    num_train_epochs: float = Field(2.0, gt=0)
    """Passes over the dataset (ignored when max_steps > 0)."""
    max_steps: int = Field(-1, ge=-1)
    """Stop after this many optimizer steps (-1: run the epochs)."""
    per_device_train_batch_size: int = Field(4, ge=1)
    """Sequences per device per step."""
    gradient_accumulation_steps: int = Field(1, ge=1)
    """Steps to accumulate before an optimizer update (effective batch = batch x accumulation x devices)."""
    max_length: int = Field(1024, ge=16)
    """Longest sequence in tokens; longer trajectories keep their start (counted in the log and in
    training_meta.json); one left without a trained token is dropped."""
    packing: bool = False
    """Pack several trajectories into one sequence (TRL packing)."""
    padding_free: bool = True
    """Batches without padding: the examples of a batch are concatenated into one row (TRL's
    ``padding_free``, position ids restarting at each example) and attended example by example (actune's
    SDPA attention, :mod:`actune.train.speed`; or flash-attention's own, chosen with
    ``sft.model_init_kwargs.attn_implementation``), so each token sees exactly what it sees in a padded
    batch: the same logits, loss and gradients (checked on the model at start: one whose attention would let
    the examples of a row see each other trains padded, and the log says so), and no compute on padding.
    Off at batch size 1 (nothing to pad). DPO too: a batch's chosen and rejected sequences run as one row
    (:mod:`actune.train.packed_rows`), where TRL 1.16's DPO pads them. False: TRL's padded batches."""
    loss_head: Literal["auto", "trained", "trl"] = "auto"
    """How the loss reaches the vocabulary. ``trained``: only the positions whose next token is trained go
    through the LM head (the loss never needs the logits of the others: the same loss and gradients); no
    per-step ``entropy`` or ``mean_token_accuracy`` is logged. ``trl``: TRL's fused LM head, which logs both;
    on a GPU it also projects only the trained positions (Triton), but on a CPU it sends every position of
    the batch through the vocabulary twice and computes both metrics over the whole vocabulary for each.
    auto: ``trained`` on CPU, ``trl`` on GPU. DPO and GRPO keep TRL's head, and on a CPU project only the
    trained positions through it unless this is ``trl``."""
    dropout_masks: Literal["auto", "gaps", "torch"] = "auto"
    """How LoRA dropout draws its masks. ``gaps``: the positions of the dropped elements from the geometric gaps
    between them (about n*p random numbers for n elements): the same masks in distribution as ``nn.Dropout``
    (each element dropped independently with probability ``lora.dropout``), from another random stream;
    on CPU, where torch draws one number per element on one thread, ``nn.Dropout`` took 20% of a step at
    dropout 0.05 and the gaps about a tenth of that. ``torch``: PEFT's ``nn.Dropout``. auto: ``gaps`` on
    CPU, ``torch`` on GPU (where drawing is cheap)."""
    torch_threads: int = Field(0, ge=0)
    """Torch threads when training on CPU. 0 (auto): one per physical core this process may use (its CPU
    affinity and cgroup quota, shared among a launcher's processes on the node; torch itself counts every
    core of the machine), unless ``OMP_NUM_THREADS`` is set."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass to save memory (TRL turns it on by default). Off: a
    small model's activations fit easily, and recomputing costs about a third more compute per step."""
    dtype: Literal["auto", "bfloat16", "float32"] = "auto"
    """Weights and compute dtype. auto: on GPU bfloat16 where supported, else float32; on CPU bfloat16
    only where the CPU has bf16 instructions (AVX512-BF16 or AMX: faster and lighter than float32),
    else float32 (on an AVX2-only CPU float32 trained about 10x faster than emulated bfloat16)."""
    seed: int = 0
    """Seed for the dev split, data order and LoRA init."""
    eval_fraction: float = Field(0.1, ge=0, lt=1)
    """Fraction of the dataset's tasks held out as a dev slice (split by task id: every trajectory of a
    task lands on the same side; seeded by ``seed``). The dev loss picks the checkpoint that is saved.
    0: no dev slice; the last step's adapter is saved."""
    evals_per_epoch: int = Field(2, ge=1)
    """Dev-loss evaluations (each with a checkpoint) per epoch, evenly spaced; training also ends with one."""
    logging_steps: int = Field(1, ge=1)
    """Log the loss every N steps."""
    save_steps: int = Field(200, ge=1)
    """Checkpoint every N steps when there is no dev slice (with one, checkpoints are saved at each
    evaluation). A rerun resumes from the last complete checkpoint."""
    load_in_4bit: bool = False
    """QLoRA: load the base model quantised to 4-bit NF4 (double quantisation, computing in ``dtype``) with
    bitsandbytes and train the LoRA on top of it, as ``trl sft --load_in_4bit`` does. Needs bitsandbytes
    (``pip install bitsandbytes``) and, in practice, a CUDA GPU. ``merge`` still merges into the unquantised
    base weights."""
    sft: SftSettings = Field(default_factory=SftSettings)
    """``report_to`` (tensorboard, trackio, wandb; default none) and any other ``trl.SFTConfig`` field, passed to
    TRL as it is and applied on top of what actune sets: ``optim``, ``weight_decay``, ``lr_scheduler_type``,
    ``max_grad_norm``, ``gradient_checkpointing_kwargs``, ``fsdp_config``, ``deepspeed``, ``ddp_timeout``,
    ``push_to_hub``, ``model_init_kwargs`` (passed to the base model's ``from_pretrained``, e.g.
    ``attn_implementation``)... Keys are checked against the installed TRL; a setting that has a key above
    (learning_rate, max_steps, bf16...) must be set there. TensorBoard event files are written to
    ``<output_dir>.checkpoints/runs/`` while training and kept in ``<output_dir>/runs/``. Read with
    ``objective: sft`` only."""
    objective: Literal["sft", "dpo", "grpo"] = "sft"
    """``sft``: imitate the kept episodes of an export (the default). ``dpo``: prefer each pair's chosen side over
    its rejected one (:mod:`actune.train.dpo`; ``dataset`` a preference-pairs folder, ``base_model`` where DPO
    starts, the SFT model's merged folder for SFT -> DPO). ``grpo``: reward the model's own episodes on the
    bootstrap section's tasks (:mod:`actune.train.grpo`; ``dataset`` unused, ``base_model`` where GRPO starts)."""
    dpo: DpoSettings = Field(default_factory=DpoSettings)
    """``beta`` (default 0.1) and any other ``trl.DPOConfig`` field on top of what actune sets (``loss_type``,
    ``label_smoothing``, ``precompute_ref_log_probs``...), checked against the installed TRL; read with
    ``objective: dpo`` only."""
    grpo: GrpoSettings = Field(default_factory=GrpoSettings)
    """Read with ``objective: grpo`` only."""
    merge: bool = False
    """Also write ``<output_dir>/merged/``: the base model with the adapter merged into its weights, with
    tokenizer, ``actune_prompt.json`` and the training records: a plain model folder that vLLM and
    transformers load directly (no LoRA at serve time). Saved in the base model's dtype, or in float32
    when training ran in float32."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_bf16(cls, data: Any) -> Any:
        # bf16 (bool) became dtype; name the new key rather than report "bf16: unknown key".
        if isinstance(data, dict) and "bf16" in data:
            old = data["bf16"]
            new = {True: "bfloat16", False: "float32"}.get(old) if isinstance(old, bool) else None
            hint = f"dtype: {new}" if new else "dtype: bfloat16 or dtype: float32"
            raise ValueError(f"bf16 was replaced by dtype (auto, bfloat16 or float32): write {hint} "
                             "instead, or drop the key for auto (bfloat16 where the hardware computes it natively)")
        return data

    @model_validator(mode="after")
    def _grpo_batches_divide(self) -> "TrainConfig":
        rows = self.grpo.tasks_per_step * self.grpo.num_generations
        step = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if self.objective == "grpo" and rows % step:
            raise ValueError(f"grpo.tasks_per_step x grpo.num_generations ({rows} episodes a rollout) must be a "
                             f"multiple of per_device_train_batch_size x gradient_accumulation_steps ({step})")
        return self


# SFTConfig fields that actune sets from a key of its own (one place for each setting): the fields of
# the same name, plus these.
_RENAMED_SFT_FIELDS = {
    "warmup_steps": "train.warmup_ratio",
    "data_seed": "train.seed",
    "bf16": "train.dtype",
    **dict.fromkeys(["eval_strategy", "eval_steps", "save_strategy", "load_best_model_at_end",
                     "metric_for_best_model", "greater_is_better"], "train.eval_fraction and train.evals_per_epoch"),
}
# What TRL users write elsewhere (trl.ModelConfig, TRL's CLI) and actune has a key for.
_OTHER_TRL_NAMES = {"load_in_4bit": "train.load_in_4bit", "model_name_or_path": "train.base_model",
                    "dtype": "train.dtype", "torch_dtype": "train.dtype", "lora_r": "train.lora.r",
                    "lora_alpha": "train.lora.alpha", "lora_dropout": "train.lora.dropout",
                    "lora_target_modules": "train.lora.target_modules", "max_seq_length": "train.max_length"}


@cache
def trl_config_fields(name: str) -> frozenset[str]:
    """The field names of the installed ``trl.<name>`` (TRL is imported only when a config names some)."""
    import trl

    return frozenset(f.name for f in dataclasses.fields(getattr(trl, name)))


def sft_config_fields() -> frozenset[str]:
    """The field names of the installed ``trl.SFTConfig``."""
    return trl_config_fields("SFTConfig")


def owned_sft_fields() -> dict[str, str]:
    """SFTConfig field -> the actune key that sets it."""
    same = {name: f"train.{name}" for name in TrainConfig.model_fields if name in sft_config_fields()}
    return {**same, **_RENAMED_SFT_FIELDS}


@cache
def _sft_field_type(name: str) -> TypeAdapter:
    from trl import SFTConfig

    return TypeAdapter(typing.get_type_hints(SFTConfig)[name])


def _sft_type_problem(key: str, value: Any) -> str | None:
    """Why ``value`` is not of ``trl.SFTConfig.<key>``'s type (checked as config show checks every other key,
    not first at training, after the export), or None."""
    try:
        _sft_field_type(key).validate_python(value)
    except ValidationError as e:
        return f"not a valid value for trl.SFTConfig.{key}: {e.errors()[0]['msg']}"
    return None


def sft_errors(sft: dict[str, Any]) -> list[tuple[list[str], str, Any]]:
    """``(location under train.sft, message, value)`` for every key of ``sft`` that cannot be passed to TRL."""
    errors: list[tuple[list[str], str, Any]] = []
    if not sft:
        return errors
    fields, owned = sft_config_fields(), owned_sft_fields()
    for key, value in sft.items():
        if key in owned:
            errors.append(([key], f"actune sets it from its own key: write {owned[key]} instead", value))
        elif key not in fields:
            hint = f" (actune's key for it is {_OTHER_TRL_NAMES[key]})" if key in _OTHER_TRL_NAMES else ""
            errors.append(([key], f"not a field of trl.SFTConfig{hint}", value))
        elif (problem := _sft_type_problem(key, value)) is not None:
            errors.append(([key], problem, value))
    init = sft.get("model_init_kwargs")
    if isinstance(init, dict):
        for key in ("dtype", "torch_dtype"):
            if key in init:
                errors.append((["model_init_kwargs", key], "actune sets it from its own key: write train.dtype "
                               "instead", init[key]))
    elif init is not None:
        errors.append((["model_init_kwargs"], "must be a mapping of from_pretrained keyword arguments", init))
    return errors


def check_rank_fits(train: TrainConfig, max_lora_rank: int) -> None:
    """A ValueError when the adapter ``train`` makes has a rank above the serving config's ``max_lora_rank``: the
    server that evaluates it could not load it (found when the config is read, not after the training)."""
    if train.lora.r > max_lora_rank:
        raise ValueError(f"train.lora.r ({train.lora.r}) is above serve.max_lora_rank ({max_lora_rank}): the server "
                         "could not load the adapter; raise serve.max_lora_rank to at least the rank")
