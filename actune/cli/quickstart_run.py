"""The quickstart pipeline: world -> bootstrap -> export -> train -> (expert iteration) -> eval -> report.

    run_quickstart(load_quickstart("smoke"), out=Path("runs/quickstart-smoke"))

Every file lands under ``out``::

    world/                               corpus and train/dev/test questions
    <method>/round<r>/trajectories.jsonl the round's bootstrap store (round >= 2: tasks.jsonl, the unsolved ones)
    <method>/round<r>/dataset/           the exported training set (every round's kept data so far)
    <method>/round<r>/adapter/           the adapter (+ merged/ when train.merge)
    eval/<method>/                       report.md/json, scores.png, per-model stores
    report.md, report.json               the headline: tuned vs prompted, per method and round
    quickstart-state.json                stages done, their wall time, the config they ran with

Resuming: a stage recorded as done in ``quickstart-state.json`` is skipped; the stage that was running
resumes through its own files (bootstrap and eval stores are append-only and skip finished episodes,
training resumes from its last complete checkpoint). A rerun with different settings into the same
folder is refused, so one folder always holds one experiment.

Servers: round 1 bootstraps every pass of every method against ONE server of the base model, and the eval
episodes of the prompted model (generic and type-matched prompts) run on it too; it is stopped before
training (on a small CPU the server and training fight for the cores). Round r >= 2 serves round r-1's
tuned model, bootstraps with it and runs its eval episodes. The eval stage then starts a server only for
what no round served (the last round's model) and reports every model (:mod:`actune.eval.run`): two server
starts fewer a method than one server per eval model, each 40-60 s on a 2-core CPU and 1-2 min on a GPU.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.atomic_write import atomic_write_text
from actune.bootstrap.export import convertible
from actune.cli.quickstart_config import QuickstartConfig
from actune.config import ConfigError, public_dump
from actune.stop_signals import stop_signals_as_interrupt
from actune.tasks.config import TaskConfig

__all__ = ["Layout", "Stage", "plan_stages", "estimate_seconds", "export_methods", "export_round", "export_stores",
           "check_import_paths", "imported_stores",
           "time_left", "round_epochs", "round_train_config", "run_quickstart", "served_tuned_model",
           "stored_config_as_current", "train_base", "train_in_child_process", "trains_on_previous", "STATE_FILE"]

STATE_FILE = "quickstart-state.json"


@dataclass(frozen=True)
class Layout:
    """Where each file of one quickstart run goes."""

    out: Path
    source: str = "world"
    """``QuickstartConfig.source``: where :attr:`tasks_dir` is."""

    @property
    def world(self) -> Path:
        return self.out / "world"

    @property
    def tasks_dir(self) -> Path:
        """The corpus and the train/dev/test questions: ``world/`` for a synthetic world, ``tasks/`` for real
        data (``source: hotpotqa``)."""
        return self.world if self.source == "world" else self.out / "tasks"

    @property
    def state(self) -> Path:
        return self.out / STATE_FILE

    def round_dir(self, method: str, r: int) -> Path:
        return self.out / method / f"round{r}"

    def store(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "trajectories.jsonl"

    def round_tasks(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "tasks.jsonl"

    def dataset(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "dataset"

    def adapter(self, method: str, r: int) -> Path:
        return self.round_dir(method, r) / "adapter"

    def eval_dir(self, method: str) -> Path:
        return self.out / "eval" / method

    def imported(self, i: int) -> Path:
        """The store of ``QuickstartConfig.imports[i]`` when it is imported (not a store used as it is)."""
        return self.out / "imports" / f"{i}" / "trajectories.jsonl"

    def imported_as_released(self, i: int) -> Path:
        """``imports[i]`` as imported, before its replay (``replay: true``) writes :meth:`imported`."""
        return self.out / "imports" / f"{i}" / "as_released.jsonl"

    @property
    def gold_paths(self) -> Path:
        """The store of the scripted teacher's episodes (``QuickstartConfig.gold_paths``)."""
        return self.out / "gold_paths" / "trajectories.jsonl"


@dataclass
class Stage:
    name: str
    estimate_s: float
    run: Callable[[], None]


