"""SFT (``train.objective: sft``, the default): LoRA-fine-tune a base model on an exported dataset with TRL's
SFTTrainer.

    result = train(TrainConfig(dataset=Path("runs/dataset"), output_dir=Path("runs/adapter")))

The recipe runs in three steps, as torchtune's recipes do: :func:`prepare` (1-4: the base model, the exported
dataset checked against ``cfg.wire_format``, every example tokenised and masked by :mod:`actune.train.masking`, a
dev slice held out by task), :func:`fit` (5: SFTTrainer with LoRA; it takes our tokenised examples as they are, so
the loss masks are exactly ours; the lowest-dev-loss checkpoint is loaded back) and :func:`save` (6: the adapter
folder with the files eval needs, by the save path every objective shares, :mod:`actune.train.saving`: swapped in
whole for ``cfg.output_dir``, complete or absent). Every check that can fail runs in :func:`prepare`, before the
model loads; a rerun resumes from the last complete checkpoint. Each step in full, and runs on several GPUs:
docs/architecture.md, "The SFT recipe, step by step".
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from actune.agent.prompt_spec import PromptSpec
from actune.config import public_dump
from actune.records.atomic_write import recover_folder
from actune.records.training_tasks import TRAINING_TASKS_FILE
from actune.runtime import cpu_features
from actune.runtime.chat_templates import tools_template
from actune.runtime.model_files import prepare_model
from actune.runtime.provenance import provenance
from actune.train.checkpoints import durable_checkpoints, run_identity, train_resuming
from actune.train.common import (
    MERGED_DIR,
    Start,
    TrainError,
    check_output_dir,
    checkpoints_dir,
    dev_task_ids,
    hardware_line,
    load_model,
    recipe_args,
    resolve_dtype,
    split_by_task,
    steps_per_epoch,
    trl_args,
)
from actune.train.config import TrainConfig
from actune.train.masking import tokenize_messages, tokenize_segments
from actune.train.saving import save_weights, training_tasks_record, write_adapter_folder

__all__ = ["TrainResult", "train", "prepare", "fit", "save", "training_meta", "Prepared", "Fitted",
           "tokenize_dataset", "sft_args", "make_trainer", "speed_line", "TRAINING_TASKS_FILE", "LOSS_PLOT_FILE"]

TENSORBOARD_DIR = "runs"
"""Where the Trainer's TensorBoard callback writes under its output_dir (and actune keeps them)."""
TRACKER_PACKAGES = {"tensorboard": "tensorboard", "trackio": "trackio", "wandb": "wandb", "mlflow": "mlflow"}
"""``report_to`` trackers checked before training starts -> the package that provides each."""
LOSS_PLOT_FILE = "loss.png"

logger = logging.getLogger(__name__)


@dataclass
class TrainResult:
    output_dir: Path
    examples: int
    steps: int
    final_loss: float
    tokens: int
    trained_tokens: int
    truncated: int
    losses: list[float] = field(default_factory=list)
    """Train loss per logged step."""
    dtype: str = "float32"
    train_examples: int = 0
    dev_examples: int = 0
    eval_losses: list[dict[str, float]] = field(default_factory=list)
    """``{"step", "epoch", "loss"}`` per dev evaluation."""
    best_step: int | None = None
    """Step of the saved adapter when there is a dev slice (lowest dev loss)."""
    best_eval_loss: float | None = None

    @property
    def masked_fraction(self) -> float:
        return 1.0 - self.trained_tokens / self.tokens if self.tokens else 0.0


def _load_dataset(cfg: TrainConfig) -> Any:
    from datasets import load_from_disk

    if not Path(cfg.dataset).is_dir():
        raise TrainError(f"{cfg.dataset}: dataset not found (run `actune export` first)")
    ds = load_from_disk(str(cfg.dataset), keep_in_memory=True)  # no cache files in the dataset folder
    if len(ds) == 0:
        raise TrainError(f"{cfg.dataset}: the dataset is empty")
    wires = set(ds["wire"]) if "wire" in ds.column_names else set()
    if wires != {cfg.wire_format}:
        raise TrainError(f"{cfg.dataset}: dataset wire format is {sorted(wires) or 'unknown'}, but "
                         f"train.wire_format is {cfg.wire_format!r}; re-export with the same wire format")
    return ds


