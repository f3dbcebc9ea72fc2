"""Prompting methods as small async generators of events over one :class:`~actune.agent.episode.Episode`.

Each method fills ``episode.traj`` (steps, prediction, finish reason); the driver in
:mod:`actune.agent.loop` scores and closes the record.
"""

from __future__ import annotations

from typing import AsyncIterator, Callable

from actune.agent.episode import Episode, Event
from actune.agent.methods.cot_sc import run_cot_sc
from actune.agent.methods.direct import run_cot, run_standard
from actune.agent.methods.hybrid import run_cotsc_react, run_react_cotsc
from actune.agent.methods.interactive import run_interactive
from actune.agent.methods.preflect import run_preflect
from actune.agent.methods.tool_calls import run_tool_calls

__all__ = ["METHOD_RUNNERS", "BASE_METHOD"]



def _acting(method: str) -> Callable[[Episode], AsyncIterator[Event]]:
    """Act, ReAct or ReflAct in the episode's wire: labelled text steps, or tool calls."""
    return lambda ep: (run_tool_calls if ep.cfg.wire == "tools" else run_interactive)(ep, method)


METHOD_RUNNERS: dict[str, Callable[[Episode], AsyncIterator[Event]]] = {
    "standard": run_standard,
    "cot": run_cot,
    "cot_sc": run_cot_sc,
    "act": _acting("act"),
    "react": _acting("react"),
    "reflact": _acting("reflact"),
    "react_cotsc": run_react_cotsc,
    "cotsc_react": run_cotsc_react,
    "preflect": run_preflect,
    "preflect_reflact": lambda ep: run_preflect(ep, "preflect_reflact"),
}

#: The step format each method's prompt head uses.
BASE_METHOD = {"standard": "standard", "cot": "cot", "cot_sc": "cot", "act": "act", "react": "react",
               "reflact": "reflact", "react_cotsc": "react", "cotsc_react": "cot",
               "preflect": "preflect", "preflect_reflact": "preflect_reflact"}
