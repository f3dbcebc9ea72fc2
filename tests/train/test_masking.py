"""Token-exact loss masks with the embedded model's real tokenizer: trained tokens are exactly the
model-written text, observations and prompt are never trained."""

from __future__ import annotations

import pytest
from training_records import records

from actune.bootstrap.export import chat_example, text_example
from actune.train.masking import chat_segments, tokenize_messages, tokenize_segments, trained_spans


@pytest.fixture(scope="module")
def tokenizer(embedded_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(embedded_model)


def trained_runs(tok, input_ids, labels) -> list[str]:
    """Decode each run of consecutive trained tokens."""
    runs, cur = [], []
    for i, lab in zip(input_ids, labels):
        if lab != -100:
            assert lab == i
            cur.append(i)
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    return [tok.decode(r, clean_up_tokenization_spaces=False) for r in runs]


@pytest.mark.parametrize("i", range(4))
def test_text_masks_are_token_exact(tokenizer, i):
    ex = text_example(records()[i])
    enc = tokenize_segments(tokenizer, ex["segments"])
    text, spans = trained_spans(ex["segments"])
    # one tokenisation of the whole text, as the server tokenises the prompt
    assert enc.input_ids == tokenizer(text)["input_ids"] and not enc.truncated
    assert enc.straddling == 0
    # trained tokens decode, run by run, to exactly the trained segments (thought+action lines)
    expected = [text[a:b] for a, b in spans]
    assert trained_runs(tokenizer, enc.input_ids, enc.labels) == expected
    assert expected[0].startswith("Thought 1: I need to search") and expected[0].endswith("]\n")
    assert expected[1].startswith("Thought 2:") and expected[1].endswith("]\n")
    obs = ex["segments"][3]["text"]
    assert obs.startswith("Observation 1:") and all(obs not in r for r in expected)
    # the untrained tokens decode to the prompt head and the observation
    untrained = tokenizer.decode([t for t, lab in zip(enc.input_ids, enc.labels) if lab == -100])
    assert untrained == ex["segments"][0]["text"] + obs


def test_segment_wise_tokenisation_would_differ(tokenizer):
    """Why the masks come from offsets: tokenising segments apart changes tokens at the seams."""
    segs = [{"text": "Observation 1: x", "train": False}, {"text": "yz done.\n", "train": True}]
    whole = tokenizer("".join(s["text"] for s in segs))["input_ids"]
    apart = sum((tokenizer(s["text"])["input_ids"] for s in segs), [])
    assert whole != apart
    enc = tokenize_segments(tokenizer, segs)
    assert enc.input_ids == whole and enc.straddling >= 1  # the seam token "xyz" is left untrained
    assert "x" not in "".join(trained_runs(tokenizer, enc.input_ids, enc.labels))


def test_unmasked_and_truncated(tokenizer):
    ex = text_example(records()[0])
    full = tokenize_segments(tokenizer, ex["segments"], mask=False)
    assert full.labels == full.input_ids
    cut = tokenize_segments(tokenizer, ex["segments"], max_length=20)
    assert cut.truncated and len(cut.input_ids) == 20 and cut.labels == [-100] * 20  # only the head fits


def test_chat_masks_train_assistant_turns_and_end_of_turn(tokenizer):
    ex = chat_example(records()[1])
    msgs = ex["messages"]
    enc = tokenize_messages(tokenizer, msgs)
    plain = [{"role": m["role"], "content": m["content"]} for m in msgs]
    rendered = tokenizer.apply_chat_template(plain, tokenize=False)
    # the same ids the template gives, from one tokenisation of the rendered chat
    assert enc.input_ids == tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert "".join(s["text"] for s in chat_segments(tokenizer, msgs)) == rendered
    runs = trained_runs(tokenizer, enc.input_ids, enc.labels)
    assert runs == [m["content"] + "<|im_end|>" for m in msgs if m["role"] == "assistant"]
    assert runs[0] == "Thought 1: I need to search Danube.\nAction 1: search[Danube]<|im_end|>"
    assert enc.straddling == 0


def test_chat_turn_flag_false_is_not_trained(tokenizer):
    msgs = [dict(m) for m in chat_example(records()[0])["messages"]]
    msgs[2]["train"] = False  # e.g. an assistant turn with an unreadable action
    enc = tokenize_messages(tokenizer, msgs)
    runs = trained_runs(tokenizer, enc.input_ids, enc.labels)
    assert runs == [msgs[4]["content"] + "<|im_end|>"]


def test_tools_wire_masks_train_thought_and_call_and_never_the_tool_result(tokenizer, embedded_model):
    import json

    from actune.bootstrap.export import tools_example
    from actune.runtime.chat_templates import tools_template

    tokenizer = copy_with_template(tokenizer, tools_template(embedded_model).read_text())
    ex = tools_example(records()[2])  # unicode in the argument and the observation
    tools = json.loads(ex["tools"])
    enc = tokenize_messages(tokenizer, ex["messages"], tools=tools)
    rendered = "".join(s["text"] for s in chat_segments(tokenizer, ex["messages"], tools))
    assert enc.input_ids == tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert trained_runs(tokenizer, enc.input_ids, enc.labels) == [
        'I need to search Zoë Ménard.\n<tool_call>\n{"name": "search", "arguments": {"entity": "Zoë Ménard"}}\n'
        '</tool_call><|im_end|>',
        'So the answer is Liège.\n<tool_call>\n{"name": "finish", "arguments": {"answer": "Liège"}}\n'
        '</tool_call><|im_end|>',
    ]
    assert "<tool_response>\nZoë Ménard (born 1971 in Liège) is a Belgian poet.\n</tool_response>" in rendered
    assert '<tools>\n{"type": "function", "function": {"name": "search", "description": ""' in rendered
    assert enc.straddling == 0


def copy_with_template(tokenizer, template: str):
    import copy

    tok = copy.deepcopy(tokenizer)
    tok.chat_template = template
    return tok
