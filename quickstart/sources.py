"""The stages before round 1: the run's questions and corpus (a synthetic world, or real HotpotQA or FEVER
questions over a local corpus), and the training data from elsewhere (``imports``, ``gold_paths``)."""

from __future__ import annotations

import json
from pathlib import Path

from actune.bootstrap import gold_paths
from actune.bootstrap.importers import ImportSetError, import_set
from actune.bootstrap.replay import replay_store
from actune.config import ConfigError
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.context import RunContext
from actune.quickstart.layout import gold_form
from actune.quickstart.stage import Stage
from actune.records.trajectory import read_trajectories
from actune.sources.fever import write_fever_tasks
from actune.sources.hotpotqa import MANIFEST, write_hotpotqa_tasks
from actune.tasks.loading import load_tasks
from actune.text import normalise_question
from actune.world import write_world

__all__ = ["source_stages", "write_tasks", "import_sets", "write_gold_paths", "check_import_paths"]


def source_stages(run: RunContext) -> list[Stage]:
    """The tasks stage, then the imports and the gold paths where the run has them."""
    cfg = run.cfg
    stages = [Stage("world" if cfg.source == "world" else "tasks", 5, lambda: write_tasks(run))]
    if cfg.imports:
        stages.append(Stage("imports", 5, lambda: import_sets(run)))
    if cfg.gold_paths:
        stages.append(Stage("gold paths", 10, lambda: write_gold_paths(run)))
    return stages


def write_tasks(run: RunContext) -> None:
    """The corpus and the train/dev/test questions, once (a folder that has them is left as it is)."""
    cfg, layout = run.cfg, run.layout
    if cfg.source in ("hotpotqa", "fever"):
        if (layout.tasks_dir / MANIFEST).exists():
            return
        if cfg.source == "hotpotqa":
            m = write_hotpotqa_tasks(cfg.hotpotqa, layout.tasks_dir)
        else:
            m = write_fever_tasks(cfg.fever, layout.tasks_dir)
        c = m["counts"]
        run.log(f"tasks: {cfg.source}, {m['pages']} pages; train {c['train']}, dev {c['dev']}, "
                f"test {c['test']} (no question or supporting page shared between splits)")
        return

    if (layout.world / "world.json").exists():
        return
    gen = write_world(cfg.world.model_copy(update={"seed": cfg.seed}), layout.world)
    c = gen.manifest["counts"]
    run.log(f"world: {c['pages']} pages; questions train {c['train']}, dev {c['dev']}, test {c['test']}")


def check_import_paths(cfg: QuickstartConfig) -> None:
    """A :class:`ConfigError` naming ``imports[i].path`` for a set that is not there (a store must be a file; a
    set to import may be a file or a dataset folder)."""
    for i, src in enumerate(cfg.imports):
        path = Path(src.path)
        if not (path.is_file() if src.format == "store" else path.exists()):
            raise ConfigError(f"imports[{i}].path: {src.path} not found")


def import_sets(run: RunContext) -> None:
    """Import each outside set once (a set already imported adds nothing: the store skips its records), then
    refuse one that asks a dev or test question."""
    cfg, layout = run.cfg, run.layout
    env = "fever" if cfg.source == "fever" else "wiki"
    check_import_paths(cfg)
    for i, src in enumerate(cfg.imports):
        if src.format == "store":
            _check_no_held_out_questions(run, i, Path(src.path))
            continue
        store = layout.imported_as_released(i) if src.replay else layout.imported(i)
        try:
            summary = import_set(src.path, store, src.format, env=env, method=src.method)
        except ImportSetError as e:
            raise ConfigError(f"imports[{i}].path: {e}") from None
        run.log(f"imports[{i}]: {summary.imported} of {summary.total} records imported from {src.path} "
                f"({summary.total - summary.imported} rejected)")
        if summary.total == 0:
            raise ConfigError(f"imports[{i}]: {src.path} holds no records")
        if summary.imported == 0 and not summary.rejected.get("already_imported"):
            raise ConfigError(f"imports[{i}]: every record of {src.path} was rejected:\n{summary.table()}")
        if src.replay:
            _replay(run, i, store)
        _check_no_held_out_questions(run, i, layout.imported(i))


def write_gold_paths(run: RunContext) -> None:
    """Write the scripted teacher's episode of every training question (a stopped run resumes)."""
    tasks = load_tasks(run.tasks("train"))
    # ReAct's form serves every method export can convert it into; the others get their own (Layout.gold_paths_of)
    for method in dict.fromkeys(gold_form(m) for m in run.cfg.methods):
        s = gold_paths.write_gold_paths(tasks, str(run.layout.gold_paths_of(method)), run.env(run.cfg.bootstrap.env),
                                        misses=run.cfg.gold_path_misses, lookups=run.cfg.gold_path_lookups,
                                        method=method, mentions=run.cfg.gold_path_mentions,
                                        seen_names=run.cfg.gold_path_seen_names, cues=run.cfg.gold_path_cues)
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(s.skipped.items())) or "none"
        run.log(f"gold paths ({method}): {s.written} written, {s.already} written before, of {s.total} training "
                f"questions (left out: {skipped})")
        if s.written + s.already == 0:
            raise ConfigError(f"gold_paths: none of the {s.total} training questions has a gold path (left out: "
                              f"{skipped}); they need meta.supporting_titles that this run's corpus holds")


def _check_no_held_out_questions(run: RunContext, i: int, store: Path) -> None:
    held = {normalise_question(json.loads(line)["question"]) for split in ("dev", "test")
            for line in (run.layout.tasks_dir / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()}
    leaked = [t.task.question for t in read_trajectories(store) if normalise_question(t.task.question) in held]
    if leaked:
        raise ConfigError(f"imports[{i}]: {len(leaked)} records of {store} ask a dev or test question of this "
                          f"run (e.g. {leaked[0]!r}): leave them out of the set")


def _replay(run: RunContext, i: int, store: Path) -> None:
    r = replay_store(store, run.layout.imported(i), run.env(run.cfg.bootstrap.env))
    run.log(f"imports[{i}]: replayed {r.replayed} of {r.total} records in this run's corpus ({r.missed} left out: "
            f"a search opened no page, e.g. {'; '.join(r.examples[:2]) or '-'}; {r.already} replayed before)")
    if r.replayed + r.already == 0 and r.total:
        raise ConfigError(f"imports[{i}].replay: none of the {r.total} records' searches all open a page of "
                          f"{run.layout.tasks_dir / 'corpus.jsonl'}: replay needs the pages the teacher read "
                          "(for FireAct, a full Wikipedia-abstracts corpus); drop replay to train on its own text")
