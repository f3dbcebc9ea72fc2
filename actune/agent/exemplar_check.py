"""Check, before an episode runs, that the few-shot exemplars act with the environment's own actions.

A prompt whose instruction lists ``lookup/shelf/finish`` and whose exemplars then show ``search[...]`` teaches the
model actions that fail; a set left unset on an environment actune has no set for is not there at all. Both are
config errors (:class:`~actune.agent.exemplars.ExemplarError`) naming the set and the ways out.
"""

from __future__ import annotations

from actune.agent.config import AgentConfig
from actune.agent.exemplars import (
    Exemplar,
    ExemplarError,
    ExemplarSet,
    builtin_sets,
    exemplar_path,
    load_exemplars,
    select_exemplars,
)
from actune.agent.method_registry import method_spec, step_format
from actune.agent.parser import parse_action
from actune.agent.render import TASK_KIND
from actune.envs.base import Environment

__all__ = ["check_exemplar_actions", "exemplar_action_names", "ways_out"]

def _acts(name: str) -> bool:
    """Whether step format ``name``'s exemplars show actions (Standard's and CoT's: only reasoning and the answer)."""
    f = step_format(name)
    return f is not None and f.acting


def exemplar_action_names(exemplars: list[Exemplar], env: Environment) -> list[str]:
    """The action names ``exemplars`` use, read as the loop reads the model's (free-text commands when the
    environment has no finish action), in order of first use; an unreadable action is listed as written."""
    names: list[str] = []
    for ex in exemplars:
        for step in ex.steps:
            action, _ = parse_action(step.action, None, env.finish_action, free_text=env.finish_action is None)
            name = action.name if action is not None else repr(step.action.strip())
            if name not in names:
                names.append(name)
    return names


def _shows_actions(cfg: AgentConfig) -> bool:
    """Whether a prompt of ``cfg`` shows the structured exemplars' actions: a hybrid acts in ReAct's format, and a
    paper prompt file replaces the exemplars of the method it is for."""
    spec = method_spec(cfg.method)
    acting = next((f for f in spec.formats if _acts(f)), None)  # a hybrid acts in its acting phase's format
    if acting is None:
        return False
    return cfg.paper_prompt_file is None or acting != spec.steps.name


def ways_out() -> str:
    """What a user can do when the exemplars do not fit or are not there: the end of both errors."""
    return (f"Name a set that fits with agent.exemplar_set=<name or path> (built-in: {', '.join(builtin_sets())}), "
            "prompt without exemplars with agent.regime=zero_shot, or write an exemplar file anywhere and name its "
            'path in agent.exemplar_set: JSON {"exemplars": [{"question": ..., "answer": ..., "steps": [{"thought": '
            '..., "action": "name[argument]", "observation": ...}, ...]}, ...]} (docs/usage.md, "Few-shot exemplars").')


def _load(cfg: AgentConfig, env: Environment) -> ExemplarSet:
    name = cfg.exemplar_set or env.name
    if not exemplar_path(name).is_file():
        unset = "" if cfg.exemplar_set else f"agent.exemplar_set is unset, so environment {env.name!r} gets its own: "
        raise ExemplarError(f"{unset}{exemplar_path(name)}: exemplar file not found. {ways_out()}")
    return load_exemplars(name)


def check_exemplar_actions(cfg: AgentConfig, env: Environment, exemplar_set: ExemplarSet | None = None) -> None:
    """Raise :class:`ExemplarError` (a ConfigError) when the few-shot prompt ``cfg`` gives ``env`` would show an
    action ``env`` does not have, or its exemplar set is not there. ``exemplar_set``: a set handed to the loop
    instead of ``cfg.exemplar_set``. Kinds ``[task]`` may pick any exemplar of the set, so all are checked."""
    if cfg.regime != "few_shot" or cfg.fidelity == "paper" or not _shows_actions(cfg):
        return
    es = exemplar_set or _load(cfg, env)
    if not env.action_names:
        return  # an environment that names no actions takes any
    if cfg.exemplar_kinds and TASK_KIND in cfg.exemplar_kinds:
        shown = es.exemplars  # each task is shown its own kind's: any exemplar of the set may be
    else:
        shown = select_exemplars(es, cfg.exemplar_kinds, cfg.num_exemplars)
    # the finish action is the loop's own even where an environment leaves it out of its names
    known = set(env.action_names) | ({env.finish_action} if env.finish_action else set())
    missing = [n for n in exemplar_action_names(shown, env) if n not in known]
    if missing:
        raise ExemplarError(
            f"agent.exemplar_set: the exemplars of set {es.name or es.env!r} use actions environment {env.name!r} "
            f"does not have: {', '.join(missing)} (its actions: {', '.join(env.action_names)}). {ways_out()}")
