"""The ETA printed before a run and between its stages: each stage's wall time from rates measured per kind of
hardware. The stages show live progress; this only says up front about how long the whole run takes.

Where each rate and keep share comes from (which runs, which CPUs) is in docs/performance.md, "The quickstart's
ETA: its rates and where they come from".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from actune.agent.method_registry import Cost, convertible, step_format
from actune.envs.corpus import corpus_key, index_dir_for
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.round_inputs import round_epochs

__all__ = ["RATES", "episode_cost", "StageEstimate", "concurrency_speedup", "serving_seconds", "estimate_stages",
           "estimate_seconds", "index_build_seconds"]

# Episode costs are in units of a round-1 ReAct bootstrap episode (type-matched exemplars); ``episodes_h`` is
# that episode's rate at 16 requests at once; ``train_tok_s`` a whole training stage's rate (model load, dev
# evaluations, checkpoints and the merge included) over the examples' tokens x epochs. cuda is a guess.
RATES = {
    "cpu-bf16": {"episodes_h": 3000.0, "train_tok_s": 240.0, "server_s": 40.0},
    "cpu-fp32": {"episodes_h": 1000.0, "train_tok_s": 110.0, "server_s": 60.0},
    "cuda": {"episodes_h": 40000.0, "train_tok_s": 20000.0, "server_s": 90.0},
}
# the wiki environment's search index, built once per corpus before round 1's first episode (CPU-bound, whatever
# the accelerator): MB of corpus a second, bench/env_latency.py --synthetic 5000000 (3,543 MB in 340 s on the
# AVX512_BF16 EPYC, peak 8.8 GB; docs/performance.md, "Search at 5 million paragraphs")
_INDEX_MB_S = 10.4
# keep rate of a tuned model's episodes on the tasks no earlier round solved
_LATER_KEEP_RATE = 0.24
# a zero-shot world example's tokens in each of formats' step formats: ReAct's measured, the others guessed from it
# (Act: its steps less the thoughts; CoT: the thoughts on one line; Standard: instruction, question, answer)
_FORMAT_TOKENS = {"react": 335, "act": 250, "cot": 130, "standard": 70}
# an episode's cost by task source, against a world episode (FEVER's is still a guess)
_SOURCE_COST = {"world": 1.0, "hotpotqa": 1.0, "fever": 2.0}
# share of kept round-1 episodes left after near-duplicate removal and the per-task cap
_EXPORTED = {"few_attempts": 0.9, "many_attempts": 0.7}
# generated tok/s against 16 requests at once (the rates above), by bench/serve_throughput.py
_CONCURRENCY_SPEEDUP = ((16, 1.0), (32, 1.21), (64, 1.34))


def _cost(method: str) -> Cost:
    """Method or step format ``method``'s cost weights (:class:`~actune.agent.method_registry.Cost`: ReflAct's
    10k-token few-shot prompt, Act's, CoT's and Standard's shorter episodes, guessed from ReAct's measured ones);
    a round-1 ReAct bootstrap episode's for a name with none."""
    f = step_format(method)
    return f.cost if f is not None else Cost()


def episode_cost(stage: str, method: str) -> float:
    """An episode of ``method`` at ``stage`` (bootstrap, prompted, tuned) against a round-1 ReAct bootstrap one."""
    return float(getattr(_cost(method), stage))


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
    """Wall seconds of ``units`` episodes (in round-1 ReAct bootstrap episodes: :func:`episode_cost`) served on
    ``kind`` with ``concurrency`` requests at once; server starts not included."""
    return units / (RATES[kind]["episodes_h"] * concurrency_speedup(concurrency)) * 3600


def index_build_seconds(cfg: QuickstartConfig) -> float:
    """The wiki search index's build, when the run's corpus has none yet (0 for a source without a corpus)."""
    if cfg.source == "world":
        return 0.0
    corpus = cfg.hotpotqa.path("corpus") if cfg.source == "hotpotqa" else cfg.fever.corpus()
    if not corpus.is_file():
        return 0.0
    # the run indexes its own link to the corpus (tasks/corpus.jsonl): the index folder is named after that link,
    # keyed by the file it resolves to, so any folder with this file's key is its index
    root = index_dir_for(corpus).parent
    if any((d / "meta.json").is_file() for d in root.glob(f"*-{corpus_key(corpus)}")):
        return 0.0
    return corpus.stat().st_size / 1e6 / _INDEX_MB_S


def _solved_share(keep: float, attempts: int) -> float:
    """Share of tasks with at least one kept episode after ``attempts`` tries: attempts at one task agree, so
    each later attempt solves fewer new tasks than an independent one would."""
    return min(0.95, keep * attempts * 0.75 ** (attempts - 1))