def _steps_method(ds: Any, cfg: TrainConfig) -> str:
    methods = sorted(set(ds["steps_method"]))
    if len(methods) != 1:
        raise TrainError(f"{cfg.dataset}: examples are in several step formats {methods}; a model is trained "
                         "on one method's format (export one method's store)")
    return methods[0]


def tokenize_dataset(ds: Any, tokenizer: Any, cfg: TrainConfig) -> Any:
    """``ds`` with ``input_ids``, ``labels`` and per-example counts (tokens, trained, truncated, straddling)."""
    def encode(ex: dict[str, Any]) -> dict[str, Any]:
        if cfg.wire_format == "text":
            enc = tokenize_segments(tokenizer, ex["segments"], cfg.max_length, mask=cfg.mask_observations)
        else:
            tools = json.loads(ex["tools"]) if cfg.wire_format == "tools" else None
            enc = tokenize_messages(tokenizer, ex["messages"], cfg.max_length, mask=cfg.mask_observations,
                                    tools=tools)
        return {"input_ids": enc.input_ids, "labels": enc.labels, "n_tokens": len(enc.input_ids),
                "n_trained": enc.trained_tokens, "truncated": enc.truncated, "straddling": enc.straddling}

    return ds.map(encode, remove_columns=ds.column_names, desc="Tokenising and masking")


def use_tools_template(tokenizer: Any, model_dir: Path, chosen: Path | None) -> None:
    """Render the tools wire with the template the server will use
    (:func:`actune.runtime.chat_templates.tools_template`)."""
    try:
        template = tools_template(model_dir, chosen)
    except ValueError as e:
        raise TrainError(f"train.chat_template: {e}") from None
    if template is not None:
        tokenizer.chat_template = template.read_text(encoding="utf-8")


def _plot_losses(path: Path, train_points: list[tuple[int, float]], eval_points: list[tuple[int, float]],
                 best_step: int | None, title: str) -> None:
    # Figure + the Agg canvas directly, not pyplot: no global backend state, safe in any process.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if train_points:
        ax.plot(*zip(*train_points), label="train loss", color="tab:blue", linewidth=1)
    if eval_points:
        ax.plot(*zip(*eval_points), "o-", label="dev loss", color="tab:orange")
    best = [(s, v) for s, v in eval_points if s == best_step]
    if best:
        ax.axvline(best[0][0], color="tab:green", linestyle="--", linewidth=1)
        ax.plot(*best[0], "*", color="tab:green", markersize=14, label=f"best (step {best[0][0]}, {best[0][1]:.4f})")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss (trained tokens)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, format="png")


def _say_to_logger(message: str) -> None:
    if not logger.hasHandlers():
        # `actune train` configures no logging, and these lines are the stage's whole report: without a
        # handler Python would drop them (it only shows warnings then)
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
    logger.info(message)


def _check_optional_packages(cfg: TrainConfig) -> None:
    # Before anything slow: without these the run would fail minutes later, inside the Trainer.
    if cfg.load_in_4bit and importlib.util.find_spec("bitsandbytes") is None:
        raise TrainError("train.load_in_4bit needs bitsandbytes, which is not installed: pip install bitsandbytes "
                         "(4-bit training runs on a CUDA GPU), or set train.load_in_4bit=false")
    if cfg.load_in_4bit and "quantization_config" in cfg.sft.init_kwargs():
        raise TrainError("train.load_in_4bit and train.sft.model_init_kwargs.quantization_config both quantise the "
                         "base model: keep one")


def _check_trackers(report_to: list[str]) -> None:
    from transformers.integrations import integration_utils

    missing = [name for name in report_to if name in TRACKER_PACKAGES
               and name not in integration_utils.get_available_reporting_integrations()]
    if missing:
        raise TrainError(f"train.sft.report_to: not installed: {', '.join(missing)} (pip install "
                         + " ".join(TRACKER_PACKAGES[name] for name in missing) + ")")


