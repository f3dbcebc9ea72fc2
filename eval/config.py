"""EvalConfig: the same agent loop over base and tuned models, scored side by side."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from actune.agent.config import AgentConfig
from actune.config import StrictModel
from actune.envs.config import EnvConfig
from actune.llm import EnvVarName, RetryPolicy
from actune.runtime.trackers import Tracker
from actune.tasks.config import TaskConfig

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class EvalModel(StrictModel):
    """One system under evaluation."""

    label: str
    """Name in the report (``prompted``, ``finetuned``...); also the folder ``out_dir/<label>/`` holding its
    trajectories, so letters, digits, ``.``, ``_`` and ``-`` only."""
    model: str = "smollm2-135m"
    """Base model (known name, Hugging Face id or folder). Models may name different bases: without
    ``eval.endpoints`` eval starts one server per base, in the order the bases first appear, with that
    base's adapters loaded. A folder holding ``actune_prompt.json`` is a merged model (``train.merge=true``
    writes one): its prompt spec is applied exactly like an adapter's. With this model's own ``endpoints``:
    the model name those endpoints answer to (``gpt-4o-mini``, a hosted teacher's)."""
    endpoints: list[str] = Field(default_factory=list)
    """This model's own OpenAI-compatible endpoints (a hosted teacher, a server of yours): it runs against them
    under the name ``model``, with no server started for it and whatever base the others use, so a teacher, a
    prompted student and a tuned student are one eval and one report. Empty: served like the others
    (``eval.endpoints``, else a server eval starts per base)."""
    api_key_env: EnvVarName | None = None
    """Name of the environment variable holding the API key of this model's ``endpoints`` (sent as ``Authorization:
    Bearer``; never the key itself). Read when its episodes are about to run, before any server starts."""
    retries: RetryPolicy | None = None
    """How this model's requests are retried (:class:`actune.llm.RetryPolicy`: ``max_retries``, ``backoff_s``,
    ``max_backoff_s``), e.g. a hosted teacher's long rate-limit window: ``{max_retries: 30, max_backoff_s:
    120}``. The fields it leaves out take RetryPolicy's defaults, not ``eval.retries``'. None: ``eval.retries``."""
    adapter: Path | None = None
    """LoRA adapter folder; its saved prompt spec (``actune_prompt.json``: method, regime, wire format) is
    applied to ``agent`` automatically, and requests go to the adapter's served name."""
    agent: dict[str, Any] = Field(default_factory=dict)
    """This model's overrides of ``eval.agent`` (AgentConfig fields), applied before an adapter's or merged
    model's prompt spec: e.g. ``{exemplar_kinds: [task]}`` makes a ``prompted-oracle`` beside a generic
    ``prompted`` in the same report. An unknown key or a bad value fails naming
    ``eval.models[i].agent.KEY``."""

    compare_to: str | None = None
    """The label of another model this one is also paired against (``vs_reference`` in the report), beside the
    first model: SFT for a model DPO or GRPO trained on from it."""

    @field_validator("label")
    @classmethod
    def _label_is_a_folder_name(cls, v: str) -> str:
        if not _LABEL.match(v):
            raise ValueError(f"label {v!r} must be letters, digits, '.', '_' or '-' (it names a folder)")
        return v

    @model_validator(mode="after")
    def _key_names_an_endpoint(self) -> EvalModel:
        if self.api_key_env is not None and not self.endpoints:
            raise ValueError("api_key_env: is the key of this model's own endpoints, and none are given")
        return self


class EvalConfig(StrictModel):
    """Evaluate prompted and fine-tuned models in exactly the loop that produced the training data."""

    out_dir: Path = Path("runs/eval")
    """Where per-model trajectories (``<label>/trajectories.jsonl``, resumable), the report
    (``report.md``, ``report.json``) and the plot (``scores.png``) go."""
    models: list[EvalModel] = Field(
        default_factory=lambda: [
            EvalModel(label="prompted"),
            EvalModel(label="finetuned", adapter=Path("runs/adapter")),
        ]
    )
    """Systems to compare. The first is the reference of the paired tests."""
    endpoints: list[str] = Field(default_factory=list)
    """OpenAI-compatible servers to use (started with LoRA enabled when a model has an adapter; adapters
    not yet served are loaded at run time). One endpoint serves one base model, so with endpoints every
    model without endpoints of its own must name the same ``model``. Empty: start one server per base model
    from ``serve`` (its ``model``, ``served_model_name`` and ``adapters`` set per base), with that base's
    adapters loaded. Models with their own ``endpoints`` use those instead."""
    api_key_env: EnvVarName | None = None
    """Name of the environment variable holding the API key of ``endpoints`` (sent as ``Authorization: Bearer``;
    never the key itself), for every model without endpoints of its own (those use their own ``api_key_env``).
    Needs ``endpoints``. Unset: requests to ``endpoints`` carry ``serve.api_key`` (a keyed server of yours), or
    no key."""
    served_model: str | None = None
    """Name of the base model in requests (default: ``serve.served_model_name``, else the models' ``model``;
    models with their own ``endpoints`` use their ``model``).
    With several base models it cannot name them all: leave it empty, and each base is served under
    ``serve.served_model_name`` when it is ``serve.model``, else under its own ``model``."""
    retries: RetryPolicy = Field(default_factory=RetryPolicy)
    """How requests are retried (5xx, connection, a hosted API's 429): ``max_retries``, ``backoff_s``,
    ``max_backoff_s`` (:class:`actune.llm.RetryPolicy`), for every model without ``retries`` of its own."""
    concurrency: int = Field(16, ge=1)
    """Episodes in flight at once."""
    attempts: int = Field(1, ge=1)
    """Attempts per task (greedy decoding makes 1 enough; more for sampled pass@1 estimates). Scores average
    a task's attempts first, so the intervals resample tasks."""
    confidence: float = Field(0.95, gt=0, lt=1)
    """Confidence level of the bootstrap intervals."""
    bootstrap_samples: int = Field(1000, ge=100)
    """Resamples for confidence intervals and paired tests."""
    seed: int = 0
    """Seed of the bootstrap resampling (the same seed gives the same intervals)."""
    report_to: list[Tracker] = Field(default_factory=list)
    """Experiment trackers that get this stage's figures once it ends (every model's scores with their intervals
    and paired p-values), as ``train.sft.report_to`` sends training's: tensorboard (event files in
    ``<out_dir>/runs/<run id>``), trackio, wandb, mlflow; each must be installed (checked before any episode
    runs)."""
    max_failed_episodes: int = Field(20, ge=0)
    """Episodes that raise (a bug, a refused request; not a wrong answer) are logged and skipped, and a rerun
    retries them; more failures than this (per model) abort the run."""
    allow_mixed_store: bool = False
    """Resume a model's store (``out_dir/<label>/``) even when its records of the model's method were produced
    by another base model, adapter, prompt or task file (each record's ``info.fingerprint``): its report then
    mixes both. Without it such an eval is refused, naming the differences."""
    yardsticks: bool = True
    """Run the content-free policies (:mod:`actune.eval.yardsticks`: a constant answer, the relation's most
    frequent training answer, answers read off the question, with and without opening the pages it names) on
    the same tasks, as rows of the report, and pair every model against the best of them. Never for ALFWorld
    (a constant answer plays no game)."""
    yardstick_train: TaskConfig | None = None
    """The training questions the yardsticks' answers are fitted on (never the tasks under test). None: no
    training answers to count, so the constant policies answer "yes" and the question-only ones keep their
    defaults (yes, the first option)."""
    env: EnvConfig = Field(default_factory=EnvConfig)
    """The environment."""
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    """The tasks (normally the dev or test split)."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    """Agent settings for prompted models (greedy, as in the paper); a model's own ``agent`` overrides
    come on top, and adapters and merged models then get their prompt spec applied."""

    @field_validator("models")
    @classmethod
    def _labels_unique(cls, v: list[EvalModel]) -> list[EvalModel]:
        if not v:
            raise ValueError("name at least one model")
        seen: set[str] = set()
        for m in v:
            if m.label in seen:
                raise ValueError(f"label {m.label!r} appears twice; each model needs its own label")
            seen.add(m.label)
        for m in v:
            if m.compare_to is not None and (m.compare_to not in seen or m.compare_to == m.label):
                raise ValueError(f"{m.label}.compare_to: {m.compare_to!r} is not another model's label")
        return v

    @model_validator(mode="after")
    def _key_names_the_endpoints(self) -> EvalConfig:
        if self.api_key_env is not None and not self.endpoints:
            raise ValueError("api_key_env: is the key of eval.endpoints, and none are given (without endpoints eval "
                             "starts its own servers, keyed by serve.api_key; a model's own endpoints take "
                             "eval.models[i].api_key_env)")
        return self

    @model_validator(mode="after")
    def _model_agents_valid(self) -> EvalConfig:
        problems = []
        for i in range(len(self.models)):
            try:
                model_agent(self, i)
            except ValueError as e:
                problems.append(str(e))
        if problems:
            raise ValueError("; ".join(problems))
        return self


def model_agent(cfg: EvalConfig, i: int) -> AgentConfig:
    """``eval.agent`` with ``eval.models[i].agent`` on top, validated as an AgentConfig; a bad key raises
    ValueError naming ``eval.models[i].agent.KEY`` (a :class:`actune.config.ConfigError` once loaded)."""
    overrides = cfg.models[i].agent
    if not overrides:
        return cfg.agent
    try:
        return AgentConfig.model_validate({**cfg.agent.model_dump(), **overrides})
    except ValidationError as e:
        problems = []
        for err in e.errors():
            where = ".".join([f"eval.models[{i}].agent", *(str(p) for p in err["loc"])])
            msg = "unknown key (not an AgentConfig field)" if err["type"] == "extra_forbidden" else err["msg"]
            problems.append(f"{where}: {msg}")
        raise ValueError("; ".join(problems)) from None
