"""AgentConfig: how one episode is run (method, prompt regime, wire format, budgets, sampling)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, model_validator

from actune.agent.method_registry import interactive_methods, known_method, paper_methods, plans_first, trainable_format
from actune.config import StrictModel

__all__ = ["AgentConfig", "Method", "StepsMethod", "DEFAULT_MAX_STEPS", "Wire", "WIRES"]

#: An agent method: a name :mod:`actune.agent.method_registry` holds a spec under (the built-in ones, in
#: actune.agent.methods, and any a plug-in registers).
Method = Annotated[str, AfterValidator(known_method)]

#: The loop formats an adapter can be trained in: exported records are converted into one of these. Act,
#: CoT and Standard are the ReAct paper's baselines, fine-tuned on converted ReAct episodes (its Figure 3).
StepsMethod = Annotated[str, AfterValidator(trainable_format)]

#: Wire formats: how a step travels to the model and back (AgentConfig.wire), and how training renders it.
Wire = Literal["text", "chat", "tools"]
WIRES: tuple[str, ...] = get_args(Wire)

#: Paper budgets: ReAct used 7 steps on HotpotQA and 5 on FEVER; ALFWorld episodes need many more.
DEFAULT_MAX_STEPS = {"wiki": 7, "fever": 5, "docqa": 7, "alfworld": 50}

#: The ReAct paper's step budgets, Act's as ReAct's: 7 on HotpotQA and 5 on FEVER (§3.2; FEVER.ipynb loops 7
#: times, the paper's text says 5), 50 on ALFWorld (the repository's base_config.yaml ends a game at 50 steps;
#: alfworld.ipynb's loop, ``range(1, 50)``, asks the model at most 49 times).
PAPER_STEPS = {"wiki": 7, "fever": 5, "alfworld": 50}


class AgentConfig(StrictModel):
    """One agent episode's settings. Shared by bootstrap and eval so a tuned model is evaluated in
    exactly the loop that produced its training data."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_max_steps(cls, data: Any) -> Any:
        # name the new key rather than report "max_steps: unknown key"
        if isinstance(data, dict) and "max_steps" in data:
            raise ValueError(f"max_steps was renamed episode_steps (the train section's max_steps counts optimiser "
                             f"steps): write episode_steps: {data['max_steps']}")
        return data


    method: Method = "react"
    """Prompting method. Hybrids: ``react_cotsc`` backs off to CoT-SC when ReAct gives no answer
    within its budget; ``cotsc_react`` backs off to ReAct when the CoT-SC majority has < n/2 votes.
    ``preflect``: plan, critique of the plan against a catalog of planning errors (revised on FAIL),
    then ReAct steps that may call ``re_plan[reason]``. ``preflect_reflact``: the same plan, critique and
    re-planning, but each step is a ReflAct reflection (current state, latest discovery, goal relation) and
    the answer a ``FINAL ANSWER:``."""
    regime: Literal["few_shot", "zero_shot"] = "few_shot"
    """few_shot: exemplar trajectories in the prompt; zero_shot: instruction and question only
    (what a fine-tuned model sees)."""
    wire: Wire = "text"
    """text: completion in the paper's format (``Thought 1: ...``); chat: assistant turns hold thought
    and action, observations come back as user turns; tools: the environment's actions are OpenAI tools,
    each assistant turn a thought and one tool call, observations come back as tool turns
    (:mod:`actune.agent.tool_calls`; the server needs a tool parser: ``serve.tool_call_parser``). Tools run
    act, react and reflact, without the early exit."""
    chat_prefill: bool = True
    """chat: start each assistant turn with the step label (``Thought i:``) through vLLM's
    ``continue_final_message``; without it a small model answers in prose (probe: 0/20)."""
    exemplar_set: str | None = None
    """Exemplars: a name (``wiki``, ``fever``, ``docqa``, ``alfworld`` -> actune/prompts/NAME.json) or a
    path to a JSON file in that format. None: the environment's own set."""
    exemplar_kinds: list[str] | None = None
    """Keep only exemplars of these kinds (e.g. ``[bridge]``): type-matched prompts help small models.
    The entry ``task`` stands for each episode's own task kind (``task.meta["kind"]``): ``[task]`` gives a
    bridge question the bridge exemplars and a comparison question the comparison ones (the probe's best
    prompt). That is an oracle: it reads the task's label, which a deployed system does not have, so it
    is a ceiling for prompting, not a baseline. A task without a kind gets every exemplar."""
    num_exemplars: int | None = Field(None, ge=1)
    """Use at most this many exemplars (None: all that match)."""
    paper_prompt_file: Path | None = None
    """A prompt file in the ReAct repository's JSON format (e.g. prompts_naive.json), to reproduce
    the paper exactly; replaces the structured exemplars."""
    paper_prompt_key: str | None = None
    """Key in ``paper_prompt_file`` (``webthink_simple6`` ReAct, ``webact_simple6`` Act,
    ``cotqa_simple6`` CoT, ``webqa_simple6`` Standard; FEVER ``*_simple3``)."""
    fidelity: Literal["actune", "paper"] = "actune"
    """actune: actune's prompts, stop strings and endings. paper: the ReAct paper's runs as its code ran them:
    its prompt file (``paper_prompt_file``, else the bundled copy of the environment's: HotpotQA
    prompts_naive.json, FEVER fever.json, ALFWorld alfworld_3prompts.json) rendered byte for byte, a hybrid's
    second phase from the same file (``paper_prompt_key`` names the main method's variant; default HotpotQA
    ``*_simple6``, FEVER ``*_simple3``), ALFWorld in ReAct's ``> command`` form with the two trajectories of the
    game's type; the paper's stop strings only; its budgets (``PAPER_STEPS``: wiki 7, FEVER 5, ALFWorld 50, unless
    ``episode_steps`` is set) and its endings only: the budget or the answer, no repetition or parse-error ending.
    The exemplar settings do not apply. The zero-shot regime (a tuned model) keeps actune's prompt, the one it
    was trained on, with the paper's stops, budgets and endings. For the paper's methods
    (:func:`~actune.agent.method_registry.paper_methods`) on the text wire, without multihop, early exit or extra
    stop strings, which the paper does not have."""
    episode_steps: int | None = Field(None, ge=1)
    """Step budget of one episode; None: the environment's default (wiki 7, fever 5, docqa 7, alfworld 50).
    (Was ``max_steps``, which in the train section counts optimiser steps.)"""
    multihop: bool = False
    """LLARS multihop rule: budget becomes min(episode_steps + 2, 10)."""
    temperature: float = Field(0.0, ge=0)
    """Sampling temperature for the agent's steps (probe: T≈0.4 is best for collection)."""
    top_p: float = Field(1.0, gt=0, le=1)
    """Nucleus sampling mass."""
    max_tokens: int = Field(256, ge=1)
    """Most tokens generated per step (CoT/Standard: per answer)."""
    seed: int = 0
    """Run seed; each episode's seed derives from it, the task id and the attempt (stable)."""
    cot_sc_n: int = Field(21, ge=1)
    """CoT-SC: number of samples voted on."""
    cot_sc_temperature: float = Field(0.7, ge=0)
    """CoT-SC: sampling temperature of the samples."""
    hybrid_react_steps: int | None = Field(None, ge=1)
    """Hybrids: ReAct step budget inside a hybrid (None: same as episode_steps)."""
    extra_stop: list[str] | None = None
    """Stop strings added to each step's own (``\\nObservation``...). None: the start of a new example,
    ``\\nQuestion:`` (FEVER ``\\nClaim:``); without it a small model invents a new example and acts on
    it. OpenAI-compatible servers accept at most 4 stop strings per request: the loop keeps the
    step's first own stop, then these, then the step's others, and drops any beyond 4."""
    reprompt_action: bool = True
    """When a thought comes without an action, ask once more with ``Action i:`` (as the ReAct code
    does; the probe measured a large gain) before counting a parse error."""
    max_parse_errors: int = Field(3, ge=1)
    """End the episode (finish reason ``parse_errors``) after this many unparseable steps in a row (not in
    paper fidelity: the paper's code has no such ending)."""
    repeat_limit: int = Field(3, ge=2)
    """End the episode (finish reason ``repetition``) when the same action is issued this many times (not in
    paper fidelity: the paper's code has no such ending)."""
    observation_max_tokens: int = Field(400, ge=16)
    """Truncate longer observations to about this many tokens (approximated as 4 characters per
    token unless a tokenizer-based counter is passed to the loop)."""
    early_exit: bool = False
    """LLARS adaptive iteration: right after an observation whose ``info['retrieval_score']`` reaches
    ``early_exit_threshold``, ask for the final answer (even after the budget's last step, where the episode
    would otherwise end unanswered). The wiki envs score how far the pages read bear on the question
    (``actune.envs.goal_confidence``), not whether a page was found."""
    early_exit_threshold: float = Field(0.9, ge=0, le=1)
    """Retrieval confidence (0..1) that triggers the early exit."""
    stream_events: bool = False
    """LLARS' event stream: stream the thought / reflection / answer requests token by token and add their
    events to the loop's (``thinking`` / ``reflecting``, ``thought_delta`` / ``reflection_delta`` / ``delta``,
    ``adaptive_response``; see :mod:`actune.agent.loop`). ``actune run`` turns it on for its live view;
    bootstrap and eval leave it off (the same requests, unstreamed, and the same events as without it)."""
    preflect_catalog: Path | None = None
    """PreFlect: the planning-error catalog (JSON, see ``actune.agent.planning_errors``) the reflector
    checks plans against. None: the paper's three types (actune/prompts/preflect_catalog.json)."""
    preflect_episode_steps: int | None = Field(20, ge=1)
    """PreFlect: its own step budget (the paper: 20 action steps), used instead of ``episode_steps`` and the
    environment's (wiki 7, FEVER 5), under which the forced re-plans at steps 6 and 12 could never happen.
    None: the budget the other methods get."""
    preflect_force_replan_every: int = Field(6, ge=0)
    """PreFlect: when no re-plan happened in steps 1..N (then N+1..2N, ...), force one at step N (2N,
    ...); the paper uses 6 (re-plans at steps 6 and 12 of 20). 0: never force."""
    preflect_force_replan_windows: int = Field(2, ge=0)
    """PreFlect: how many windows of ``preflect_force_replan_every`` steps must each hold a re-plan; the
    paper enforces two extra planning steps (steps 1-6 and 7-12, forced at 6 and 12), none after."""
    preflect_max_revisions: int = Field(1, ge=0)
    """PreFlect: how many times a plan the reflector FAILs is revised; each revision is checked again (the paper:
    one revision turn). 0: critique only."""
    preflect_critique_max_tokens: int | None = Field(None, ge=1)
    """PreFlect: most tokens of the reflector's JSON answer (None: ``max_tokens``)."""
    preflect_reviser: Literal["reflector", "agent"] = "reflector"
    """PreFlect: who writes the revised plan after a FAIL. reflector (the paper's, the default): a second turn
    of the reflector's conversation, from the errors it named with their failure and success patterns and the
    catalog's examples. agent (actune before issue #37): the agent, in its own prompt after the critique.
    Either way each revision is checked again, up to ``preflect_max_revisions``."""

    @model_validator(mode="after")
    def _tools_wire_methods(self) -> "AgentConfig":
        if self.wire == "tools" and (self.method not in interactive_methods() or self.early_exit):
            raise ValueError(f"wire tools runs {', '.join(interactive_methods())} without early_exit (each step one "
                             f"tool call), not method {self.method}" + (" with early_exit" if self.early_exit else ""))
        return self

    @model_validator(mode="after")
    def _paper_fidelity(self) -> "AgentConfig":
        if self.fidelity != "paper":
            return self
        # Settings the paper's runs do not have are errors, not silently dropped: a config that says paper runs it.
        problems = [] if self.method in paper_methods() else [
            f"method {self.method} (the paper's: {', '.join(paper_methods())})"]
        problems += [f"{name}: {getattr(self, name)}" for name, on in (
            ("multihop", self.multihop), ("early_exit", self.early_exit), ("extra_stop", self.extra_stop is not None),
            ("reprompt_action", not self.reprompt_action)) if on]
        if self.regime == "few_shot" and self.wire != "text":
            problems.append(f"wire {self.wire} (the paper's prompts are text completions)")
        if problems:
            raise ValueError(f"fidelity paper runs the ReAct paper's settings; not: {'; '.join(problems)}")
        return self

    def stops_for(self, env_name: str) -> list[str]:
        """The extra stop strings for ``env_name`` (paper fidelity: none, each request has the paper's own)."""
        if self.extra_stop is not None:
            return list(self.extra_stop)
        if self.fidelity == "paper":
            return []
        return {"fever": ["\nClaim:"], "alfworld": []}.get(env_name, ["\nQuestion:"])

    def step_budget(self, env_name: str) -> int:
        if plans_first(self.method) and self.preflect_episode_steps is not None:
            return self.preflect_episode_steps
        if self.fidelity == "paper" and self.episode_steps is None and env_name in PAPER_STEPS:
            return PAPER_STEPS[env_name]
        base = self.episode_steps if self.episode_steps is not None else DEFAULT_MAX_STEPS.get(env_name, 7)
        return min(base + 2, 10) if self.multihop else base

    def ending_limits(self, budget: int) -> "AgentConfig":
        """This config as an acting loop of ``budget`` steps applies it. Paper fidelity moves the repetition and
        parse-error endings, which the paper's code does not have, past the budget: no action can be issued,
        and no step be unusable in a row, more than ``budget`` times."""
        if self.fidelity != "paper":
            return self
        return self.model_copy(update={"repeat_limit": budget + 1, "max_parse_errors": budget + 1})