def sft_args(cfg: TrainConfig, dtype: str, ckpt_dir: Path) -> Any:
    """The ``SFTConfig``: what actune sets, then ``cfg.sft`` on top (checked by TRL itself)."""
    from trl import SFTConfig

    # A dev slice exists exactly when eval_fraction > 0 (dev_task_ids never returns an empty one).
    # Evaluation and checkpoints go together (eval_steps/save_steps are set once the trainer knows the
    # epoch length) so that load_best_model_at_end can reload the checkpoint of the lowest dev loss;
    # the Trainer also evaluates and saves at the last step.
    has_dev = cfg.eval_fraction > 0
    # Padding-free batches are exact (actune.train.speed); TRL refuses max_length with them unless it packs:
    # the examples are already cut to cfg.max_length by tokenize_dataset.
    padding_free = cfg.padding_free and cfg.per_device_train_batch_size > 1
    ours = {**recipe_args(cfg, dtype, ckpt_dir),
            "per_device_eval_batch_size": cfg.per_device_train_batch_size,
            "max_length": None if padding_free and not cfg.packing else cfg.max_length, "padding_free": padding_free,
            "packing": cfg.packing, "save_steps": 1 if has_dev else cfg.save_steps,
            "eval_strategy": "steps" if has_dev else "no", "eval_steps": 1 if has_dev else None,
            "load_best_model_at_end": has_dev, "metric_for_best_model": "eval_loss" if has_dev else None,
            "greater_is_better": False if has_dev else None,
            "prediction_loss_only": True,  # the dev loss only: never gather vocabulary-sized logits
            "dataset_num_proc": None}
    return trl_args(SFTConfig, ours, cfg.sft.trl_settings(), "train.sft")


def _padding_free(args: Any) -> bool:
    # TRL's rule: its best-fit packing batches padding-free too
    return bool(args.padding_free or (args.packing and args.packing_strategy in {"bfd", "bfd_split"}))


def _load_model(model_dir: Path, cfg: TrainConfig, dtype: str, args: Any) -> Any:
    import torch
    from accelerate import DistributedType

    from actune.train.speed import register_varlen_sdpa  # lazy: train.speed imports torch, transformers and trl

    kwargs = {"trust_remote_code": args.trust_remote_code, **cfg.sft.init_kwargs()}
    if _padding_free(args):
        # padding-free rows attended example by example, unless train.sft names an attention (flash-attention
        # has its own varlen kernel; transformers' sdpa and eager mask the row block by block: exact, slower)
        kwargs.setdefault("attn_implementation", register_varlen_sdpa())
    if cfg.load_in_4bit:
        from transformers import BitsAndBytesConfig

        # The settings of the QLoRA paper (NF4, double quantisation); the storage dtype is the compute
        # dtype so that FSDP, which shards parameters of one dtype, can shard the quantised weights.
        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=getattr(torch, dtype), bnb_4bit_quant_storage=getattr(torch, dtype))
        if args.distributed_state.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):
            # bitsandbytes quantises while loading onto the device: each process onto its own GPU
            kwargs.setdefault("device_map", {"": str(args.device)})
    return load_model(model_dir, dtype, **kwargs)


