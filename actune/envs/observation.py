"""Observations as the envs hand them back: clipped to a length the prompt can hold."""

from __future__ import annotations

from typing import Any

from actune.envs.base import StepResult

__all__ = ["clip_observation", "page_result"]


def clip_observation(text: str, limit: int | None) -> str:
    """Cut ``text`` to ``limit`` characters, saying so (the model should know text is missing)."""
    if limit is None or len(text) <= limit:
        return text
    note = " [...observation cut]"
    return text[: max(0, limit - len(note))].rstrip() + note


def page_result(env: Any, observation: str, done: bool = False, **info: Any) -> StepResult:
    """One step's result from an env that reads pages, clipped to ``env.max_observation_chars``;
    ``info["titles"]`` (the pages this step read, which grounding collects) is empty unless given.
    The wiki and document envs bind it as their ``_result`` so both answer in one shape."""
    info.setdefault("titles", [])
    return StepResult(clip_observation(observation, env.max_observation_chars), done, info)
