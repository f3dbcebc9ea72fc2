"""The agent loop: methods (Standard, CoT, CoT-SC, Act, ReAct, ReflAct, hybrids) over one driver.

Public entry points: :func:`run_episode`, :func:`iter_episode`, :class:`AgentConfig`,
:class:`PromptSpec` with :func:`load_prompt_spec`/:func:`save_prompt_spec`.
"""

from __future__ import annotations

from actune.agent.config import AgentConfig
from actune.agent.episode import Event, episode_seed
from actune.agent.loop import iter_episode, run_episode
from actune.agent.prompt_spec import PromptSpec, load_prompt_spec, save_prompt_spec

__all__ = ["AgentConfig", "Event", "episode_seed", "iter_episode", "run_episode", "PromptSpec",
           "load_prompt_spec", "save_prompt_spec"]