def make_trainer(cfg: TrainConfig, args: Any, dtype: str, model_dir: Path, tokenizer: Any, train_ds: Any,
                 dev_ds: Any = None, *, callbacks: list[Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """Step 5 of the recipe: the base model in ``dtype`` with ``cfg.lora``, in actune's ``SFTTrainer``
    (:mod:`actune.train.speed`), on tokenised ``input_ids`` + ``labels``; ``args`` from :func:`sft_args`.
    Returns the trainer and what it runs with: ``{"padding_free", "padding_free_check", "attention",
    "loss_head", "dropout_masks"}`` (the check: ``passed``, ``failed`` (then the batches are padded) or
    ``not run``; the masks: ``gaps``, ``torch``, or None without LoRA dropout)."""
    from accelerate import DistributedType

    # lazy: train.speed imports torch, transformers and trl
    from actune.train.speed import (
        ActuneSFTTrainer,
        padding_free_matches_padded,
        resolve_dropout_masks,
        resolve_loss_head,
    )

    model = _load_model(model_dir, cfg, dtype, args)
    check = "not run"
    if _padding_free(args) and not cfg.load_in_4bit and args.distributed_state.distributed_type not in (
            DistributedType.FSDP, DistributedType.DEEPSPEED):  # there the weights are sharded: no forward yet
        check = "passed" if padding_free_matches_padded(model) else "failed"
        if check == "failed" and not args.packing:
            args.padding_free, args.max_length = False, cfg.max_length
    lora = cfg.lora.peft_config()
    loss_head = resolve_loss_head(cfg.loss_head, args.device.type)
    masks = resolve_dropout_masks(cfg.dropout_masks, args.device.type, bool(args.torch_compile))
    trainer = ActuneSFTTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=dev_ds,
                               processing_class=tokenizer, peft_config=lora, callbacks=callbacks,
                               loss_head=loss_head, dropout_masks=masks)
    speed = {"padding_free": _padding_free(args), "padding_free_check": check,
             "attention": model.config._attn_implementation, "loss_head": loss_head,
             "dropout_masks": ("gaps" if trainer.gap_dropouts else "torch") if cfg.lora.dropout > 0 else None}
    return trainer, speed


def speed_line(speed: dict[str, Any]) -> str:
    """The log line of :func:`make_trainer`'s settings."""
    if speed["padding_free"]:
        batches = (f"padding-free batches ({speed['attention']} attention; exactness check "
                   f"{speed['padding_free_check']})")
    elif speed["padding_free_check"] == "failed":
        batches = ("padded batches (padding-free ones gave other logits than padded ones on this model: "
                   f"{speed['attention']} attention)")
    else:
        batches = "padded batches"
    head = ("loss on the trained positions only" if speed["loss_head"] == "trained"
            else "TRL's loss head (entropy and token accuracy logged)")
    masks = {"gaps": ", LoRA dropout masks from geometric gaps", "torch": ", LoRA dropout masks from torch"}
    return f"{batches}, {head}{masks.get(speed.get('dropout_masks'), '')}"


@dataclass
class TokenCounts:
    """Token figures of the tokenised dataset, every example counted (dropped ones too)."""
    tokens: int
    trained: int
    truncated: int
    """Examples cut to ``max_length``."""
    straddling: int


@dataclass
class TaskSplit:
    """Example indices split by task into training and dev parts, examples left without a trained token dropped."""
    dev_task_ids: list[str]
    train: list[int]
    dev: list[int]
    dropped: int
    n_tasks: int


@dataclass
class Prepared:
    """What :func:`prepare` sets up for :func:`fit` and :func:`save`."""
    cfg: TrainConfig
    dtype: str
    args: Any
    """The ``SFTConfig``; it also holds the processes' state (rank, barrier)."""
    say: Callable[[str], None]
    threads: int | None
    dataset: Any
    method: str
    model_dir: Path
    tokenizer: Any
    tokenized: Any
    counts: TokenCounts
    split: TaskSplit
    started: float
    """``time.perf_counter()`` when the recipe started."""

    @property
    def out(self) -> Path:
        return Path(self.cfg.output_dir)

    @property
    def ckpt_dir(self) -> Path:
        return checkpoints_dir(self.out)

    @property
    def writer(self) -> bool:
        # one process writes the output folder, by the rule the Trainer saves its checkpoints by
        return bool(self.args.should_save)

    @property
    def start(self) -> Start:
        """Where the run started and writes, as the save path takes it."""
        return Start(self.dtype, self.out, self.ckpt_dir, self.model_dir, self.tokenizer)


@dataclass
class Fitted:
    """What :func:`fit` did: the trainer (holding the weights to save) and the run's figures."""
    trainer: Any
    speed: dict[str, Any]
    eval_steps: int | None
    training_loss: float
    """The Trainer's mean training loss over the run."""
    train_points: list[tuple[int, float]]
    """``(step, train loss)`` per logged step."""
    result: TrainResult


def train(cfg: TrainConfig, *, log: Callable[[str], None] | None = None) -> TrainResult:
    """Run the recipe (module docstring) and return what it did; the adapter lands in ``cfg.output_dir``.

    ``log`` gets the progress lines (default: the ``actune.train.sft`` logger); only the main process of
    each node says them. Under a distributed launcher every process calls this and returns once the
    adapter is in place."""
    run = prepare(cfg, log)
    fitted = fit(run)
    save(run, fitted)
    res = fitted.result
    best = f", best dev loss {res.best_eval_loss:.4f} at step {res.best_step}" if res.best_step is not None else ""
    run.say(f"train: adapter saved to {run.out} ({res.steps} steps, final loss {res.final_loss:.4f}{best}, "
            f"{time.perf_counter() - run.started:.0f} s)")
    # no process returns before the adapter is in place
    run.args.distributed_state.wait_for_everyone()
    return res


def prepare(cfg: TrainConfig, log: Callable[[str], None] | None = None) -> Prepared:
    """Steps 1 to 4 of the recipe: the processes and trainer settings, the dataset, the base model's
    tokenizer, the tokenised examples and the dev split. Every check that can fail fails here, before
    the model is loaded."""
    from transformers import AutoTokenizer

    from actune.train.speed import set_torch_threads  # lazy: train.speed imports torch, transformers and trl

    started = time.perf_counter()
    _check_optional_packages(cfg)
    dtype = resolve_dtype(cfg.dtype)
    args, say = _start_processes(cfg, dtype, log)
    threads = set_torch_threads(cfg.torch_threads) if args.device.type == "cpu" else None
    say(hardware_line(dtype, cfg.dtype) + (f"; {threads} torch threads" if threads else "")
        + (f"; {args.world_size} processes" if args.world_size > 1 else ""))
    ds, method = _read_dataset(cfg)
    with args.main_process_first(desc="preparing the base model"):  # the embedded model is built once
        model_dir = prepare_model(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=args.trust_remote_code)
    if cfg.wire_format == "tools":
        use_tools_template(tokenizer, model_dir, cfg.chat_template)
    tokenized, counts = _tokenize_and_count(ds, tokenizer, cfg, say)
    split = _split_for_dev(ds, tokenized, cfg, say)
    return Prepared(cfg, dtype, args, say, threads, ds, method, Path(model_dir), tokenizer, tokenized, counts,
                    split, started)


def _start_processes(cfg: TrainConfig, dtype: str, log: Callable[[str], None] | None) -> tuple[Any, Callable]:
    """The ``SFTConfig`` and the ``say`` of this process (silent but on each node's main process)."""
    out = Path(cfg.output_dir)
    # Built first: it sets up the processes (rank, barrier) that the rest relies on, TRL checks the
    # settings before anything slow, and a ZeRO-3 config must exist before the model is loaded (the
    # weights are then partitioned as they load).
    args = sft_args(cfg, dtype, checkpoints_dir(out))
    _check_trackers(args.report_to)
    say = (log or _say_to_logger) if args.should_log else (lambda message: None)
    if not args.should_log:
        import datasets
        import transformers

        # the other processes' progress bars would repeat the main process's, line for line
        datasets.disable_progress_bars()
        transformers.utils.logging.disable_progress_bar()
    if args.should_save:
        # a crash of an earlier run between its two renames left the old adapter aside: put it back even
        # if this run fails before its own swap
        recover_folder(out)
    check_output_dir(cfg)  # every process: none may start what the main one refuses
    return args, say


def _read_dataset(cfg: TrainConfig) -> tuple[Any, str]:
    """The exported dataset and the one method whose step format its examples are in."""
    ds = _load_dataset(cfg)
    method = _steps_method(ds, cfg)
    if "task_id" not in ds.column_names or "question" not in ds.column_names:
        raise TrainError(f"{cfg.dataset}: the dataset has no task_id/question columns (re-export it with "
                         "`actune export`)")
    return ds, method


def _tokenize_and_count(ds: Any, tokenizer: Any, cfg: TrainConfig,
                        say: Callable[[str], None]) -> tuple[Any, TokenCounts]:
    tokenized = tokenize_dataset(ds, tokenizer, cfg)
    counts = TokenCounts(tokens=sum(tokenized["n_tokens"]), trained=sum(tokenized["n_trained"]),
                         truncated=sum(bool(x) for x in tokenized["truncated"]),
                         straddling=sum(tokenized["straddling"]))
    if counts.trained == 0:
        raise TrainError(f"{cfg.dataset}: no trained tokens left after masking and truncation to "
                         f"{cfg.max_length} tokens")
    say(f"train: {len(ds)} examples, {counts.tokens} tokens, {counts.trained} trained "
        f"({1 - counts.trained / counts.tokens:.1%} masked), {counts.truncated} truncated to {cfg.max_length} tokens")
    return tokenized, counts


def _split_for_dev(ds: Any, tokenized: Any, cfg: TrainConfig, say: Callable[[str], None]) -> TaskSplit:
    # Dev slice by task: trajectories of one task are near-duplicates, so a dev loss on tasks also
    # trained on would reward memorising them. Examples left without a trained token are dropped here
    # (SFTTrainer would drop them too), so the counts are what is trained and evaluated.
    task_ids = [str(t) for t in ds["task_id"]]
    dev_ids = dev_task_ids(task_ids, cfg.eval_fraction, cfg.seed)
    train_idx, dev_idx = split_by_task(task_ids, cfg.eval_fraction, cfg.seed)
    has_tokens = tokenized["n_trained"]
    train_idx = [i for i in train_idx if has_tokens[i] > 0]
    dev_idx = [i for i in dev_idx if has_tokens[i] > 0]
    dropped = len(ds) - len(train_idx) - len(dev_idx)
    if not train_idx:
        raise TrainError(f"{cfg.dataset}: no training example left with a trained token")
    if dev_ids and not dev_idx:
        raise TrainError(f"{cfg.dataset}: the dev slice ({len(dev_ids)} tasks) has no example with a trained token")
    n_tasks = len(set(task_ids))
    if dev_ids:
        say(f"train: dev slice {len(dev_ids)} of {n_tasks} tasks ({len(dev_idx)} examples), "
            f"{len(train_idx)} training examples" + (f", {dropped} dropped (no trained token)" if dropped else ""))
    return TaskSplit(dev_ids, train_idx, dev_idx, dropped, n_tasks)


def fit(run: Prepared) -> Fitted:
    """Step 5 of the recipe: build the trainer, train (resuming from the last complete checkpoint) and
    read the run's losses; with a dev slice the trainer ends holding the best checkpoint's weights."""
    from transformers import TrainerCallback

    cfg, say = run.cfg, run.say

    class DevLossLog(TrainerCallback):
        def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict | None = None, **kw: Any) -> None:
            if metrics and "eval_loss" in metrics:
                say(f"train: step {state.global_step} (epoch {state.epoch:.2f}): dev loss {metrics['eval_loss']:.4f}")

    columns = ["input_ids", "labels"]
    train_ds = run.tokenized.select(run.split.train).select_columns(columns)
    dev_ds = run.tokenized.select(run.split.dev).select_columns(columns) if run.split.dev else None
    trainer, speed = make_trainer(cfg, run.args, run.dtype, run.model_dir, run.tokenizer, train_ds, dev_ds,
                                  callbacks=[DevLossLog(), durable_checkpoints()])
    say(f"train: {speed_line(speed)}")
    eval_steps = None
    if dev_ds is not None:
        # Packing changes the number of rows, so the epoch length is read from the prepared dataset.
        eval_steps = max(1, math.ceil(steps_per_epoch(len(trainer.train_dataset), trainer.args)
                                      / cfg.evals_per_epoch))
        trainer.args.eval_steps = trainer.args.save_steps = eval_steps
    identity = run_identity(run.cfg)
    training_loss = float(train_resuming(trainer, run.ckpt_dir, say, identity=identity).training_loss)
    train_points, res = _fit_result(run, trainer.state, training_loss, has_dev=dev_ds is not None)
    return Fitted(trainer, speed, eval_steps, training_loss, train_points, res)


