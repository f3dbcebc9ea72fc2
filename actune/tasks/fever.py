"""FEVER claims -> tasks, and a small offline FEVER wiki from the ReAct runs' observation cache.

Records: ``paper_dev.jsonl`` lines ``{"id", "label", "claim", "verifiable", "evidence":
[[[annotation_id, evidence_id, "Wiki_Title", sentence_id], ...], ...]}`` (or the Hugging Face
``fever`` rows with ``evidence_wiki_url``). Evidence titles are turned into page titles
(``Soul_Food_-LRB-film-RRB-`` -> ``Soul Food (film)``): all of them, flattened, in
``meta["supporting_titles"]``, and per evidence set in ``meta["evidence_sets"]`` (a list of title lists).
Each outer ``evidence`` entry is one annotator's set, enough on its own to verify the claim, so the
bootstrap judge counts a claim grounded when any one set was read (:mod:`actune.judge`). A claim without evidence
is about the page its first words name (:func:`claim_subject`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actune.records.atomic_write import atomic_writer
from actune.records.jsonl import JSON_ERRORS, json_problem, read_text
from actune.records.task_record import Task
from actune.tasks.sources import TaskFileError
from actune.text import normalize_label, split_sentences

__all__ = ["fever_text", "fever_title", "fever_task", "claim_subject", "write_wiki_from_observation_cache"]

_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
             "-COLON-": ":"}


def fever_text(raw: str) -> str:
    """FEVER's bracket tokens (``-LRB-``, ``-COLON-``) as the characters they stand for."""
    for token, char in _BRACKETS.items():
        raw = raw.replace(token, char)
    return raw


def fever_title(raw: str) -> str:
    """FEVER's page id -> a Wikipedia title."""
    return " ".join(fever_text(raw).replace("_", " ").split())


def _evidence_sets(rec: dict[str, Any]) -> list[list[str]]:
    """One title list per evidence set (deduplicated within a set; equal sets once, first order kept).

    Sets without a title (NOT ENOUGH INFO claims: ``[[id, null, null, null]]``) are left out. A Hugging
    Face row holds one evidence item (``evidence_wiki_url``): a set of its own."""
    sets: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def add(titles: list[str]) -> None:
        titles = list(dict.fromkeys(titles))
        if titles and frozenset(titles) not in seen:
            seen.add(frozenset(titles))
            sets.append(titles)

    for group in rec.get("evidence") or []:
        add([fever_title(item[2]) for item in group or []
             if isinstance(item, (list, tuple)) and len(item) >= 3 and isinstance(item[2], str)])
    url = rec.get("evidence_wiki_url")
    if isinstance(url, str) and url:
        add([fever_title(url)])
    return sets


def _evidence_titles(sets: list[list[str]]) -> list[str]:
    """Every title of every set, once, in order of first appearance."""
    return list(dict.fromkeys(t for s in sets for t in s))


def fever_task(rec: dict[str, Any], where: str, index: int, split: str, env: str) -> Task:
    claim = rec.get("claim")
    if not isinstance(claim, str) or not claim.strip():
        raise TaskFileError(f"{where}: missing or empty 'claim'")
    raw_label = rec.get("label")
    label = normalize_label(raw_label) if isinstance(raw_label, str) else None
    if label is None:
        raise TaskFileError(f"{where}: 'label' must be SUPPORTS, REFUTES or NOT ENOUGH INFO, got {raw_label!r}")
    sets = _evidence_sets(rec)
    meta: dict[str, Any] = {"index": index, "supporting_titles": _evidence_titles(sets), "evidence_sets": sets}
    if "verifiable" in rec:
        meta["verifiable"] = rec["verifiable"]
    task_id = rec.get("id", f"fever-{split}-{index}")
    return Task(id=str(task_id), question=claim.strip(), answer=label, env=env, split=split, meta=meta)


def claim_subject(claim: str, is_page: Callable[[str], bool]) -> str | None:
    """The page a claim is about: the longest run of its first words (six at most) that ``is_page`` finds ("Bea
    Arthur" of "Bea Arthur was married to Bernice Frankel."); None when no run is. The gold path of a NOT ENOUGH
    INFO claim searches it, and its FEVER split keeps it in the group of that page's claims."""
    words = claim.rstrip(".").split()
    for n in range(min(6, len(words)), 0, -1):
        term = " ".join(words[:n])
        if is_page(term):
            return term
    return None


_OBS_PREFIX = "Pages for logged out editors learn more."


def write_wiki_from_observation_cache(cache_path: str | Path, out_path: str | Path) -> int:
    """Turn ``search::<entity>`` entries of a ReAct observation cache into corpus lines; returns pages written.

    Each found page's observation (its first sentences, as live Wikipedia showed them) becomes
    ``{"title": entity, "sentences": [...]}``; "Could not find" entries are skipped. The ReAct
    scraper appended "." to every sentence, giving "..": undone here. Written atomically.
    """
    cache_path = Path(cache_path)
    text = read_text(cache_path, TaskFileError)  # its own named errors (a ValueError: kept apart)
    try:
        cache = json.loads(text)
    except JSON_ERRORS as e:
        line, problem = json_problem(e)
        raise TaskFileError(f"{cache_path}{f':{line}' if line else ''}: not valid JSON ({problem})") from None
    if not isinstance(cache, dict):
        raise TaskFileError(f"{cache_path}: expected an object of 'search::entity' -> observation")
    pages: dict[str, list[str]] = {}
    for key, obs in cache.items():
        if not key.startswith("search::") or not isinstance(obs, str) or obs.startswith("Could not find"):
            continue
        title = " ".join(key[len("search::"):].split())
        text = obs.strip()
        if text.startswith(_OBS_PREFIX):
            text = text[len(_OBS_PREFIX):]
        text = text.replace("..", ".")
        sentences = split_sentences(text)
        if title and sentences and title not in pages:
            pages[title] = sentences
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(out_path) as f:
        for title, sentences in pages.items():
            f.write(json.dumps({"title": title, "sentences": sentences}, ensure_ascii=False) + "\n")
    return len(pages)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m actune.tasks.fever",
                                 description="Write a small FEVER wiki (JSONL corpus) from a ReAct observation cache.")
    ap.add_argument("cache", help="observation cache JSON ('search::<entity>' -> observation)")
    ap.add_argument("out", help="corpus JSONL to write")
    args = ap.parse_args(argv)
    n = write_wiki_from_observation_cache(args.cache, args.out)
    print(f"{args.out}: {n} pages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
