"""The run's resume state (``quickstart-state.json``): the config it runs with and the stages done, each with its
wall time. A rerun with the same settings resumes; one with other settings into the same folder is refused, so one
folder always holds one experiment (only ``rounds`` may grow, and ``formats`` change)."""

from __future__ import annotations

import json
from typing import Any

from actune.config import ConfigError, public_dump
from actune.quickstart.config import QuickstartConfig
from actune.quickstart.layout import Layout
from actune.records.atomic_write import atomic_write_text, is_leftover

__all__ = ["comparable", "load_state", "save_state", "stored_config_as_current"]


def comparable(config: dict[str, Any]) -> dict[str, Any]:
    """A config as a run is compared on resume: the values in force, not the per-hardware table that set
    some of them (a preset that gains an entry for other hardware still resumes its runs), nor what only the report
    says (the note on what the run's scale shows, whether our bar's verdict is shown), nor the sections of task
    sources the run does not use (a HotpotQA run resumes after the world's defaults changed)."""
    source = config.get("source", "world")
    unused = {s for s in ("world", "hotpotqa", "fever") if s != source}
    return {k: v for k, v in config.items() if k not in ("hardware_overrides", "scale_note", "bar", *unused)}


def load_state(layout: Layout, cfg: QuickstartConfig) -> dict[str, Any]:
    """The stored state of the run in ``layout`` for ``cfg`` (a fresh one when there is none), or a
    :class:`ConfigError` when the folder holds a run with other settings, or holds anything and no run: a run
    writes its files into it by fixed names (report.md, tasks/, ...) and would replace the user's."""
    config = comparable(public_dump(cfg))
    if not layout.state.exists():
        # what a run killed in its first state save left (a temp file) is no user's
        if (layout.out.is_dir() and any(not is_leftover(p.name) for p in layout.out.iterdir())
                or layout.out.exists() and not layout.out.is_dir()):
            raise ConfigError(f"{layout.out}: not empty and holds no quickstart run ({layout.state.name}); a run "
                              "writes its files there by fixed names: choose a new or empty --out")
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
        if _extends(keys, old, config, state.get("done") or {}):
            state["done"] = {k: v for k, v in state["done"].items() if not k.startswith(_redone(keys))}
            state["config"] = config
            return state
        raise ConfigError(f"{layout.out} holds a quickstart run with other settings (differs in: "
                          f"{', '.join(keys)}); use another --out, or the same preset, seed and overrides to resume "
                          "(only --rounds may grow, not once after_sft has begun, and formats change)")
    return state


_FROM_LAST_ROUND = ("explore ", "pairs ", "train dpo", "train grpo")
"""The stages of ``after_sft`` (:mod:`actune.quickstart.objectives`), which start from the last round's model."""


def _extends(keys: list[str], old: dict[str, Any], config: dict[str, Any], done: dict[str, Any]) -> bool:
    """Whether a config differing from the stored one in ``keys`` extends its run: more rounds (round r reads only
    rounds < r) or other ``formats`` (each format's stages are its own, on round 1's store), nothing else. Not more
    rounds once ``after_sft`` has begun (a stage of :data:`_FROM_LAST_ROUND` done): its DPO and GRPO models started
    from the last round's model, which would change."""
    begun = any(name.startswith(_FROM_LAST_ROUND) for name in done)
    more_rounds = "rounds" in keys and config["rounds"] > old.get("rounds", 0) and not begun
    return set(keys) <= {"rounds", "formats"} and ("rounds" not in keys or more_rounds)


def _redone(keys: list[str]) -> tuple[str, ...]:
    """The stages an extended run does again: the report, and with more rounds every eval (eval's stores skip the
    models already evaluated)."""
    return ("eval ", "report") if "rounds" in keys else ("report",)


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
        return comparable(public_dump(QuickstartConfig.model_validate(rename(old))))
    except ValueError:
        return old  # not readable today: compared as stored, so the refusal names what differs


def save_state(layout: Layout, state: dict[str, Any]) -> None:
    atomic_write_text(layout.state, json.dumps(state, indent=2) + "\n")