# --- estimates -------------------------------------------------------------------------------------
# Calibrated on the full preset's whole runs (README): seed 1 on an AMD EPYC with AVX512_BF16 (1h57m) and
# seed 4 on an Intel Xeon with AMX (2h02m), stage by stage. Episode costs are in units of a round-1 ReAct
# bootstrap episode (type-matched exemplars); ``episodes_h`` is that episode's rate at 16 requests at once
# (seed 1: 800 in 12.5 min at 48 at once = 3,840 an hour = 3,000 x concurrency_speedup(48)).
# cpu-fp32 is for an AVX2-only CPU, timed on a real one (2-core AMD EPYC, AVX2 only, 2026-12-01, the full
# preset's cpu-fp32 shape, seed 6): bootstrap round 1 (400 ReAct + 400 ReflAct episodes at 48) ran 44.1 min
# against this table's 43.9 (a third of the bf16 episode rate, as the notes' 57.8 against 172.6 generated
# tok/s at 16 said), and a whole ReAct training stage (98 examples, 3 epochs) 864.6 s: 114 tokens/s in the
# units below, so 110 (it had been guessed at 80 before any real figure). The smoke preset as it stood read
# 19.5 min here against 18.9 measured. cuda is a guess.
# They only feed the ETA printed up front: the stages show live progress.
_RATES = {
    "cpu-bf16": {"episodes_h": 3000.0, "train_tok_s": 240.0, "server_s": 40.0},
    "cpu-fp32": {"episodes_h": 1000.0, "train_tok_s": 110.0, "server_s": 60.0},
    "cuda": {"episodes_h": 40000.0, "train_tok_s": 20000.0, "server_s": 90.0},
}
"""``train_tok_s`` is a whole training stage's rate (model load, dev evaluations, checkpoints and the merge
included) over the examples' tokens x epochs: seed 4's four trainings 183-231 tokens/s (Intel Xeon with AMX),
seed 5's 239-267 (AMD EPYC)."""
_TOKENS_PER_EXAMPLE = {"react": 335, "reflact": 500}
"""A zero-shot world episode, prompt included (seed-1 run: 75.6k tokens / 226 ReAct examples; a ReflAct
example trained 1.4-1.6x as long as a ReAct one in seeds 1 and 4)."""
_KEEP_RATE = {"react": 0.21, "reflact": 0.09}
"""Round-1 keep rate with type-matched exemplars (seeds 1-4: ReAct 166-180 of 800, ReflAct 70-82 of 800)."""
_LATER_KEEP_RATE = 0.24
"""Keep rate of a tuned model's episodes on the tasks no earlier round solved (seeds 1-4, round 2: 55-78 of
~275 ReAct, 75-77 of ~335 ReflAct)."""
_EPISODE_COST = {
    "bootstrap": {"react": 1.0, "reflact": 1.3},  # seed 1: 800 ReflAct episodes in 16 min against ReAct's 12.5
    "prompted": {"react": 1.0, "reflact": 1.77},  # eval's generic prompt (six exemplars; ReflAct 10k tokens)
    "tuned": {"react": 0.63, "reflact": 0.75},  # zero-shot (seed 3 eval: 33 s an episode against 52 prompted)
}
_SOURCE_COST = {"world": 1.0, "hotpotqa": 1.0, "fever": 2.0}
"""An episode's cost by task source, against a world episode. HotpotQA: a 112-episode pilot on the AVX512_BF16 EPYC
(48 type-matched bootstrap episodes and 64 prompted eval episodes, one server start) ran its stage at 0.37x the
estimate made with a first guess of 3.0, so about 1.0 (docs/results.md, "Real HotpotQA"); a small sample. FEVER's
2.0 is still a guess."""
_EXPORTED = {"few_attempts": 0.9, "many_attempts": 0.7}
"""Share of kept round-1 episodes left after near-duplicate removal and the per-task cap: 0.86-0.91 with
2 attempts a task (seeds 1-4), 0.7 with 4 (226 of 321)."""
_CONCURRENCY_SPEEDUP = ((16, 1.0), (32, 1.21), (64, 1.34))
"""Generated tok/s against 16 requests at once (the rates above), by bench/serve_throughput.py on the same
CPU with 4 GiB of KV cache: 168, 203 and 225 tok/s at 16, 32 and 64."""


def concurrency_speedup(concurrency: int) -> float:
    """:data:`_CONCURRENCY_SPEEDUP` interpolated in log2(concurrency), flat outside the measured range."""
    points = _CONCURRENCY_SPEEDUP
    if concurrency <= points[0][0]:
        return points[0][1] * concurrency / points[0][0]  # fewer slots than the measured rate: proportionally less
    for (c0, f0), (c1, f1) in zip(points, points[1:]):
        if concurrency <= c1:
            return f0 + (f1 - f0) * math.log2(concurrency / c0) / math.log2(c1 / c0)
    return points[-1][1]


def serving_seconds(units: float, kind: str, concurrency: int) -> float:
    """Wall seconds of ``units`` episodes (in round-1 ReAct bootstrap episodes: :data:`_EPISODE_COST`) served on
    ``kind`` with ``concurrency`` requests at once; server starts not included."""
    return units / (_RATES[kind]["episodes_h"] * concurrency_speedup(concurrency)) * 3600


def hardware_kind() -> str:
    from actune.cpu_features import native_bf16

    try:
        import torch

        if torch.cuda.is_available():
            return "cuda"
    except ImportError:
        pass
    return "cpu-bf16" if native_bf16() else "cpu-fp32"


def _solved_share(keep: float, attempts: int) -> float:
    """Share of tasks with at least one kept episode after ``attempts`` tries: attempts at one task agree
    (seeds 1-4, 2 attempts: ~125 tasks solved by ~170 kept ReAct episodes, 0.75 of the independent count)."""
    return min(0.95, keep * attempts * 0.75 ** (attempts - 1))


def estimate_seconds(cfg: QuickstartConfig, kind: str) -> dict[str, float]:
    """Rough wall time per stage kind (bootstrap, train, eval) of a whole run, from :data:`_RATES`."""
    est = _estimate(cfg, kind)
    return {"bootstrap": sum(est["bootstrap_rounds"]), "train": est["train"], "eval": est["eval"]}