def _fit_result(run: Prepared, state: Any, training_loss: float,
                has_dev: bool) -> tuple[list[tuple[int, float]], TrainResult]:
    """The logged ``(step, train loss)`` points and the :class:`TrainResult`, from the Trainer's state."""
    history = state.log_history
    train_points = [(int(h["step"]), float(h["loss"])) for h in history if "loss" in h]
    losses = [v for _, v in train_points]
    final_loss = losses[-1] if losses else training_loss
    if not math.isfinite(final_loss):
        raise TrainError(f"training diverged: final loss {final_loss}")
    eval_losses = [{"step": int(h["step"]), "epoch": float(h["epoch"]), "loss": float(h["eval_loss"])}
                   for h in history if "eval_loss" in h]
    best_step = best_eval_loss = None
    if has_dev and state.best_model_checkpoint is not None:  # it was loaded back at the end
        best_step = int(state.best_global_step)
        best_eval_loss = float(state.best_metric)
    elif has_dev:
        run.say("train: warning: no best checkpoint was kept; saving the last step's adapter")
    counts = run.counts
    res = TrainResult(run.out, len(run.dataset), int(state.global_step), final_loss, counts.tokens, counts.trained,
                      counts.truncated, losses, dtype=run.dtype, train_examples=len(run.split.train),
                      dev_examples=len(run.split.dev), eval_losses=eval_losses, best_step=best_step,
                      best_eval_loss=best_eval_loss)
    return train_points, res


