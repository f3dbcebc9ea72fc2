"""FEVER (ReAct §3.1): the Wikipedia actions, but ``finish`` takes a verdict label.

``finish[SUPPORTS|REFUTES|NOT ENOUGH INFO]``; case, underscores, extra spaces and a trailing period
are forgiven (``finish[not enough info.]``). Anything else is explained in the observation and the
episode goes on. ``info["answer"]`` is the canonical label.
"""

from __future__ import annotations

from actune.envs.base import StepResult
from actune.envs.config import EnvConfig
from actune.envs.wiki_env import WikiEnv, make_backend
from actune.text import FEVER_LABELS, normalize_label

__all__ = ["FeverEnv", "from_config"]


class FeverEnv(WikiEnv):
    name = "fever"

    def describe_actions(self) -> str:
        return (
            "search[entity]: searches the exact entity on Wikipedia and returns the first paragraph "
            "if it exists; if not, returns some similar entities to search.\n"
            "lookup[keyword]: returns the next sentence containing keyword in the current passage.\n"
            "finish[answer]: finishes the task with the verdict SUPPORTS, REFUTES or NOT ENOUGH INFO."
        )

    def _finish(self, answer: str) -> StepResult:
        label = normalize_label(answer)
        if label is None:
            return self._result(
                f"finish takes one of {', '.join(FEVER_LABELS)}; got {answer!r}."
            )
        return super()._finish(label)


def from_config(cfg: EnvConfig) -> FeverEnv:
    return FeverEnv(make_backend(cfg), cfg.page_sentences, cfg.similar_titles, cfg.max_observation_chars)
