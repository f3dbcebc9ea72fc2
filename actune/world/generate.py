"""Generate a synthetic world and write it as corpus, task and manifest files.

Output folder::

    corpus.jsonl   one page a line: {"title": ..., "sentences": [...]}  (served by the wiki env)
    train.jsonl    task lines: {"id", "question", "answer", "aliases", "meta": {kind, supporting_titles,
    dev.jsonl          template, heldout_template, lookup_needed[, answer_position][, phrasing, family,
    test.jsonl         wording_distance, wording_near[, wording_far_half][, fact_in_train]]}}
    world.json     manifest: version, seed, sizes, mix, counts, templates[, phrasing_groups, families,
                   heldout_distances]

Everything comes from ``random.Random(cfg.seed)``, so the same config writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.config import actune_home
from actune.records.atomic_write import lock_path, output_lock, recover_folder, replace_folder, temp_folder_beside
from actune.world.config import WORLD_VERSION, WorldConfig
from actune.world.entities import World, build_world
from actune.world.phrasings import NEW_PHRASING
from actune.world.questions import RELATIONS, TEMPLATES, sample_splits

__all__ = ["GeneratedWorld", "WorldFolderError", "generate_world", "write_world", "default_world_dir", "WORLD_FILES"]

WORLD_FILES = ("corpus.jsonl", "train.jsonl", "dev.jsonl", "test.jsonl", "world.json")


@dataclass
class GeneratedWorld:
    world: World
    corpus: list[dict[str, Any]]
    splits: dict[str, list[dict[str, Any]]]
    manifest: dict[str, Any]


def generate_world(cfg: WorldConfig) -> GeneratedWorld:
    """Build the entities, pages and questions of ``cfg`` in memory."""
    rng = random.Random(cfg.seed)
    world = build_world(cfg, rng)
    splits = sample_splits(cfg, world, rng)
    corpus = [page.to_record() for page in world.pages.values()]
    manifest = {
        "version": WORLD_VERSION,
        "seed": cfg.seed,
        "config": cfg.model_dump(mode="json"),
        "counts": {
            "pages": len(corpus), "people": len(world.people), "companies": len(world.companies),
            "cities": len(world.cities),
            **{split: len(records) for split, records in splits.items()},
        },
        "kinds": {split: _count(records, "kind") for split, records in splits.items()},
        # a families world asks relations (each in its families, below), a templates world its templates
        "templates": [{"id": t.id, "kind": t.kind, "text": t.text, "heldout": t.heldout}
                      for t in (RELATIONS if cfg.phrasings == "families" else TEMPLATES)],
        "files": list(WORLD_FILES),
    }
    if cfg.phrasings == "families":
        manifest["phrasing_groups"] = {split: _count(records, "phrasing") for split, records in splits.items()}
        manifest["families"] = _families_used(splits)
        manifest["heldout_distances"] = _heldout_distances(splits)
    return GeneratedWorld(world, corpus, splits, manifest)


def _count(records: list[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[r["meta"][key]] = out.get(r["meta"][key], 0) + 1
    return dict(sorted(out.items()))


def _families_used(splits: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, list[str]]]:
    """Relation -> phrasing group -> the families its questions were worded in, over all splits."""
    out: dict[str, dict[str, set[str]]] = {}
    for records in splits.values():
        for r in records:
            m = r["meta"]
            out.setdefault(m["template"], {}).setdefault(m["phrasing"], set()).add(m["family"])
    return {rel: {g: sorted(f) for g, f in sorted(groups.items())} for rel, groups in sorted(out.items())}


def _heldout_distances(splits: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, dict[str, int]]]:
    """Split -> relation -> held-out family asked there -> its questions' least ``wording_distance`` (word edits
    to the nearest trained wording of the relation; ``NEAR_EDITS`` or fewer is near)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for split, records in splits.items():
        for r in records:
            m = r["meta"]
            if m["phrasing"] == NEW_PHRASING:
                fams = out.setdefault(split, {}).setdefault(m["template"], {})
                fams[m["family"]] = min(fams.get(m["family"], m["wording_distance"]), m["wording_distance"])
    return {split: {rel: dict(sorted(f.items())) for rel, f in sorted(rels.items())} for split, rels in out.items()}


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


class WorldFolderError(ValueError):
    """``out_dir`` holds something that is not a world this module wrote."""


def write_world(cfg: WorldConfig, out_dir: str | Path) -> GeneratedWorld:
    """Generate ``cfg``'s world and write its files into ``out_dir``, whole: they are written into a folder beside
    it (``world.json`` last) and swapped in, so a kill or a full disk leaves the old world complete or the new one,
    never a new corpus beside old questions. ``out_dir`` must be new, empty or a world (it holds ``world.json``),
    else :class:`WorldFolderError`; a second writer of the same folder is refused by its lock, and a dead run's
    temporary folder is removed."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "world.json").is_file())):
        raise WorldFolderError(f"{out}: not a world folder (no world.json) and not empty: a world is written only "
                               "into a new or empty folder or over a world; choose another folder")
    gen = generate_world(cfg)
    with output_lock(out, WorldFolderError):
        recover_folder(out)  # output_lock removed a dead run's temporary folder
        tmp = temp_folder_beside(out)
        try:
            (tmp / "corpus.jsonl").write_text(_jsonl(gen.corpus), encoding="utf-8")
            for split, records in gen.splits.items():
                (tmp / f"{split}.jsonl").write_text(_jsonl(records), encoding="utf-8")
            (tmp / "world.json").write_text(json.dumps(gen.manifest, indent=2, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
            replace_folder(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return gen


def default_world_dir(cfg: WorldConfig | None = None, root: str | Path | None = None) -> Path:
    """The folder of ``cfg``'s world (default config: seed 0) under ``$ACTUNE_HOME/worlds``,
    generated on first use; later calls reuse it (the folder name fixes version and config)."""
    cfg = cfg or WorldConfig()
    base = Path(root) if root is not None else actune_home() / "worlds"
    key = json.dumps(cfg.model_dump(mode="json"), sort_keys=True)
    folder = base / f"v{WORLD_VERSION}-seed{cfg.seed}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"
    for _ in range(600):  # another process writing the same world (parallel tests): wait for it, then reuse it
        if (folder / "world.json").exists():
            return folder
        try:
            write_world(cfg, folder)
            return folder
        except WorldFolderError:
            if not lock_path(folder).exists():
                raise
            time.sleep(0.5)
    raise WorldFolderError(f"{folder}: another process held it for 5 minutes without finishing the world")
