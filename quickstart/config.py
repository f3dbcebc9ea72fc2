"""QuickstartConfig: the whole prompted -> fine-tuned experiment in one typed file (a preset).

    cfg = load_quickstart("smoke", overrides=["rounds=2"])     # configs/quickstart/smoke.yaml
    cfg = load_quickstart("my-preset.yaml")

A preset names what the experiment is (world size, bootstrap passes, recipe, rounds, methods); the
pipeline (:mod:`actune.quickstart.pipeline`) places every file under one output folder
(:mod:`actune.quickstart.layout`), so the paths in the stage sections are not read. It composes every stage's
config, which only the quickstart and the CLI may do: the core never imports a stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PositiveFloat, model_validator

import actune.presets
from actune.agent.method_registry import MethodSpec, method_names, method_spec
from actune.bootstrap.config import BootstrapConfig
from actune.bootstrap.importers import import_methods
from actune.config import ConfigError, RunName, StrictModel, fill_model, load_config
from actune.eval.config import EvalConfig
from actune.runtime import cpu_features
from actune.serve.config import ServeConfig
from actune.sources.fever import FeverSource
from actune.sources.hotpotqa import HotpotQASource
from actune.train.config import TrainConfig, check_rank_fits
from actune.world.config import WorldConfig

__all__ = ["BootstrapPass", "ExploreSettings", "FigureFormat", "ImportSource", "Objective", "QuickstartConfig",
           "QuickstartMethod", "HardwareKind", "RoundStart", "PRESET_DIR", "PRESETS",
           "hardware_kind", "preset_path", "load_quickstart"]

HardwareKind = Literal["cpu-bf16", "cpu-fp32", "cuda"]
"""What a run trains and serves on: a GPU, a CPU with native bf16 (AVX512_BF16 or AMX), or another CPU
(float32; AVX2-only machines)."""
RoundStart = Literal["base", "previous"]
"""What a round >= 2 trains on (:attr:`QuickstartConfig.round_start`)."""
Objective = Literal["dpo", "grpo"]
"""What trains on from the last SFT round's model (:attr:`QuickstartConfig.after_sft`)."""


def _reasons_and_acts(s: MethodSpec) -> bool:
    f = s.steps
    return s.name == f.name and f.trainable and f.acting and f.reason_type is not None and not f.plans


def _quickstart_method(name: str) -> str:
    if not _reasons_and_acts(method_spec(name)):
        raise ValueError(f"method {name!r}: a run bootstraps, trains and evaluates a method that reasons and acts in "
                         f"a step format of its own ({', '.join(method_names(_reasons_and_acts))})")
    return name


def _import_format(name: str) -> str:
    formats = set(import_methods().values())
    if name not in formats:
        raise ValueError(f"{name!r}: imported records are read as one of {', '.join(sorted(formats))}")
    return name


QuickstartMethod = Annotated[str, AfterValidator(_quickstart_method)]
"""A method a run bootstraps, trains and evaluates on the headline, correct AND grounded (ReAct, ReflAct: Standard
and CoT read no pages, their fine-tuning is :attr:`QuickstartConfig.formats`'s; Act has no reasoning)."""
FigureFormat = Literal["standard", "cot", "act", "react"]
"""A step format the ReAct paper's Figure 3 fine-tunes on ReAct's episodes (:attr:`QuickstartConfig.formats`)."""

# configs/quickstart/ of the source tree, installed as the package actune.presets (pyproject.toml), so a
# wheel finds its presets too
PRESET_DIR = Path(actune.presets.__file__).resolve().parent
PRESETS = ("smoke", "full", "gpu", "hotpotqa", "hotpotqa-gpu", "fever")


class BootstrapPass(StrictModel):
    """One pass of round-1 bootstrapping: a slice of the training tasks with the prompt that suits it."""

    kind: str | None = None
    """Only tasks whose ``meta.kind`` is this (None: every training task)."""
    share: float = Field(1.0, gt=0, le=1)
    """The pass stops once the store holds ``share`` x ``bootstrap.target_correct`` kept records (passes
    run in order and share one store, so the last normally has share 1)."""
    limit: int | None = Field(None, ge=1)
    """At most this many tasks of the slice."""
    # SmolLM2-135M keeps 3-7x more trajectories with type-matched exemplars (the probe's notes)
    type_matched: bool = True
    """Prompt with exemplars of the pass's own kind only. The exported examples are zero-shot, so the
    collection prompt never reaches the training data."""


