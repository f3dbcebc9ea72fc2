"""Prompting methods as small async generators of events over one :class:`~actune.agent.episode.Episode`.

Each method's module holds its :class:`~actune.agent.method_registry.MethodSpec` (runner, step format, prompt
instruction, judge and export rules, cost weights); importing this package registers the built-in ones, in the
order the CLI and the docs list them. Each method fills ``episode.traj`` (steps, prediction, finish reason); the
driver in :mod:`actune.agent.loop` scores and closes the record.
"""

from __future__ import annotations

from actune.agent.method_registry import register_method
from actune.agent.methods import act, cot_sc, direct, hybrid, preflect, react, reflact

__all__: list[str] = []

for _spec in (direct.STANDARD, direct.COT, cot_sc.SPEC, act.SPEC, react.SPEC, reflact.SPEC, hybrid.REACT_COTSC,
              hybrid.COTSC_REACT, preflect.PREFLECT, preflect.PREFLECT_REFLACT):
    register_method(_spec)
