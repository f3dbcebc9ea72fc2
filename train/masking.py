"""Tokenise exported examples into ``input_ids`` + ``labels`` with -100 on every untrained token.

    enc = tokenize_segments(tokenizer, example["segments"], max_length=1024)
    enc = tokenize_messages(tokenizer, example["messages"], max_length=1024)

The whole text is tokenised once, as the server will tokenise the prompt, and each token is labelled by the
characters it covers: tokenising segments one by one would change BPE merges at the seams. A token is trained
only when it lies wholly inside trained text (one straddling a seam is untrained and counted in ``straddling``).
Chat examples are rendered by the tokenizer's own chat template: an assistant turn's content and end-of-turn
token are trained, so the model learns to stop; the template's opening is not.

The rules in full: docs/modules.md, actune.train.masking.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

__all__ = ["Encoded", "tokenize_segments", "tokenize_messages", "chat_segments", "trained_spans"]


@dataclass
class Encoded:
    input_ids: list[int]
    labels: list[int]
    """-100 on untrained tokens, the token id elsewhere."""
    truncated: bool
    """The example was longer than max_length and its tail was cut."""
    straddling: int
    """Tokens that cross a trained/untrained seam (left untrained; see the module docstring)."""

    @property
    def trained_tokens(self) -> int:
        return sum(1 for x in self.labels if x != -100)


def trained_spans(segments: Sequence[dict[str, Any]]) -> tuple[str, list[tuple[int, int]]]:
    """The concatenated text and the character spans of its runs of adjacent trained segments."""
    spans: list[tuple[int, int]] = []
    pos = 0
    parts = []
    for seg in segments:
        text = seg["text"]
        parts.append(text)
        if seg["train"] and text:
            if spans and spans[-1][1] == pos:
                spans[-1] = (spans[-1][0], pos + len(text))
            else:
                spans.append((pos, pos + len(text)))
        pos += len(text)
    return "".join(parts), spans


def tokenize_segments(tokenizer: Any, segments: Sequence[dict[str, Any]], max_length: int | None = None,
                      *, add_special_tokens: bool = True, mask: bool = True) -> Encoded:
    """Tokenise the concatenated segments once and label tokens by their character spans.

    ``mask=False`` trains every token (labels == input_ids except added special tokens).
    ``add_special_tokens`` as the server does for a completion prompt (a chat render already holds them).
    """
    text, spans = trained_spans(segments)
    if not mask:
        spans = [(0, len(text))] if text else []
    enc = tokenizer(text, add_special_tokens=add_special_tokens, return_offsets_mapping=True)
    ids: list[int] = list(enc["input_ids"])
    offsets = enc["offset_mapping"]
    labels: list[int] = []
    straddling = 0
    j = 0  # spans and offsets are both in increasing order
    for tok, (start, end) in zip(ids, offsets):
        while j < len(spans) and spans[j][1] <= start:
            j += 1
        inside = end > start and j < len(spans) and spans[j][0] <= start and end <= spans[j][1]
        if not inside and end > start and j < len(spans) and start < spans[j][1] and end > spans[j][0]:
            straddling += 1
        labels.append(tok if inside else -100)
    truncated = max_length is not None and len(ids) > max_length
    if truncated:
        ids, labels = ids[:max_length], labels[:max_length]
    return Encoded(ids, labels, truncated, straddling)


def _as_sent(m: dict[str, Any]) -> dict[str, Any]:
    """A message as the template sees it on the server: role and content, the tools wire's call id and calls
    (their arguments parsed into objects, as vLLM does before templating); no ``train`` flag, no empty keys (a
    dataset row holds every key of every message)."""
    out = {"role": m["role"], "content": m["content"]}
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    if m.get("tool_calls"):
        out["tool_calls"] = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])
                                                if isinstance(c["function"]["arguments"], str)
                                                else c["function"]["arguments"]}} for c in m["tool_calls"]]
    return out


def chat_segments(tokenizer: Any, messages: Sequence[dict[str, Any]],
                  tools: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The chat template's rendering of ``messages`` (with ``tools``: the tools wire) as segments (see the
    module docstring).

    Each message may carry ``train`` (default: true for assistant turns).
    """
    plain = [_as_sent(m) for m in messages]

    def render(n: int, gen: bool = False) -> str:
        if n == 0:
            return ""
        return tokenizer.apply_chat_template(plain[:n], tools=tools, tokenize=False, add_generation_prompt=gen)

    eos = tokenizer.eos_token or ""
    segments: list[dict[str, Any]] = []
    done = ""
    for i, m in enumerate(messages):
        train = bool(m.get("train", m["role"] == "assistant"))
        full = render(i + 1)
        if not full.startswith(done):
            raise ValueError(f"the chat template does not render message {i} after the earlier ones "
                             "(its prefix changes); token-exact masking needs a prefix-stable template")
        if train:
            opened = render(i, gen=True) if i else ""
            if not (opened.startswith(done) and full.startswith(opened)):
                raise ValueError(f"message {i}: the generation prompt is not a prefix of the rendered turn")
            body = full[len(opened):]
            tail = ""
            if eos and eos in body:  # whitespace after the end-of-turn token is the template's, not the model's
                k = body.rindex(eos) + len(eos)
                body, tail = body[:k], body[k:]
            segments += [{"text": opened[len(done):], "train": False}, {"text": body, "train": True},
                         {"text": tail, "train": False}]
        else:
            segments.append({"text": full[len(done):], "train": False})
        done = full
    return [s for s in segments if s["text"]]


def tokenize_messages(tokenizer: Any, messages: Sequence[dict[str, Any]], max_length: int | None = None,
                      *, mask: bool = True, tools: list[dict[str, Any]] | None = None) -> Encoded:
    """Render ``messages`` (and ``tools``) with the tokenizer's chat template and tokenise with assistant-only
    labels."""
    return tokenize_segments(tokenizer, chat_segments(tokenizer, messages, tools), max_length,
                             add_special_tokens=False, mask=mask)