def save(run: Prepared, fitted: Fitted) -> None:
    """Step 6 of the recipe: the adapter with its files, by the save path every objective shares
    (:mod:`actune.train.saving`), and SFT's own: the training tasks beside the meta file, the model cards, the loss
    plot and the TensorBoard logs. Every process enters (``save_model`` needs all of them under FSDP and ZeRO-3);
    one writes."""
    final = save_weights(fitted.trainer, run.start)
    fitted.trainer = None  # free the training copy before the merge loads the base again
    if final is None:
        return
    tasks = training_tasks_record(zip(run.dataset["task_id"], run.dataset["question"]), run.model_dir)
    spec = PromptSpec(method=run.method, regime="zero_shot", wire=run.cfg.wire_format)
    write_adapter_folder(final, run.start, spec, lambda merged_dtype: training_meta(run, fitted, merged_dtype),
                         merge=run.cfg.merge, records=tasks, card=True,
                         extras=lambda folder: _add_loss_records(run, fitted, folder))


def _add_loss_records(run: Prepared, fitted: Fitted, final: Path) -> None:
    """The loss plot and, when the Trainer wrote them, the TensorBoard logs, into the adapter folder ``final``."""
    res = fitted.result
    title = (f"{run.model_dir.name} + LoRA r={run.cfg.lora.r}, {run.dtype}: {res.train_examples} train / "
             f"{res.dev_examples} dev examples")
    _plot_losses(final / LOSS_PLOT_FILE, fitted.train_points, [(e["step"], e["loss"]) for e in res.eval_losses],
                 res.best_step, title)
    if (run.ckpt_dir / TENSORBOARD_DIR).is_dir():
        # the Trainer's TensorBoard logs live in its output_dir, the checkpoints folder deleted once saved;
        # copied, not moved, so a failed swap still leaves them there for the rerun
        shutil.copytree(run.ckpt_dir / TENSORBOARD_DIR, final / TENSORBOARD_DIR)