@dataclass(frozen=True)
class StageEstimate:
    """Estimated wall seconds of a whole run: each bootstrap round (round 1 first), all training, the eval stage."""

    bootstrap_rounds: list[float]
    train: float
    eval: float
    explore: float = 0.0
    """The SFT models' exploration for ``after_sft: [dpo]``, every method."""
    objectives: dict[str, float] = field(default_factory=dict)
    """Each ``after_sft`` objective's training, every method (GRPO's rollouts included)."""
    formats_train: dict[str, float] = field(default_factory=dict)
    """``formats``: each format's training."""
    formats_prompted: float = 0.0
    """``formats``: every format's prompted model on one server."""
    formats_eval: dict[str, float] = field(default_factory=dict)
    """``formats``: each format's tuned model on its own server."""


@dataclass
class _Examples:
    """Per method: the examples it exports itself, round by round (each round adds its keeps to the earlier
    ones), and the share of training tasks round 1 solved."""

    own: dict[str, list[float]]
    solved_r1: dict[str, float]


def estimate_seconds(cfg: QuickstartConfig, kind: str) -> dict[str, float]:
    """Rough wall time per stage kind (bootstrap, train, eval) of a whole run, from :data:`RATES`."""
    est = estimate_stages(cfg, kind)
    out = {"bootstrap": sum(est.bootstrap_rounds), "train": est.train, "eval": est.eval}
    if cfg.after_sft:
        out["after_sft"] = est.explore + sum(est.objectives.values())
    if cfg.formats:
        out["formats"] = sum(est.formats_train.values()) + est.formats_prompted + sum(est.formats_eval.values())
    return out


def estimate_stages(cfg: QuickstartConfig, kind: str) -> StageEstimate:
    """:func:`estimate_seconds` with the bootstrap rounds apart."""
    boot, evals, examples = _serving(cfg, kind)
    rate = RATES[kind]
    # round 1: one server for every method; later rounds: one per method's tuned model
    boot = [b + rate["server_s"] * (1 if r == 0 else len(cfg.methods)) for r, b in enumerate(boot)]
    boot[0] += index_build_seconds(cfg)
    explore, objectives = _after_sft(cfg, kind)
    formats_train, formats_prompted, formats_eval = _formats(cfg, kind, examples)
    return StageEstimate(bootstrap_rounds=boot, train=_training(cfg, kind, examples), eval=evals, explore=explore,
                         objectives=objectives, formats_train=formats_train, formats_prompted=formats_prompted,
                         formats_eval=formats_eval)


def _formats(cfg: QuickstartConfig, kind: str, examples: _Examples) -> tuple[dict[str, float], float, dict[str, float]]:
    """``formats``' stages: each format's training on one example a task round 1 solved (imported ones included),
    every prompted model on one server, each tuned model on a server of its own."""
    if not cfg.formats:
        return {}, 0.0, {}
    rate = RATES[kind]
    n_train, n_test = cfg.split_sizes()
    # one example a solved task, no more than ReAct's round 1 exports
    n = min(examples.solved_r1["react"] * n_train, examples.own["react"][0]) + _imported_records(cfg)
    epochs = cfg.train.num_train_epochs
    if cfg.train.max_steps > 0:
        epochs = cfg.train.max_steps * cfg.train.per_device_train_batch_size / max(n, 1)
    train = {f: n * _FORMAT_TOKENS[f] * epochs / rate["train_tok_s"] for f in cfg.formats}

    def episodes(stage: str, f: str) -> float:
        units = n_test * episode_cost(stage, f) * _SOURCE_COST[cfg.source]
        return serving_seconds(units, kind, cfg.eval.concurrency)

    prompted = sum(episodes("prompted", f) for f in cfg.formats) + rate["server_s"]
    return train, prompted, {f: episodes("tuned", f) + rate["server_s"] for f in cfg.formats}


# a DPO pair against an SFT example: two sides and the reference pass (the target of bench/dpo_step_cost.py)
_DPO_PAIR_COST = 2.5
# share of training tasks whose exploration gives a pair (some kept and some failed episodes): a guess
_PAIRED_SHARE = 0.4


