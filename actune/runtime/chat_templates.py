"""Which chat template renders the tools wire for a model: its own, or actune's ChatML one.

The server (``--chat-template``) and training (``apply_chat_template(chat_template=...)``) must render the same
text, or a tuned model meets prompts it never trained on: both ask :func:`tools_template` here.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["CHATML_TOOLS_TEMPLATE", "model_template", "tools_template"]

#: A ChatML template with tools in the Hermes form (vLLM's ``hermes`` tool parser reads its calls).
CHATML_TOOLS_TEMPLATE = Path(__file__).parents[1] / "templates" / "chatml_tools.jinja"


def model_template(folder: str | Path) -> str | None:
    """The chat template a model folder ships: ``chat_template.jinja``, else ``tokenizer_config.json``'s."""
    folder = Path(folder)
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    if config.is_file():
        template = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(template, str):
            return template
    return None


def tools_template(folder: str | Path, chosen: str | Path | None = None) -> Path | None:
    """The template file to render the tools wire with for the model in ``folder``: ``chosen`` when given;
    None (the model's own) when the model's template renders ``tools``; :data:`CHATML_TOOLS_TEMPLATE` for a
    ChatML template without tools. Any other template without tools is an error naming the way out."""
    if chosen is not None:
        path = Path(chosen)
        if not path.is_file():
            raise ValueError(f"chat_template {path}: no such file")
        return path
    own = model_template(folder) or ""
    if "tools" in own:
        return None
    if "<|im_start|>" in own:
        return CHATML_TOOLS_TEMPLATE
    raise ValueError(f"the model in {folder} has a chat template without tools that is not ChatML: give a template "
                     "that renders tools and tool calls (serve.chat_template / train.chat_template)")
