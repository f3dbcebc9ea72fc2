"""BootstrapConfig: generate many episodes, judge them, keep the correct ones, export datasets."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator, model_validator

from actune.agent.config import AgentConfig, StepsMethod
from actune.agent.method_registry import convertible, method_names, method_spec
from actune.config import StrictModel
from actune.envs.config import EnvConfig
from actune.llm import EnvVarName, RetryPolicy
from actune.runtime.trackers import Tracker
from actune.tasks.config import TaskConfig


def never_convertible(method: str, steps_method: str) -> bool:
    """Whether no record of ``method`` can be exported in ``steps_method`` (Act has no thoughts, PreFlect plans
    and re-plans); a hybrid's records can when one of its phases' formats can (decided per record)."""
    return not any(convertible(f, steps_method) for f in method_spec(method).formats)


def _positive(key: str, shares: dict[str, float]) -> dict[str, float]:
    for name, share in shares.items():
        if not share > 0:
            raise ValueError(f"{key}.{name}: a share must be > 0, got {share}")
    return shares


class ExportConfig(StrictModel):
    """Which kept records become training examples, and in which step format (``actune export``).

    Records of several stores and methods are mixed as in FireAct: each is converted into the adapter's
    step format (see :func:`actune.bootstrap.export.convert_steps`), then near-duplicates are dropped,
    each task is capped, and the method (or store) shares are drawn."""

    stores: list[Path] = Field(default_factory=list)
    """More stores exported together with ``bootstrap.store``, in this order (another method's run, an
    earlier expert-iteration round, a teacher's)."""
    steps_method: StepsMethod = "react"
    """The adapter's step format: every kept record is converted into it (the rules:
    ``actune.bootstrap.export.convert_steps``; Standard, CoT and Act from ReAct records are the paper's Figure 3
    baselines); a record that cannot be (PreFlect always; Act into ReAct, CoT or ReflAct; ReAct into ReflAct;
    Standard into CoT) is counted ``unconvertible`` and left out."""
    method_shares: dict[str, float] = Field(default_factory=dict)
    """Share of exported examples per source method (the record's ``method``), e.g. ``{react: 0.7,
    cot: 0.3}`` (shares are relative: ``{react: 7, cot: 3}`` is the same). Empty: every kept record that
    survives the filters. Otherwise only the named methods, as many in all (N) as lets every method have
    share*N examples; which ones is drawn with ``seed``, spread across tasks."""
    store_shares: dict[str, float] = Field(default_factory=dict)
    """Share of exported examples per store (a path as listed in ``bootstrap.store`` or ``stores``), e.g. an
    imported set against bootstrapped records, ``{runs/imported.jsonl: 0.3, runs/store/trajectories.jsonl:
    0.7}``; drawn like ``method_shares`` (relative shares, only the named stores, seeded, spread across tasks).
    A key that is not one of the exported stores is an error naming it. Not together with ``method_shares``."""
    max_per_task: int | None = Field(2, ge=1)
    """Most episodes exported per task (the first ones in store order, after dedupe), so easy tasks,
    solved on every attempt, do not crowd out hard ones. None: no cap."""
    dedupe_similarity: float = Field(0.9, ge=0.0, le=1.0)
    """Two episodes of one task are near-duplicates when their actions (names and normalised arguments,
    the answer included) are the same and their thoughts/reflections (lower case, whitespace collapsed)
    have a ``difflib`` similarity ratio of at least this; the later one is dropped. 1.0: only exact
    duplicates."""
    seed: int = 0
    """Seed of the ``method_shares`` or ``store_shares`` draw."""
    require_reflection_parts: bool = False
    """For a ReflAct-format adapter (``steps_method: reflact``): leave out kept episodes with a reflection
    lacking one of its parts (current state, latest discovery, goal relation), counted
    ``incomplete_reflections``, so the adapter learns ReflAct's reflections and not ReAct in disguise. Off
    by default: a small model's kept ReflAct episodes mostly lack a part after the first step (see
    :mod:`actune.judge`); the bootstrap summary says how many."""

    @field_validator("method_shares")
    @classmethod
    def _known_methods(cls, v: dict[str, float]) -> dict[str, float]:
        for name in v:
            if name not in method_names():
                raise ValueError(f"method_shares.{name}: unknown method (known: {', '.join(method_names())})")
        return _positive("method_shares", v)

    @field_validator("store_shares")
    @classmethod
    def _positive_store_shares(cls, v: dict[str, float]) -> dict[str, float]:
        # which stores are exported is known only with bootstrap.store: export checks the keys
        return _positive("store_shares", v)

    @model_validator(mode="after")
    def _shares_can_be_converted(self) -> "ExportConfig":
        if self.method_shares and self.store_shares:
            raise ValueError("method_shares and store_shares: set one of them (shares of source methods or of "
                             "stores), not both")
        for name in self.method_shares:
            if never_convertible(name, self.steps_method):
                raise ValueError(f"method_shares.{name}: {name} records cannot be converted into "
                                 f"steps_method {self.steps_method!r}")
        return self


class BootstrapConfig(StrictModel):
    """Collect correct trajectories with a prompted model (the ReAct paper kept about 3,000)."""

    store: Path = Path("runs/store/trajectories.jsonl")
    """Append-only trajectory store (JSONL). Re-running resumes: finished episodes are never redone."""
    endpoints: list[str] = Field(default_factory=list)
    """OpenAI-compatible servers to use (``http://host:port/v1``, or a hosted API such as
    ``https://api.openai.com/v1``: a teacher). Empty: start one from ``serve``."""
    model: str | None = None
    """Model name in requests (default: the served model's name); the name a hosted teacher answers to. It is
    the ``model`` of the store's fingerprint and of each record."""
    api_key_env: EnvVarName | None = None
    """Name of the environment variable holding the API key of ``endpoints`` (a hosted teacher's), sent as
    ``Authorization: Bearer``; the key itself never goes in a config. Needs ``endpoints`` and ``model``. Unset:
    requests carry ``serve.api_key`` (a keyed server of your own), or no key."""
    report_to: list[Tracker] = Field(default_factory=list)
    """Experiment trackers that get this stage's figures once it ends (the summary's counts, per task kind), as
    ``train.sft.report_to`` sends training's: tensorboard (event files in ``<store folder>/runs/<run id>``),
    trackio, wandb, mlflow; each must be installed (checked before any episode runs)."""
    retries: RetryPolicy = Field(default_factory=RetryPolicy)
    """How a request the server did not answer (5xx, connection, a hosted API's 429) is retried: ``max_retries``,
    ``backoff_s``, ``max_backoff_s``. For a hosted teacher's long rate-limit window raise both, e.g.
    ``bootstrap.retries.max_retries=30 bootstrap.retries.max_backoff_s=120`` (about an hour of trying)."""
    concurrency: int = Field(32, ge=1)
    """Episodes in flight at once (vLLM batches their requests)."""
    attempts_per_task: int = Field(4, ge=1)
    """k: sampled attempts per task (each with its own seed)."""
    target_correct: int = Field(3000, ge=1)
    """Stop once this many correct trajectories are kept."""
    require_grounded: bool = True
    """Keep only answers whose supporting pages were actually retrieved (comparisons are coin flips
    otherwise; see the probe notes)."""
    max_failed_episodes: int = Field(20, ge=0)
    """Episodes that raise (a bug, a refused request; not a wrong answer) are logged and skipped, and a
    rerun retries them; more failures than this abort the run."""
    allow_mixed_store: bool = False
    """Add to ``store`` even when its records of ``agent.method`` were produced by another model, adapter,
    prompt or task file (each record's ``info.fingerprint``); without it such a run is refused, naming the
    differences. Episodes of other methods may always share the store."""
    env: EnvConfig = Field(default_factory=EnvConfig)
    """The environment episodes run in."""
    tasks: TaskConfig = Field(default_factory=TaskConfig)
    """The tasks to attempt (normally the train split)."""
    agent: AgentConfig = Field(default_factory=lambda: AgentConfig(temperature=0.4))
    """The agent loop settings (collection samples at T=0.4: the probe's best)."""
    export: ExportConfig = Field(default_factory=ExportConfig)
    """How kept records become a training dataset (``actune export``): stores mixed, step format,
    dedupe, per-task cap, method shares."""

    @model_validator(mode="after")
    def _key_names_an_endpoint(self) -> "BootstrapConfig":
        if self.api_key_env is not None and not self.endpoints:
            raise ValueError("api_key_env: is the key of bootstrap.endpoints, and none are given (without "
                             "endpoints bootstrap starts its own server, keyed by serve.api_key)")
        if self.api_key_env is not None and not self.model:
            raise ValueError("api_key_env: a hosted endpoint needs bootstrap.model, the model name it answers to "
                             "(it is also recorded in the store's fingerprint)")
        return self