def _after_sft(cfg: QuickstartConfig, kind: str) -> tuple[float, dict[str, float]]:
    """The ``after_sft`` stages of every method: DPO's exploration, and each objective's training."""
    rate = RATES[kind]
    n_train = cfg.split_sizes()[0]
    source_cost = _SOURCE_COST[cfg.source]
    explore, objectives = 0.0, {o: 0.0 for o in cfg.after_sft}
    for method in cfg.methods:
        tokens, tuned = _cost(method).tokens_per_example, episode_cost("tuned", method) * source_cost
        if "dpo" in cfg.after_sft:
            units = n_train * cfg.explore.attempts * tuned
            explore += serving_seconds(units, kind, cfg.bootstrap.concurrency) + rate["server_s"]
            t = cfg.objective_train_config("dpo")
            pairs = n_train * _PAIRED_SHARE * cfg.explore.max_pairs_per_task
            objectives["dpo"] += pairs * tokens * t.num_train_epochs * _DPO_PAIR_COST / rate["train_tok_s"]
        if "grpo" in cfg.after_sft:
            t = cfg.objective_train_config("grpo")
            episodes = t.grpo.tasks_per_step * t.grpo.num_generations
            steps = t.max_steps if t.max_steps > 0 else math.ceil(n_train * t.num_train_epochs / t.grpo.tasks_per_step)
            step_s = (serving_seconds(episodes * tuned, kind, min(t.grpo.concurrency, episodes))
                      + episodes * tokens / rate["train_tok_s"])
            objectives["grpo"] += steps * step_s + rate["server_s"]
    return explore, objectives


def _serving(cfg: QuickstartConfig, kind: str) -> tuple[list[float], float, _Examples]:
    """Each bootstrap round's episodes (its server starts not counted), the eval stage's, and the examples the
    bootstrap rounds give each method."""
    attempts = cfg.bootstrap.attempts_per_task
    n_train, n_test = cfg.split_sizes()
    if all(p.limit for p in cfg.passes):  # round 1 asks no more tasks than its passes' limits
        n_round1 = min(n_train, sum(p.limit or 0 for p in cfg.passes))
    else:
        n_round1 = n_train
    source_cost = _SOURCE_COST[cfg.source]
    cap = cfg.bootstrap.export.max_per_task
    exported = _EXPORTED["few_attempts" if cap is None or attempts <= cap else "many_attempts"]
    evals = 0.0
    boot = [0.0] * cfg.rounds
    examples = _Examples(own={}, solved_r1={})
    for method in cfg.methods:
        keep = _cost(method).keep_rate
        cost = {stage: episode_cost(stage, method) * source_cost for stage in ("bootstrap", "prompted", "tuned")}
        target = cfg.bootstrap.target_correct
        episodes = min(target / keep, n_round1 * attempts)  # the passes stop at the target
        boot[0] += serving_seconds(episodes * cost["bootstrap"], kind, cfg.bootstrap.concurrency)
        made = exported * min(target, episodes * keep)
        solved = examples.solved_r1[method] = _solved_share(keep, attempts)
        examples.own[method] = [made]
        for r in range(2, cfg.rounds + 1):  # later rounds: the tuned model on what is still unsolved
            later = n_train * (1 - solved) * cfg.round_attempts
            boot[r - 1] += serving_seconds(later * cost["tuned"], kind, cfg.bootstrap.concurrency)
            made += later * _LATER_KEEP_RATE  # a later round's keeps are all exported
            examples.own[method].append(made)
            solved = min(0.95, solved + (1 - solved) * _solved_share(_LATER_KEEP_RATE, cfg.round_attempts))
        # the prompted model's eval episodes run on round 1's server and round r-1's model's on round r's; the
        # eval stage serves the last round's model only
        n_prompted = 1 + int(cfg.oracle_baseline)
        for r in range(cfg.rounds):
            units = n_prompted * cost["prompted"] if r == 0 else cost["tuned"]
            boot[r] += serving_seconds(n_test * units, kind, cfg.eval.concurrency)
        evals += serving_seconds(n_test * cost["tuned"], kind, cfg.eval.concurrency) + RATES[kind]["server_s"]
    return boot, evals, examples


def _training(cfg: QuickstartConfig, kind: str, examples: _Examples) -> float:
    """Every method's every round of training: its examples (imported ones and, with ``mix_methods``, borrowed
    ones included) x tokens x epochs at the kind's training rate."""
    attempts, cap = cfg.bootstrap.attempts_per_task, cfg.bootstrap.export.max_per_task
    imported = _imported_records(cfg)
    train = 0.0
    for method in cfg.methods:
        per_round = [n + imported for n in examples.own[method]]
        if cfg.mix_methods:  # borrowed episodes fill the per-task cap where the method's own attempts leave room
            room = 1.0 if cap is None or attempts < cap else 1 - examples.solved_r1[method]
            for other in cfg.methods:
                if other != method and convertible(other, method):
                    per_round = [mine + room * theirs for mine, theirs in zip(per_round, examples.own[other])]
        if cfg.round_start_of(method) == "previous":  # each round trains on its new examples only
            per_round = [b - a for a, b in zip([0.0, *per_round], per_round)]
        # else each round retrains from the base model on every round's data so far
        for r, n in enumerate(per_round, 1):
            epochs = round_epochs(cfg, r, method)
            if cfg.train.max_steps > 0:
                epochs = cfg.train.max_steps * cfg.train.per_device_train_batch_size / max(n, 1)
            train += n * _cost(method).tokens_per_example * epochs / RATES[kind]["train_tok_s"]
    return train


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
