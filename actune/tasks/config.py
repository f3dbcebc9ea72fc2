"""Which tasks to load: ``load_tasks(TaskConfig(...))``."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from actune.config import StrictModel
from actune.tasks.formats import BUILTIN_FORMATS, TaskFormat

__all__ = ["TaskConfig"]


class TaskConfig(StrictModel):
    """A task set: its format, where it is, and which part of it to use."""

    format: TaskFormat = "hotpotqa"
    """``hotpotqa`` (official JSON list, JSONL with context, or the Hugging Face ``hotpot_qa`` columns),
    ``fever`` (claims with SUPPORTS/REFUTES/NOT ENOUGH INFO labels), ``custom`` (JSONL lines with
    ``question``, ``answer`` and optional ``aliases``, ``id``, ``meta``), ``alfworld`` (``path`` is a folder
    of ALFWorld games; one task per ``game.tw-pddl``); or your own loader: ``module:function`` (a module that is
    not installed is imported from the current directory) or the name of an ``actune.tasks`` entry point, called
    with this config and returning the tasks (:mod:`actune.tasks.formats`)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Settings of your own loader (``format: module:function`` or an entry point), read from this config
    (``cfg.options``). The built-in formats take none."""
    path: str | None = None
    """A ``.json`` list or ``.jsonl`` file; or a folder: one written by ``datasets.save_to_disk`` or one of
    data files ``datasets.load_dataset`` reads (json/jsonl/parquet/csv, split by file name)."""
    hf_dataset: str | None = None
    """A Hugging Face dataset id loaded with ``datasets.load_dataset`` (e.g. ``hotpotqa/hotpot_qa``);
    instead of ``path``. Needs network or the local Hugging Face cache."""
    hf_config: str | None = None
    """The dataset configuration, e.g. ``distractor`` or ``fullwiki`` for ``hotpot_qa``."""
    split: str = "dev"
    """Split to use (``dev`` and ``validation`` name the same split for Hugging Face data); recorded in each task."""
    env: str | None = None
    """Environment that serves the tasks; default ``fever`` for FEVER, else ``wiki``."""
    react_subset: bool = False
    """Keep only the ReAct paper's evaluation questions, in its order:
    ``random.Random(233).shuffle(list(range(7405)))[:500]`` applied to the full dev set (or to the
    records' ``dev_index`` when they carry one)."""
    exclude_react_subset: bool = False
    """Drop the ReAct paper's evaluation questions (the complement of ``react_subset``): bootstrap on the
    rest of a split whose 500 paper questions eval keeps unseen."""
    where: dict[str, Any] = Field(default_factory=dict)
    """Keep tasks whose ``meta[key] == value`` for every pair, e.g. ``{gold_titles_in_union: true}``."""
    offset: int = Field(0, ge=0)
    """Skip this many tasks (after the subset and filters)."""
    limit: int | None = Field(None, ge=1)
    """Keep at most this many tasks."""
    keep_context: bool = False
    """Keep HotpotQA's ``context`` paragraphs in ``meta["context"]`` (large)."""

    @model_validator(mode="after")
    def _one_source(self) -> "TaskConfig":
        # Neither is fine here (a stage config holds a default TaskConfig); load_tasks requires one.
        if self.react_subset and self.exclude_react_subset:
            raise ValueError("react_subset and exclude_react_subset: choose one (they select complementary sets)")
        if self.options and self.format in BUILTIN_FORMATS:
            raise ValueError(f"options: are a custom task loader's settings; the built-in format {self.format!r} "
                             "takes none")
        if self.path is not None and self.hf_dataset is not None:
            raise ValueError("give exactly one of 'path' (file or folder) and 'hf_dataset', not both")
        return self