class ImportSource(StrictModel):
    """One outside set of trajectories for :attr:`QuickstartConfig.imports`."""

    path: str
    """The file (or a Hugging Face dataset folder) to import, or with ``format: store`` an actune store."""
    format: Literal["openai", "alpaca", "sharegpt", "store"] = "openai"
    """``actune import``'s formats, or ``store`` for a trajectory store used as it is."""
    method: Annotated[str, AfterValidator(_import_format)] = "react"
    """The step format the records are read as (``actune import --method``)."""
    replay: bool = False
    """Run the records' actions again in the run's environment and train on its observations instead of the
    teacher's (:mod:`actune.bootstrap.replay`); a record whose search opens no page there is left out."""


class ExploreSettings(StrictModel):
    """ETO's exploration, for ``after_sft: [dpo]``: the SFT model plays every training task several times; a task's
    kept episodes against its failed ones are the preference pairs."""

    attempts: int = Field(4, ge=2)
    """Sampled episodes per training task."""
    temperature: float = Field(0.7, gt=0)
    """Their sampling temperature."""
    max_pairs_per_task: int = Field(2, ge=1)
    """Most pairs a task gives."""


class QuickstartConfig(StrictModel):
    """world -> bootstrap -> export -> train -> (expert iteration) -> eval -> report, one command."""

    name: RunName = "quickstart"
    """Run name (in run ids and report titles)."""
    bar: bool = False
    """Judge each tuned model against this project's bar (module ``actune.quickstart.report``: 2x the prompted rate,
    +10 points, +5 over the best yardstick, p < 0.01) in the report. The shipped presets set it: it is the bar we
    hold our own results to; your run's report shows the same figures and tests without a verdict of ours."""
    scale_note: str | None = None
    """What this run's scale can and cannot show, said at the top of its report (the smoke preset: that its
    scores are not a result)."""
    model: str | None = None
    """The model served, tuned and evaluated, named once: fills ``serve.model`` and ``train.base_model``
    where the preset leaves them unset (None: their own defaults)."""
    seed: int = 0
    """One seed for the world, the sampling and the LoRA initialisation: two seeds are two independent
    runs of the same experiment."""
    methods: list[QuickstartMethod] = Field(default_factory=lambda: ["react"])
    """Agent methods to bootstrap, train and evaluate, each on its own (a ReAct adapter is compared with
    prompted ReAct, a ReflAct adapter with prompted ReflAct)."""
    rounds: int = Field(1, ge=1, le=5)
    """Expert iteration: round r >= 2 bootstraps with round r-1's tuned model (zero-shot) on the training
    tasks no earlier round solved, then trains again (``round_start`` says from what)."""
    round_start: RoundStart | dict[QuickstartMethod, RoundStart] = "base"
    """What round r >= 2 trains, for every method or per method (``{react: previous}``; a method not named:
    ``base``; a named method the run leaves out of ``methods`` is ignored, so a preset's shape holds for a
    one-method run too): ``base``, a fresh adapter on the base model with every round's kept data so far (STaR's and
    ReST-EM's choice: no drift from one round's mistakes into the next); ``previous``, a fresh adapter on
    round r-1's merged model with round r's new kept data only. ``previous`` trains each example once
    instead of again in every later round (on a 2-core CPU most of round 2's training is round 1's data
    again); it needs ``train.merge`` (the next round's base is that folder), and the tuned model's
    ``training_tasks.json`` lists the whole lineage's tasks for eval's leakage check. Every preset keeps
    ``base``: why is measured in docs/results.md ("Mixing and training round 2 on from round 1 (seed 8)" and the
    seed 9 run after it)."""
    round_epochs: PositiveFloat | dict[QuickstartMethod, PositiveFloat] | None = None
    """``train.num_train_epochs`` of rounds >= 2, for every method or per method (None, or a method not
    named: round 1's). With ``round_start=previous`` a later round starts from a model that already writes
    the format, so it may need fewer (docs/results.md, seed 8). The full preset's AVX2-only shape trains ReAct's
    round 2 (from the base, on its mixed data) for 2 epochs to fit 4 hours."""
    mix_methods: bool = False
    """FireAct's mix: each method's adapter also trains on the kept episodes of the other methods whose steps
    convert into its format (a ReflAct reflection becomes a ReAct thought; ReAct steps cannot become
    reflections, so a ReflAct adapter gains nothing), after its own and through the same dedupe and
    ``bootstrap.export.max_per_task``. More examples at no bootstrap cost; training takes longer in proportion."""
    round_attempts: int = Field(4, ge=1)
    """Sampled attempts per unsolved task in rounds >= 2."""
    round_temperature: float = Field(0.4, ge=0)
    """Sampling temperature of rounds >= 2."""
    oracle_baseline: bool = True
    """Also evaluate the prompted model with type-matched exemplars for each question (the probe's best
    prompt; an oracle, since it is told the question's kind) beside the generic prompt."""
    source: Literal["world", "hotpotqa", "fever"] = "world"
    """Where the questions and the corpus come from: a synthetic world (``world``), real HotpotQA questions over
    a local Wikipedia corpus (``hotpotqa``, :mod:`actune.sources.hotpotqa`), or real FEVER claims over the local
    FEVER wiki (``fever``, :mod:`actune.sources.fever`: the FEVER actions and label accuracy)."""
    world: WorldConfig = Field(default_factory=WorldConfig)
    """The synthetic world (its ``seed`` is replaced by ``seed``); read with ``source: world`` only."""
    hotpotqa: HotpotQASource = Field(default_factory=HotpotQASource)
    """Which HotpotQA files and how many questions a split; read with ``source: hotpotqa`` only."""
    fever: FeverSource = Field(default_factory=FeverSource)
    """Which FEVER files and how many claims a split; read with ``source: fever`` only."""
    eval_split: Literal["test", "dev"] = "test"
    """The questions every model is evaluated on: ``test`` for a result, ``dev`` for a pilot that must not
    look at the test questions (choosing a recipe, data or epochs)."""
    imports: list[ImportSource] = Field(default_factory=list)
    """Trajectories from elsewhere, exported with every method's training data after its own (through the same
    verdicts, dedupe and per-task cap): a teacher's set read as ``actune import`` reads it (FireAct's GPT-4
    ReAct trajectories, ``format: openai``), or another run's store as it is (``format: store``: a curriculum
    of world episodes). Rounds that train on the previous round's model get them in round 1 only."""
    gold_paths: bool = False
    """Also train on a scripted teacher's episodes (:mod:`actune.bootstrap.gold_paths`): each training question's
    supporting pages searched in this run's corpus, the sentence that shows the answer quoted, the gold answer
    given (a FEVER claim: its evidence pages, the sentence closest to the claim, the verdict); exported after
    ``imports`` in round 1, like them. ReflAct trains on the same paths in its own form (each thought a reflection:
    the pages read, what the last one showed, what is still missing); every other method on ReAct's, converted."""
    gold_path_misses: bool = False
    """Gold paths that search a page as the question writes it even when that misses, then pick the page from the
    ``Similar:`` list the miss shows, where it is listed: a tuned model that never saw a miss repeats it. Not
    yet measured (the HotpotQA pilot's counts of misses: docs/results.md, "Real HotpotQA")."""
    gold_path_mentions: bool = False
    """With ``gold_path_misses``: a supporting page the question names only in part ("Timberwolves" for "2011–12
    Minnesota Timberwolves season") is searched as the question writes it, missed, and picked from the ``Similar:``
    list (split 9277's training questions: 95 of 664 paths show a miss and its recovery, against 28 with full names
    only): the tuned model's searches of such parts missed and it rarely picked the listed page (issue #48; the
    hotpotqa preset sets it: docs/results, "It reads")."""
    gold_path_seen_names: bool = False
    """Gold paths whose every search names what the question or an earlier observation showed: each order of the
    supporting pages is tried, and a question none reaches that way (its first page described, not named: "the
    German chemist who received the Nobel Prize in 1918") is left out rather than taught as a name recalled from
    nowhere (split 7103's training questions: 187 of the 659 paths otherwise written search such a name; issue
    #48; measured on dev: no gain, docs/results 34)."""
    gold_path_cues: bool = False
    """Gold paths whose last thought (no comparison's) starts with the question's word that singles the answer's
    sentence out of the page shown ("directed: Written by Matt Roller and directed by Wes Archer, ..." for "...
    directed by whom?"), so a small model finds the sentence by the word it copies from the question: the tuned
    model's last thoughts quoted the wrong sentence of pages that showed the answer (issue #48; measured on dev: no
    gain, docs/results 34)."""
    gold_path_lookups: bool = False
    """Gold paths that, before an answer that is no comparison's, look up a word of the question on the last page
    whose first hit is the sentence holding the answer, and quote that sentence: the tuned model's bridge answers
    were the first sentence's subject even where the answer was shown (issue #48)."""
    after_sft: list[Objective] = Field(default_factory=list)
    """Objectives trained on from the last SFT round's model (its merged folder: ``train.merge``), each a model of
    its own in the report, paired against the prompted model and against that SFT model: ``dpo`` (ETO: the SFT
    model explores the training tasks, ``explore``; its kept against its failed episodes of a task are the pairs;
    DPO trains on them) and ``grpo`` (GRPO whose rollouts are the loop on the training tasks, ``train.grpo``)."""
    explore: ExploreSettings = Field(default_factory=ExploreSettings)
    """How the SFT model explores for ``dpo``."""
    grpo_tasks: Literal["all", "sometimes"] = "all"
    """The training tasks GRPO's rollouts play: ``all``, or ``sometimes``: those the SFT model's exploration (for
    ``dpo``, listed before ``grpo`` in ``after_sft``) solved sometimes, a kept and a failed episode. A group of
    rollouts that all fail (or all pass) has no advantage and gives no gradient: on real HotpotQA the SFT model
    keeps an episode of few training questions."""
    formats: list[FigureFormat] = Field(default_factory=list)
    """The ReAct paper's Figure 3 at this run's scale (empty: off): each format named (``[standard, cot, act,
    react]``) is fine-tuned on the same bootstrapped episodes and compared with its prompted self. Round 1's ReAct
    store (and what ReAct's round-1 training set adds to it: ``imports``, ``gold_paths``, with ``mix_methods`` the
    other methods' episodes) is exported in each format with ``bootstrap.export``'s settings but one episode a
    task, the first kept (a second episode of a task is the first's Standard example again, which dedupe drops:
    only one a task gives every format the very same episodes, which the export checks); Standard keeps the
    answer, CoT the thoughts as one line of reasoning, Act the actions and observations
    (:func:`actune.bootstrap.export.convert_steps`). One adapter a format trains with the ``train`` recipe (round
    1's), in ``formats/<format>/``; each format's eval pairs the prompted model (``eval.agent``'s prompt, in that
    method) with its adapter (zero-shot, in that method) on the ``eval_split`` questions. The report's Figure 3
    table compares them on ``correct`` (Standard and CoT read no pages, so correct & grounded cannot credit them).
    Needs ``react`` in ``methods``; may be added to a finished run, whose bootstrap it reuses."""
    objective_train: dict[Objective, dict[str, Any]] = Field(default_factory=dict)
    """``train`` keys for one objective's training on top of the recipe's (``{dpo: {learning_rate: 5.0e-6,
    num_train_epochs: 1}, grpo: {max_steps: 20}}``)."""
    passes: list[BootstrapPass] = Field(default_factory=lambda: [BootstrapPass()])
    """Round-1 bootstrap passes, run in order against one server."""
    serve: ServeConfig = Field(default_factory=lambda: ServeConfig(enable_lora=False))
    """How servers are started (the model served in round 1 and for the prompted baselines)."""
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    """Collection settings (``store``, ``env.corpus`` and ``tasks.path`` are set by the pipeline)."""
    train: TrainConfig = Field(default_factory=TrainConfig)
    """The training recipe (``dataset`` and ``output_dir`` are set by the pipeline)."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """Eval settings (``models``, ``out_dir``, ``env.corpus`` and ``tasks.path`` are set by the pipeline)."""
    hardware_overrides: dict[HardwareKind, list[str]] = Field(default_factory=dict)
    """``key=value`` overrides applied on one kind of hardware only, before the command line's own (which
    win), so a preset can shrink to fit a slower machine: the full preset runs one round-1 attempt a
    question on ``cpu-fp32``. Applied by ``actune quickstart``, which says which; the run's stored config
    holds the values they set (this field itself is not compared on resume)."""

    @model_validator(mode="before")
    @classmethod
    def _fill_model(cls, data: Any) -> Any:
        return fill_model(data, {"serve": "model", "train": "base_model"})

    @model_validator(mode="after")
    def _check(self) -> "QuickstartConfig":
        if len(set(self.methods)) != len(self.methods) or not self.methods:
            raise ValueError("methods: name each method once, at least one")
        check_rank_fits(self.train, self.serve.max_lora_rank)
        if not self.passes:
            raise ValueError("passes: at least one bootstrap pass")
        if self.source == "fever" and self.oracle_baseline:
            raise ValueError("oracle_baseline: FEVER claims have no kind to match exemplars to (the type-matched "
                             "prompt is for world and HotpotQA questions); set oracle_baseline=false")
        if self.after_sft and not self.train.merge:
            raise ValueError(f"after_sft ({', '.join(self.after_sft)}) trains on the SFT model's merged folder: it "
                             "needs train.merge=true")
        for objective in self.after_sft:
            self.objective_train_config(objective)  # a bad key fails here, naming objective_train.<objective>
        if self.grpo_tasks == "sometimes" and ("grpo" not in self.after_sft or "dpo" not in
                                               self.after_sft[:self.after_sft.index("grpo")]):
            raise ValueError(f"grpo_tasks=sometimes picks GRPO's tasks from dpo's exploration: after_sft must list "
                             f"dpo before grpo (not {self.after_sft})")
        self._check_formats()
        on_previous = [m for m in self.methods if self.round_start_of(m) == "previous"]
        if on_previous and self.rounds > 1 and not self.train.merge:
            raise ValueError(f"round_start=previous ({', '.join(on_previous)}) trains round r on round r-1's merged "
                             "model: it needs train.merge=true")
        return self

    def _check_formats(self) -> None:
        if len(set(self.formats)) != len(self.formats):
            raise ValueError(f"formats: name each format once, not {self.formats}")
        if self.formats and "react" not in self.methods:
            raise ValueError(f"formats ({', '.join(self.formats)}) fine-tunes each format on the react method's "
                             f"episodes: methods must include react (not {self.methods})")
        direct = [f for f in self.formats if f in ("standard", "cot")]
        if direct and self.train.wire_format == "tools":
            raise ValueError(f"formats: {', '.join(direct)} answer at once, with no action to call as a tool: "
                             "train.wire_format tools is for act and react only")

    def split_sizes(self) -> tuple[int, int]:
        """(training questions, evaluated questions: ``eval_split``'s) of the task source; for real questions with
        no ``n_train``, a guess that only feeds the ETA."""
        if self.source in ("hotpotqa", "fever"):
            src = self.hotpotqa if self.source == "hotpotqa" else self.fever
            # the numbers their files gave in ../shared
            guess = 661 if self.source == "hotpotqa" else 4026
            return src.n_train or guess, src.n_test if self.eval_split == "test" else src.n_dev
        return self.world.n_train, self.world.n_test if self.eval_split == "test" else self.world.n_dev

    def objective_train_config(self, objective: Objective) -> TrainConfig:
        """The recipe ``objective`` trains with: ``train``, then ``objective_train[objective]`` on top."""
        extra = self.objective_train.get(objective, {})
        try:
            return TrainConfig.model_validate({**self.train.model_dump(), **extra, "objective": objective})
        except ValueError as e:
            raise ValueError(f"objective_train.{objective}: {e}") from None

    def round_start_of(self, method: str) -> RoundStart:
        """``method``'s ``round_start``."""
        start = self.round_start
        return start.get(method, "base") if isinstance(start, dict) else start

    def round_epochs_of(self, method: str) -> float | None:
        """``method``'s ``round_epochs`` (None: round 1's)."""
        epochs = self.round_epochs
        return epochs.get(method) if isinstance(epochs, dict) else epochs


def hardware_kind() -> HardwareKind:
    """The kind of hardware this process trains and serves on (:data:`HardwareKind`)."""
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda"
    except ImportError:
        pass
    return "cpu-bf16" if cpu_features.native_bf16() else "cpu-fp32"


def preset_path(preset: str) -> Path:
    """A preset name (``smoke``, ``full``) or a YAML path -> the file."""
    if preset in PRESETS:
        path = PRESET_DIR / f"{preset}.yaml"
        if not path.is_file():
            raise ConfigError(f"preset {preset!r}: {path} not found (the presets ship as "
                              "actune.presets, from the source tree's configs/quickstart/; reinstall actune or pass "
                              "a YAML path)")
        return path
    path = Path(preset)
    if not path.is_file():
        raise ConfigError(f"preset {preset!r}: not one of {', '.join(PRESETS)} and not a file")
    return path


def load_quickstart(preset: str, overrides: list[str] | None = None,
                    hardware: HardwareKind | None = None) -> QuickstartConfig:
    """The preset with ``overrides``; with ``hardware``, that kind's ``hardware_overrides`` go first.

    Every kind's overrides are checked here, whatever the hardware, so a bad key fails on any machine."""
    path, overrides = preset_path(preset), list(overrides or [])
    cfg = load_config(QuickstartConfig, path, overrides)
    chosen = cfg
    for kind, extra in cfg.hardware_overrides.items():
        try:
            shaped = load_config(QuickstartConfig, path, [*extra, *overrides])
        except ConfigError as e:
            raise ConfigError(f"hardware_overrides.{kind}: {e}") from None
        if kind == hardware:
            chosen = shaped
    return chosen