def _estimate(cfg: QuickstartConfig, kind: str) -> dict[str, Any]:
    """:func:`estimate_seconds` with the bootstrap rounds apart (``bootstrap_rounds``: round 1 first)."""
    rate = _RATES[kind]
    attempts = cfg.bootstrap.attempts_per_task
    n_train, n_test = cfg.split_sizes()
    if all(p.limit for p in cfg.passes):  # round 1 asks no more tasks than its passes' limits
        n_round1 = min(n_train, sum(p.limit or 0 for p in cfg.passes))
    else:
        n_round1 = n_train
    source_cost = _SOURCE_COST[cfg.source]
    cap = cfg.bootstrap.export.max_per_task
    exported = _EXPORTED["few_attempts" if cap is None or attempts <= cap else "many_attempts"]
    train = evals = 0.0
    boot = [0.0] * cfg.rounds
    # per method: examples it exports itself, round by round (each round adds its keeps to the earlier ones)
    own: dict[str, list[float]] = {}
    solved_r1: dict[str, float] = {}
    for method in cfg.methods:
        keep = _KEEP_RATE.get(method, 0.2)
        cost = {stage: costs.get(method, 1.0) * source_cost for stage, costs in _EPISODE_COST.items()}
        target = cfg.bootstrap.target_correct
        episodes = min(target / keep, n_round1 * attempts)  # the passes stop at the target
        boot[0] += serving_seconds(episodes * cost["bootstrap"], kind, cfg.bootstrap.concurrency)
        examples = exported * min(target, episodes * keep)
        solved = solved_r1[method] = _solved_share(keep, attempts)
        own[method] = [examples]
        for r in range(2, cfg.rounds + 1):  # later rounds: the tuned model on what is still unsolved
            later = n_train * (1 - solved) * cfg.round_attempts
            boot[r - 1] += serving_seconds(later * cost["tuned"], kind, cfg.bootstrap.concurrency)
            examples += later * _LATER_KEEP_RATE  # a later round's keeps are all exported (seeds 1-4: 74 of 74)
            own[method].append(examples)
            solved = min(0.95, solved + (1 - solved) * _solved_share(_LATER_KEEP_RATE, cfg.round_attempts))
        # the prompted model's eval episodes run on round 1's server and round r-1's model's on round r's; the
        # eval stage serves the last round's model only
        n_prompted = 1 + int(cfg.oracle_baseline)
        for r in range(cfg.rounds):
            units = n_prompted * cost["prompted"] if r == 0 else cost["tuned"]
            boot[r] += serving_seconds(n_test * units, kind, cfg.eval.concurrency)
        evals += serving_seconds(n_test * cost["tuned"], kind, cfg.eval.concurrency) + rate["server_s"]
    imported = _imported_records(cfg)
    for method in cfg.methods:
        per_round = [n + imported for n in own[method]]
        if cfg.mix_methods:  # borrowed episodes fill the per-task cap where the method's own attempts leave room
            room = 1.0 if cap is None or attempts < cap else 1 - solved_r1[method]
            for other in cfg.methods:
                if other != method and convertible(other, method):
                    per_round = [mine + room * theirs for mine, theirs in zip(per_round, own[other])]
        if cfg.round_start_of(method) == "previous":  # each round trains on its new examples only
            per_round = [b - a for a, b in zip([0.0, *per_round], per_round)]
        # else each round retrains from the base model on every round's data so far
        for r, examples in enumerate(per_round, 1):
            epochs = round_epochs(cfg, r, method)
            if cfg.train.max_steps > 0:
                epochs = cfg.train.max_steps * cfg.train.per_device_train_batch_size / max(examples, 1)
            train += examples * _TOKENS_PER_EXAMPLE.get(method, 335) * epochs / rate["train_tok_s"]
    # round 1: one server for every method; later rounds: one per method's tuned model
    boot = [b + rate["server_s"] * (1 if r == 0 else len(cfg.methods)) for r, b in enumerate(boot)]
    return {"bootstrap_rounds": boot, "train": train, "eval": evals}


def _imported_records(cfg: QuickstartConfig) -> int:
    """Records in ``cfg.imports``' files (lines of JSONL; a file not there yet counts 0): each becomes one more
    training example of every method, about as long as a world ReAct example (FireAct's 500 HotpotQA
    trajectories: 803 characters of messages on average); with ``gold_paths``, one a training question, each
    counted 1.5 times (two pages of five sentences: about half as long again)."""
    total = int(1.5 * cfg.split_sizes()[0]) if cfg.gold_paths else 0
    for src in cfg.imports:
        path = Path(src.path)
        if path.is_file() and path.suffix == ".jsonl":
            with path.open("rb") as f:
                total += sum(1 for line in f if line.strip())
    return total