def training_meta(run: Prepared, fitted: Fitted, merged_dtype: str | None) -> dict[str, Any]:
    """What ``training_meta.json`` records: config, sizes, token counts, losses, dev losses, best step."""
    res, split = fitted.result, run.split
    return {
        "config": public_dump(run.cfg),
        "run": run_identity(run.cfg),
        "base_model_path": str(run.model_dir),
        "method": run.method,
        "dtype": run.dtype,
        "speed": {**fitted.speed, "torch_threads": run.threads},
        "hardware": cpu_features.describe_cpu(),
        "provenance": provenance(run.dtype),
        "processes": run.args.world_size,
        "examples": res.examples,
        "train_examples": res.train_examples,
        "dev_examples": res.dev_examples,
        "dropped_examples": split.dropped,
        "task_ids": split.n_tasks,
        "dev_task_ids": split.dev_task_ids,
        "steps": res.steps,
        "eval_steps": fitted.eval_steps,
        "final_loss": res.final_loss,
        "training_loss": fitted.training_loss,
        "losses": res.losses,
        "eval_losses": res.eval_losses,
        "best_step": res.best_step,
        "best_eval_loss": res.best_eval_loss,
        "tokens": res.tokens,
        "trained_tokens": res.trained_tokens,
        "masked_fraction": res.masked_fraction,
        "truncated_examples": res.truncated,
        "straddling_tokens": run.counts.straddling,
        "merged": {"dir": MERGED_DIR, "dtype": merged_dtype} if merged_dtype else None,
        "wall_s": time.perf_counter() - run.started,
    }


def result_dict(res: TrainResult) -> dict[str, Any]:
    d = asdict(res)
    d["output_dir"] = str(res.output_dir)
    d["masked_fraction"] = res.masked_fraction
    return d
