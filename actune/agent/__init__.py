"""The agent loop: methods (Standard, CoT, CoT-SC, Act, ReAct, ReflAct, hybrids) over one driver.

Public entry points: :func:`run_episode`, :func:`iter_episode`, :class:`AgentConfig`,
:class:`PromptSpec` with :func:`load_prompt_spec`/:func:`save_prompt_spec`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Loaded on first use: the CLI reads the method list (actune.agent.config) to build `actune --help`, and
# must not pay for the loop, the LLM client and httpx there.
_EXPORTS = {
    "AgentConfig": "actune.agent.config",
    "Event": "actune.agent.episode",
    "episode_seed": "actune.agent.episode",
    "iter_episode": "actune.agent.loop",
    "run_episode": "actune.agent.loop",
    "PromptSpec": "actune.agent.prompt_spec",
    "load_prompt_spec": "actune.agent.prompt_spec",
    "save_prompt_spec": "actune.agent.prompt_spec",
}
__all__ = ["AgentConfig", "Event", "episode_seed", "iter_episode", "run_episode", "PromptSpec",
           "load_prompt_spec", "save_prompt_spec"]

if TYPE_CHECKING:
    from actune.agent.config import AgentConfig
    from actune.agent.episode import Event, episode_seed
    from actune.agent.loop import iter_episode, run_episode
    from actune.agent.prompt_spec import PromptSpec, load_prompt_spec, save_prompt_spec


assert set(__all__) == set(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'actune.agent' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