def _fmt(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


# --- state -----------------------------------------------------------------------------------------
def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    """A config as a run is compared on resume: the values in force, not the per-hardware table that set
    some of them (a preset that gains an entry for other hardware still resumes its runs)."""
    return {k: v for k, v in config.items() if k != "hardware_overrides"}


def _load_state(layout: Layout, cfg: QuickstartConfig) -> dict[str, Any]:
    config = _comparable(public_dump(cfg))
    if not layout.state.exists():
        return {"config": config, "done": {}}
    try:
        state = json.loads(layout.state.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{layout.state}: unreadable quickstart state ({e}); remove it to start over") from None
    if state.get("config") != config:
        old = stored_config_as_current(state.get("config") or {})
        if old.get("model") is None:
            old["model"] = config["model"]  # named once since; its sections (serve, train) are compared anyway
        keys = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
        if not keys:  # the same run as stored by an older actune
            state["config"] = config
            return state
        if keys == ["rounds"] and config["rounds"] > old.get("rounds", 0):
            # More rounds on a finished run: earlier rounds stay valid (round r reads only rounds < r);
            # eval and report are redone, and eval's stores skip the models already evaluated.
            state["done"] = {k: v for k, v in state["done"].items() if not k.startswith(("eval ", "report"))}
            state["config"] = config
            return state
        raise ConfigError(f"{layout.out} holds a quickstart run with other settings (differs in: "
                          f"{', '.join(keys)}); use another --out, or the same preset, seed and overrides to resume "
                          "(only --rounds may grow)")
    return state


def stored_config_as_current(old: dict[str, Any]) -> dict[str, Any]:
    """A stored config read by today's QuickstartConfig (renamed keys mapped, keys added since at their
    defaults), so a run started by an older actune resumes when nothing that matters changed."""
    def rename(node: Any) -> Any:
        if isinstance(node, dict):
            node = {k: rename(v) for k, v in node.items()}
            if "max_steps" in node and "regime" in node:  # an agent section: max_steps became episode_steps
                node["episode_steps"] = node.pop("max_steps")
            return node
        return [rename(v) for v in node] if isinstance(node, list) else node

    try:
        return _comparable(public_dump(QuickstartConfig.model_validate(rename(old))))
    except ValueError:
        return old  # not readable today: compared as stored, so the refusal names what differs


def _save_state(layout: Layout, state: dict[str, Any]) -> None:
    atomic_write_text(layout.state, json.dumps(state, indent=2) + "\n")


# --- the stages ------------------------------------------------------------------------------------
def served_tuned_model(adapter: Path, base: str) -> tuple[str, Path | None]:
    """(model to serve, adapter or None) of a trained adapter folder: its merged weights when trained with
    ``train.merge`` (served at base speed), else the base model with the LoRA adapter."""
    merged = adapter / "merged"
    if merged.is_dir():
        return str(merged), None
    return base, adapter


def export_methods(cfg: QuickstartConfig, method: str) -> list[str]:
    """The methods whose stores feed ``method``'s adapter: its own first (the per-task cap keeps the first
    episodes), then, with ``mix_methods``, every other method whose steps convert into ``method``'s."""
    others = [m for m in cfg.methods if m != method and convertible(m, method)] if cfg.mix_methods else []
    return [method, *others]


def export_stores(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> list[Path]:
    """The stores exported for ``method``'s round-``r`` adapter, in order: every round so far of each method
    of :func:`export_methods` (with ``round_start=previous``, round ``r``'s only: the earlier rounds are in
    the model it trains on), then the imported ones (:func:`imported_stores`; with every round that trains from
    the base model)."""
    first = r if trains_on_previous(cfg, r, method) else 1
    own = [layout.store(m, k) for m in export_methods(cfg, method) for k in range(first, r + 1)
           if layout.store(m, k).exists()]
    return own + (imported_stores(cfg, layout) if first == 1 else [])


def check_import_paths(cfg: QuickstartConfig) -> None:
    """A :class:`ConfigError` naming ``imports[i].path`` for a set that is not there (a store must be a file; a
    set to import may be a file or a dataset folder)."""
    for i, src in enumerate(cfg.imports):
        path = Path(src.path)
        if not (path.is_file() if src.format == "store" else path.exists()):
            raise ConfigError(f"imports[{i}].path: {src.path} not found")


def imported_stores(cfg: QuickstartConfig, layout: Layout) -> list[Path]:
    """The stores of ``cfg.imports``, in order (an imported set's store under the run, or a store as it is), then
    with ``cfg.gold_paths`` the gold paths' store."""
    stores = [Path(src.path) if src.format == "store" else layout.imported(i) for i, src in enumerate(cfg.imports)]
    return stores + ([layout.gold_paths] if cfg.gold_paths else [])


def trains_on_previous(cfg: QuickstartConfig, r: int, method: str) -> bool:
    """Whether ``method``'s round ``r`` trains on round r-1's merged model with its own data only
    (``round_start``)."""
    return r > 1 and cfg.round_start_of(method) == "previous"


def round_epochs(cfg: QuickstartConfig, r: int, method: str) -> float:
    """``train.num_train_epochs`` of ``method``'s round ``r``: its ``round_epochs`` for rounds >= 2 when set."""
    epochs = cfg.round_epochs_of(method)
    return epochs if r > 1 and epochs is not None else cfg.train.num_train_epochs


def round_train_config(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> Any:
    """The :class:`~actune.train.config.TrainConfig` of ``method``'s round-``r`` training: the preset's recipe
    on the round's dataset, base model (:func:`train_base`) and epochs (:func:`round_epochs`), the run's seed."""
    return cfg.train.model_copy(update={"dataset": layout.dataset(method, r), "output_dir": layout.adapter(method, r),
                                        "base_model": train_base(cfg, layout, method, r),
                                        "num_train_epochs": round_epochs(cfg, r, method), "seed": cfg.seed})


def train_base(cfg: QuickstartConfig, layout: Layout, method: str, r: int) -> str:
    """The model ``method``'s round-``r`` adapter trains on: the preset's base model, or with
    ``round_start=previous`` (rounds >= 2) round r-1's merged model."""
    if not trains_on_previous(cfg, r, method):
        return cfg.train.base_model
    from actune.train.run import MERGED_DIR

    return str(layout.adapter(method, r - 1) / MERGED_DIR)


def export_round(cfg: QuickstartConfig, stores: list[Path], method: str, out_dir: Path) -> Any:
    """Export ``stores`` as ``method``'s training set in ``out_dir`` with the run's export settings and seed;
    the :class:`~actune.bootstrap.export.ExportSummary`."""
    from actune.bootstrap.export import export_dataset

    export_cfg = cfg.bootstrap.export.model_copy(update={"steps_method": method, "seed": cfg.seed})
    return export_dataset(stores, out_dir, cfg.train.wire_format, export_cfg)


class _Pipeline:
    def __init__(self, cfg: QuickstartConfig, layout: Layout, show_progress: bool,
                 log: Callable[[str], None]) -> None:
        self.cfg, self.layout, self.show_progress, self.log = cfg, layout, show_progress, log

    # the tasks: a synthetic world, or real questions over a local corpus
    def world(self) -> None:
        if self.cfg.source in ("hotpotqa", "fever"):
            from actune.fever_source import write_fever_tasks
            from actune.hotpotqa_source import MANIFEST, write_hotpotqa_tasks

            if (self.layout.tasks_dir / MANIFEST).exists():
                return
            if self.cfg.source == "hotpotqa":
                m = write_hotpotqa_tasks(self.cfg.hotpotqa, self.layout.tasks_dir)
            else:
                m = write_fever_tasks(self.cfg.fever, self.layout.tasks_dir)
            c = m["counts"]
            self.log(f"tasks: {self.cfg.source}, {m['pages']} pages; train {c['train']}, dev {c['dev']}, "
                     f"test {c['test']} (no question or supporting page shared between splits)")
            return
        from actune.world import write_world

        if (self.layout.world / "world.json").exists():
            return
        gen = write_world(self.cfg.world.model_copy(update={"seed": self.cfg.seed}), self.layout.world)
        c = gen.manifest["counts"]
        self.log(f"world: {c['pages']} pages; questions train {c['train']}, dev {c['dev']}, test {c['test']}")

    def imports(self) -> None:
        """Import each outside set once (a set already imported adds nothing: the store skips its records), then
        refuse one that asks a dev or test question."""
        from actune.bootstrap.importers import ImportSetError, import_set

        env = "fever" if self.cfg.source == "fever" else "wiki"
        check_import_paths(self.cfg)
        for i, src in enumerate(self.cfg.imports):
            if src.format == "store":
                self._check_no_held_out_questions(i, Path(src.path))
                continue
            store = self.layout.imported_as_released(i) if src.replay else self.layout.imported(i)
            try:
                summary = import_set(src.path, store, src.format, env=env, method=src.method)
            except ImportSetError as e:
                raise ConfigError(f"imports[{i}].path: {e}") from None
            self.log(f"imports[{i}]: {summary.imported} of {summary.total} records imported from {src.path} "
                     f"({summary.total - summary.imported} rejected)")
            if summary.total == 0:
                raise ConfigError(f"imports[{i}]: {src.path} holds no records")
            if summary.imported == 0 and not summary.rejected.get("already_imported"):
                raise ConfigError(f"imports[{i}]: every record of {src.path} was rejected:\n{summary.table()}")
            if src.replay:
                self._replay(i, store)
            self._check_no_held_out_questions(i, self.layout.imported(i))

    def gold_paths(self) -> None:
        """Write the scripted teacher's episode of every training question (a stopped run resumes)."""
        from actune.bootstrap.gold_paths import write_gold_paths
        from actune.tasks.loading import load_tasks

        tasks = load_tasks(self._tasks("train"))
        s = write_gold_paths(tasks, str(self.layout.gold_paths), self._env(self.cfg.bootstrap.env),
                             misses=self.cfg.gold_path_misses)
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(s.skipped.items())) or "none"
        self.log(f"gold paths: {s.written} written, {s.already} written before, of {s.total} training questions "
                 f"(left out: {skipped})")
        if s.written + s.already == 0:
            raise ConfigError(f"gold_paths: none of the {s.total} training questions has a gold path (left out: "
                              f"{skipped}); they need meta.supporting_titles that this run's corpus holds")

    def _check_no_held_out_questions(self, i: int, store: Path) -> None:
        from actune.text import normalise_question
        from actune.trajectory import read_trajectories

        held = {normalise_question(json.loads(line)["question"]) for split in ("dev", "test")
                for line in (self.layout.tasks_dir / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()}
        leaked = [t.task.question for t in read_trajectories(store) if normalise_question(t.task.question) in held]
        if leaked:
            raise ConfigError(f"imports[{i}]: {len(leaked)} records of {store} ask a dev or test question of this "
                              f"run (e.g. {leaked[0]!r}): leave them out of the set")

    def _replay(self, i: int, store: Path) -> None:
        from actune.bootstrap.replay import replay_store

        r = replay_store(store, self.layout.imported(i), self._env(self.cfg.bootstrap.env))
        self.log(f"imports[{i}]: replayed {r.replayed} of {r.total} records in this run's corpus ({r.missed} left out: "
                 f"a search opened no page, e.g. {'; '.join(r.examples[:2]) or '-'}; {r.already} replayed before)")
        if r.replayed + r.already == 0 and r.total:
            raise ConfigError(f"imports[{i}].replay: none of the {r.total} records' searches all open a page of "
                              f"{self.layout.tasks_dir / 'corpus.jsonl'}: replay needs the pages the teacher read "
                              "(for FireAct, a full Wikipedia-abstracts corpus); drop replay to train on its own text")

    def _tasks(self, split: str, **update: Any) -> TaskConfig:
        return TaskConfig(format="custom", path=str(self.layout.tasks_dir / f"{split}.jsonl"), split=split, **update)

    def _env(self, env: Any) -> Any:
        name = "fever" if self.cfg.source == "fever" else "wiki"
        return env.model_copy(update={"name": name, "corpus": str(self.layout.tasks_dir / "corpus.jsonl")})

    def _agent(self, agent: Any, method: str, **update: Any) -> Any:
        return agent.model_copy(update={"method": method, "seed": self.cfg.seed, **update})

    def _run_bootstrap(self, bootstrap: Any, serve: Any, run_id: str, served: Any) -> None:
        from actune.bootstrap.run import run_bootstrap

        run_bootstrap(bootstrap, serve, name=self.cfg.name, show_progress=self.show_progress, run_id=run_id,
                      served=served)

    # round 1: every pass of every method against one server of the base model
    def _round1_work(self) -> list[tuple[str, int, Any]]:
        """(method, pass index, bootstrap config) of every pass that still has episodes to run."""
        from actune.store import read_state
        from actune.tasks.loading import load_tasks

        cfg = self.cfg
        work = []
        for method in cfg.methods:
            store = self.layout.store(method, 1)
            state = read_state(store) if store.exists() and store.stat().st_size else None
            for i, p in enumerate(cfg.passes):
                target = max(1, math.ceil(p.share * cfg.bootstrap.target_correct))
                tasks = self._tasks("train", where={"kind": p.kind} if p.kind else {}, limit=p.limit)
                if state is not None:
                    if state.kept >= target:
                        continue
                    ids = [t.id for t in load_tasks(tasks)]
                    if all((tid, method, a) in state.done for a in range(cfg.bootstrap.attempts_per_task)
                           for tid in ids):
                        continue
                agent = self._agent(cfg.bootstrap.agent, method,
                                    exemplar_kinds=[p.kind] if p.kind and p.type_matched else None)
                boot = cfg.bootstrap.model_copy(update={
                    "store": store, "target_correct": target, "env": self._env(cfg.bootstrap.env),
                    "tasks": tasks, "agent": agent,
                })
                work.append((method, i, boot))
                state = None  # later passes depend on what this one keeps: let the stage decide
        return work

    def bootstrap_round1(self) -> None:
        from actune.collect import make_run_id
        from actune.serve.server import serving

        cfg = self.cfg
        work = self._round1_work()
        if not work:  # a resumed run whose passes are all done: no server to start (eval runs what is left)
            self.log("bootstrap round 1: every pass is done")
            return
        run_id = make_run_id(f"{cfg.name}-r1")
        # one server for every pass, restarted in place if it dies (serve.max_restarts in all)
        with serving([], "", cfg.serve) as served:
            for method, i, boot in work:
                p = cfg.passes[i]
                self.log(f"bootstrap {method} round 1, pass {i + 1}/{len(cfg.passes)} "
                         f"({p.kind or 'all kinds'}): until {boot.target_correct} kept")
                boot = boot.model_copy(update={"endpoints": served.endpoints, "model": served.model})
                self._run_bootstrap(boot, cfg.serve, run_id, served)
            for method in cfg.methods:
                self.eval_on(served, method, self.prompted_labels(), run_id)

    def tuned_model(self, method: str, r: int) -> tuple[str, Path | None]:
        """(model to serve, adapter or None) of round ``r``'s tuned model (:func:`served_tuned_model`)."""
        return served_tuned_model(self.layout.adapter(method, r), self.cfg.serve.model)

    def solved_tasks(self, method: str, before_round: int) -> set[str]:
        from actune.judge import verdict_of
        from actune.trajectory import read_trajectories

        solved: set[str] = set()
        for r in range(1, before_round):
            path = self.layout.store(method, r)
            if path.exists():
                solved |= {t.task.id for t in read_trajectories(path) if (v := verdict_of(t)) and v.kept}
        return solved

    # round r >= 2: the previous round's tuned model, zero-shot, on the tasks no round solved yet
    def bootstrap_round(self, r: int) -> None:
        from actune.agent.prompt_spec import load_prompt_spec
        from actune.collect import make_run_id
        from actune.serve.server import serving

        cfg = self.cfg
        run_id = make_run_id(f"{cfg.name}-r{r}")
        for method in cfg.methods:
            tasks_file = self.layout.round_tasks(method, r)
            if not tasks_file.exists():  # written once, so a resumed round works on the same tasks
                solved = self.solved_tasks(method, r)
                train = (self.layout.tasks_dir / "train.jsonl").read_text(encoding="utf-8")
                lines = [line for line in train.splitlines() if line.strip() and json.loads(line)["id"] not in solved]
                tasks_file.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(tasks_file, "".join(line + "\n" for line in lines))
            else:
                lines = [line for line in tasks_file.read_text(encoding="utf-8").splitlines() if line.strip()]
            n_tasks = len(lines)
            if n_tasks == 0:
                self.log(f"bootstrap {method} round {r}: every training task is solved; nothing to do")
                continue
            model, adapter = self.tuned_model(method, r - 1)
            spec = load_prompt_spec(adapter or Path(model))
            # served and asked for as the eval stage names it, so its eval episodes run on this server too
            serve, request_model = self.eval_serving(method, f"tuned-r{r - 1}")
            agent = spec.apply(self._agent(cfg.bootstrap.agent, method, temperature=cfg.round_temperature))
            self.log(f"bootstrap {method} round {r}: {n_tasks} unsolved training tasks x {cfg.round_attempts} "
                     f"attempts with the round-{r - 1} model ({spec.regime}, {spec.wire})")
            with serving([], "", serve) as served:
                boot = cfg.bootstrap.model_copy(update={
                    "store": self.layout.store(method, r), "endpoints": served.endpoints, "model": request_model,
                    "attempts_per_task": cfg.round_attempts, "target_correct": n_tasks * cfg.round_attempts,
                    "env": self._env(cfg.bootstrap.env),
                    "tasks": TaskConfig(format="custom", path=str(tasks_file), split="train"), "agent": agent,
                })
                self._run_bootstrap(boot, serve, run_id, served)
                self.eval_on(served, method, [f"tuned-r{r - 1}"], run_id)

    def export(self, method: str, r: int) -> None:
        stores = export_stores(self.cfg, self.layout, method, r)
        summary = export_round(self.cfg, stores, method, self.layout.dataset(method, r))
        self.log(f"export {method} round {r}: {summary.exported} examples from {len(stores)} store(s)")

    def train(self, method: str, r: int) -> None:
        train_in_child_process(round_train_config(self.cfg, self.layout, method, r))

    def prompted_labels(self) -> list[str]:
        return ["prompted", "prompted-oracle"] if self.cfg.oracle_baseline else ["prompted"]

    def eval_config(self, method: str) -> Any:
        """The eval stage's :class:`~actune.eval.config.EvalConfig` for ``method``: the prompted model (generic
        prompt; with ``oracle_baseline`` also type-matched) and each round's tuned model, on the test split
        (``eval_split``).
        A round not trained yet names the adapter folder it will have."""
        from actune.eval.config import EvalModel

        cfg = self.cfg
        base = cfg.serve.model
        models = [EvalModel(label="prompted", model=base)]
        if cfg.oracle_baseline:
            models.append(EvalModel(label="prompted-oracle", model=base, agent={"exemplar_kinds": ["task"]}))
        for r in range(1, cfg.rounds + 1):
            model, adapter = self.tuned_model(method, r)
            models.append(EvalModel(label=f"tuned-r{r}", model=model, adapter=adapter))
        return cfg.eval.model_copy(update={
            "out_dir": self.layout.eval_dir(method), "models": models, "env": self._env(cfg.eval.env),
            "tasks": self._tasks(cfg.eval_split), "agent": self._agent(cfg.eval.agent, method), "endpoints": [],
        })

    def eval_serving(self, method: str, label: str) -> tuple[Any, str]:
        """(serve section, request name) of a server for eval model ``label`` of ``method``, as the eval stage
        would start it: its base, served name and adapter."""
        from actune.eval.run import base_models, group_by_base, group_serve_config, plan_models

        ecfg = self.eval_config(method)
        plan = plan_models(ecfg, self.cfg.serve, [label])[0]
        group = group_by_base([plan])[0]
        return group_serve_config(group, self.cfg.serve, len(base_models(ecfg))), plan.request_model

    def eval_on(self, served: Any, method: str, labels: list[str], run_id: str) -> None:
        """Run eval models ``labels`` of ``method`` on ``served``, the server a bootstrap round started for
        their model: the eval stage finds their episodes stored and starts no server for them."""
        from actune.eval.run import run_eval

        self.log(f"eval {method}: {', '.join(labels)} on this round's server")
        restarts = served.server.restarts if served.server is not None else 0
        try:
            run_eval(self.eval_config(method), self.cfg.serve, name=f"{self.cfg.name}-{method}",
                     show_progress=self.show_progress, run_id=run_id, served=served, labels=labels)
        except ConfigError as e:  # refused before any episode ran: the eval stage meets it again, where it belongs
            self.log(f"eval {method}: not on this round's server ({e}); the eval stage runs {', '.join(labels)}")
        if served.server is not None and served.server.restarts > restarts:  # neither bootstrap nor eval counts these
            self.log(f"eval {method}: the model server died and was restarted "
                     f"{served.server.restarts - restarts} time(s) during these episodes")

    def eval(self, method: str) -> None:
        from actune.eval.run import run_eval

        cfg = self.cfg
        run_eval(self.eval_config(method), cfg.serve, name=f"{cfg.name}-{method}", show_progress=self.show_progress)
        self.cards(method)

    def cards(self, method: str) -> None:
        """Rewrite each tuned round's model cards (adapter and merged/) with the eval table: `actune train`
        wrote them before there was an eval, so a push right after the quickstart would ship no scores."""
        from actune.cli.card import as_named_in_card
        from actune.train.model_card import write_folder_card

        report = as_named_in_card(self.layout.eval_dir(method) / "report.json")
        for r in range(1, self.cfg.rounds + 1):
            adapter = self.layout.adapter(method, r)
            for folder in (adapter, adapter / "merged"):
                if (folder / "README.md").is_file():
                    write_folder_card(folder, report=report)
        self.log(f"cards {method}: eval table of {report} in each tuned model's card")

    def report(self) -> None:
        from actune.cli.quickstart_report import write_quickstart_report

        paths = write_quickstart_report(self.cfg, self.layout)
        self.log(f"report: {paths['md']}")


def _stop_when_orphaned(parent: int, every_s: float = 1.0) -> None:
    """SIGTERM this process once ``parent`` is gone (killed with no chance to stop its children): a
    training would otherwise run on alone, holding the cores."""
    import signal
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _train_child(config_json: str, errors: Any) -> None:
    """The child's side of :func:`train_in_child_process`: train, or send back what stopped it."""
    from actune.train.config import TrainConfig
    from actune.train.run import train

    _stop_when_orphaned(os.getppid())
    try:
        with stop_signals_as_interrupt():
            train(TrainConfig.model_validate_json(config_json), log=lambda m: print(m, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - every error goes back to the parent, which raises it
        try:
            errors.send(e)
        except Exception:  # noqa: BLE001 - an exception that does not pickle goes back as its text
            errors.send(RuntimeError(f"{type(e).__name__}: {e}"))
        sys.exit(1)


def train_in_child_process(cfg: Any, *, stop_timeout_s: float = 120.0) -> None:
    """``actune train`` of ``cfg`` in a fresh process, which exits when the adapter is written.

    Why not in the quickstart's process: four trainings in one process ran at half the first one's rate
    by the fourth (seed 4 on an Intel Xeon, resident size 9 GB by then), and a training's memory, torch
    threads and allocator state should not outlive it. An error in the child is raised here as itself; a
    stop (SIGTERM, Ctrl-C) here stops the child first (it unwinds as ``actune train`` does, its last
    complete checkpoint is where a rerun resumes) and waits for it, so no process is left behind."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # fork after torch and the HTTP client's threads is unsafe
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_train_child, args=(cfg.model_dump_json(), send), name="actune-train")
    child.start()
    send.close()
    try:
        child.join()
    except BaseException:
        if child.is_alive():
            child.terminate()
            child.join(stop_timeout_s)
            if child.is_alive():
                child.kill()
                child.join()
        raise
    if child.exitcode == 0:
        return
    if receive.poll():
        raise receive.recv()
    if child.exitcode == 130:
        raise KeyboardInterrupt
    from actune.train.run import TrainError

    raise TrainError(f"training of {cfg.output_dir} died (exit code {child.exitcode}); rerun to resume from its "
                     "last complete checkpoint")


def plan_stages(cfg: QuickstartConfig, pipe: _Pipeline, kind: str) -> list[Stage]:
    """Every stage in order, with its share of the estimated time."""
    est = _estimate(cfg, kind)
    n_methods, rounds = len(cfg.methods), cfg.rounds
    stages = [Stage("world" if cfg.source == "world" else "tasks", 5, pipe.world)]
    if cfg.imports:
        stages.append(Stage("imports", 5, pipe.imports))
    if cfg.gold_paths:
        stages.append(Stage("gold paths", 10, pipe.gold_paths))
    stages.append(Stage("bootstrap round 1", est["bootstrap_rounds"][0], pipe.bootstrap_round1))
    for r in range(1, rounds + 1):
        if r > 1:
            stages.append(Stage(f"bootstrap round {r}", est["bootstrap_rounds"][r - 1],
                                lambda r=r: pipe.bootstrap_round(r)))
        for m in cfg.methods:
            stages.append(Stage(f"export {m} round {r}", 10, lambda m=m, r=r: pipe.export(m, r)))
            stages.append(Stage(f"train {m} round {r}", est["train"] / (n_methods * rounds),
                                lambda m=m, r=r: pipe.train(m, r)))
    for m in cfg.methods:
        stages.append(Stage(f"eval {m}", est["eval"] / n_methods, lambda m=m: pipe.eval(m)))
    stages.append(Stage("report", 5, pipe.report))
    return stages


PACE_MIN_S = 120.0
"""Only stages estimated at two minutes or more set a run's pace: world, export and report are too short for
their measured-to-estimated ratio to say anything."""


def time_left(stages: list[Stage], done: dict[str, Any], start: int) -> tuple[float, float | None]:
    """The estimated seconds of ``stages[start:]`` not yet done, and this run's pace so far: the measured wall
    time of the finished stages (:data:`PACE_MIN_S` or more estimated) over their estimates, None until one has
    finished. The estimate's rates come from one CPU of each kind (a faster or slower one of the same kind, or
    a busy machine, shifts every stage alike), so the remaining estimate times the pace is the better guess.
    A stage killed outright (SIGKILL, power loss) never saved the time it ran, so its rerun reads short and the
    pace low; a stopped one (a signal, a crash) did save it (:func:`run_stage`)."""
    left = sum(s.estimate_s for s in stages[start:] if s.name not in done)
    timed = [(done[s.name]["wall_s"], s.estimate_s) for s in stages
             if s.name in done and s.estimate_s >= PACE_MIN_S and "wall_s" in done[s.name]]
    if not timed:
        return left, None
    return left, sum(w for w, _ in timed) / sum(e for _, e in timed)


def run_stage(stage: Stage, state: dict[str, Any], layout: Layout) -> None:
    """Run one stage and record its wall time in ``state["done"]``. A stage stopped part-way (a signal, a
    crash, a dead server) keeps the time it ran in ``state["partial"]``, and the rerun that finishes it adds
    that in: a run resumed across sessions still reports what each stage cost (``runs`` says in how many)."""
    partial: dict[str, Any] = state.setdefault("partial", {})
    before = partial.get(stage.name, {"wall_s": 0.0, "runs": 0})
    s0 = time.monotonic()
    try:
        stage.run()
    except BaseException:
        partial[stage.name] = {"wall_s": round(before["wall_s"] + time.monotonic() - s0, 1),
                               "runs": before["runs"] + 1}
        _save_state(layout, state)
        raise
    partial.pop(stage.name, None)
    state["done"][stage.name] = {"wall_s": round(before["wall_s"] + time.monotonic() - s0, 1),
                                 "runs": before["runs"] + 1,
                                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _save_state(layout, state)


def run_quickstart(cfg: QuickstartConfig, out: Path, *, show_progress: bool = True,
                   log: Callable[[str], None] = lambda m: print(m, file=sys.stderr, flush=True),
                   command: str | None = None) -> Path:
    """Run (or resume) every stage; return the path of ``report.md``. ``command``: the command line that
    reruns it, kept in the state for the report."""
    layout = Layout(Path(out), cfg.source)
    layout.out.mkdir(parents=True, exist_ok=True)
    state = _load_state(layout, cfg)
    kind = hardware_kind()
    pipe = _Pipeline(cfg, layout, show_progress, log)
    stages = plan_stages(cfg, pipe, kind)
    done: dict[str, Any] = state["done"]
    to_run = [s for s in stages if s.name not in done]
    from actune.cpu_features import describe_cpu

    log(f"quickstart {cfg.name} (seed {cfg.seed}) -> {layout.out}: {len(stages)} stages, {len(to_run)} to run; "
        f"estimated {_fmt(time_left(stages, done, 0)[0])} on {kind} ({describe_cpu()})")
    check_import_paths(cfg)  # before any stage: a missing set is found in seconds, not hours
    t0 = time.monotonic()
    if command:
        state["command"] = command
    _save_state(layout, state)
    with stop_signals_as_interrupt():
        for i, stage in enumerate(stages, 1):
            if stage.name in done:
                continue
            left, pace = time_left(stages, done, i - 1)
            eta = (f"about {_fmt(left)} left (estimated)" if pace is None else
                   f"about {_fmt(left * pace)} left at this run's pace ({pace:.2f}x the estimated {_fmt(left)})")
            log(f"\n=== [{i}/{len(stages)}] {stage.name} · elapsed {_fmt(time.monotonic() - t0)} · {eta}")
            run_stage(stage, state, layout)
    total = sum(s.get("wall_s", 0.0) for s in done.values())
    log(f"quickstart: done in {_fmt(time.monotonic() - t0)} (stages in all, across resumes: {_fmt(total)})")
    return layout.out / "report.md"
