"""The dataset card (``README.md``, Hugging Face dataset-card YAML + body) of an ``actune export``.

    text = dataset_card(summary, rows, fmt="actune", data_files="data-*.arrow")

Every export gets one: the ``datasets`` folder holds it as ``README.md`` beside ``export_summary.json``; a
``--format trl|openai|sharegpt|alpaca`` JSONL file has it beside it (:func:`actune.runtime.hub_push.file_card_path`:
``runs/dataset.openai.jsonl`` -> ``runs/dataset.openai.README.md``), and ``actune push`` uploads the two as
``README.md`` + the JSONL file. The YAML names the data files the Hub loads (``configs``), the task, the tags
and the size category; the body says where the examples came from (stores, per-method counts of
:class:`~actune.bootstrap.export.ExportSummary`), the judge's rules and settings, the step and wire formats,
which tokens carry loss, and how to load the data.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from huggingface_hub import DatasetCardData

from actune.agent.method_registry import step_format
from actune.bootstrap.config import ExportConfig
from actune.bootstrap.export_summary import ExportSummary
from actune.runtime.provenance import provenance, provenance_markdown

__all__ = ["CARD_FILE", "card_settings", "card_yaml", "dataset_card", "saved_folder_text", "size_category"]

CARD_FILE = "README.md"

_SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
          (10_000_000, "1M<n<10M")]

def _conversion_words(steps_method: str) -> str:
    """What converting another format's episode into ``steps_method`` keeps (ReAct's words where it has none)."""
    for f in (step_format(steps_method), step_format("react")):
        if f is not None and f.conversion:
            return f.conversion
    return ""


_WIRE_WORDS = {"text": "the paper's plain-text episode (instruction, question, steps as one text)",
               "chat": "chat turns", "tools": "chat turns with OpenAI tool calls"}

_LOSS = {
    "actune-text": "Each example's `segments` is a list of `{text, train}` whose concatenation is `text`. The prompt "
                   "head (instruction and question), every observation and every plan critique have `train: false`; "
                   "thoughts or reflections, actions and answers have `train: true`, except an action the loop's "
                   "parser could not read (it was answered with a format hint). `actune train` puts the loss on "
                   "exactly the `train: true` characters' tokens.",
    "actune-chat": "Each example's `messages` are `{role, content, train}`: system (the instruction), user (the "
                   "question, then one user turn per observation), assistant (thought and action lines). "
                   "`train` is true on assistant turns, false on the others and on an assistant turn holding an "
                   "action the parser could not read. `actune train` puts the loss on the `train: true` turns.",
    "actune-tools": "Each example's `messages` are OpenAI chat messages with `train`: system (the instruction), user "
                    "(the question), assistant (`content`: the thought; `tool_calls`: one call of the environment's "
                    "action, its argument as a JSON object string), tool (`tool_call_id`, `content`: the "
                    "observation); a format hint after a turn without a usable call is a user turn. `tools` is the "
                    "OpenAI tools list as a JSON string. `train` is true on assistant turns except one holding an "
                    "unusable call; `actune train` renders the messages and tools with the chat template and puts "
                    "the loss on the `train: true` turns.",
    "trl": "`{\"prompt\": [...], \"completion\": [...]}`, TRL's conversational prompt-completion form, one line per "
           "trained assistant turn: `prompt` holds every message before the turn (system: the instruction; user: the "
           "question, then one user turn per observation; the earlier assistant turns), `completion` the turn "
           "(thought and action lines). TRL's `SFTTrainer` puts the loss on the completion only, so no observation "
           "and no turn actune leaves untrained is ever a label.",
    "openai": "`{\"messages\": [...]}` as OpenAI chat fine-tuning reads it: system (the "
              "instruction), user (the question, then one user turn per observation), assistant (thought and action "
              "lines). Each assistant turn has `weight`: 1 (trained) or 0 (it holds an action the parser could not "
              "read), which OpenAI honours; TRL's `SFTTrainer` ignores `weight` and by default trains every token, "
              "observations included: for TRL use the `trl` export.",
    "sharegpt": "`{\"system\", \"conversations\": [{\"from\": \"human\" | \"gpt\", \"value\"}]}` (LLaMA-Factory). "
                "Observations are `human` turns. The format has no per-turn loss flag: a trainer trains every `gpt` "
                "turn, including {unmasked} that actune would not train (unreadable actions).",
    "alpaca": "`{\"instruction\", \"input\": \"\", \"output\"}`: the prompt head (instruction and question) is "
              "`instruction`, the steps are `output`. Observations are inside `output`, so a trainer of this format "
              "trains on them ({unmasked} observation or unreadable-action segments here that actune would not "
              "train); prefer the `openai` export where the trainer reads it.",
}

_COLUMNS = ("`episode_id`, `task_id`, `run_id`, `attempt`, `method` / `source_method` (the method that collected the "
            "episode), `steps_method` (the step format, the same on every row), `env`, `wire`, `question`, `answer` "
            "(the task's gold answer), `prediction`, `num_steps`, `source_store`")


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` value for ``n`` examples."""
    for bound, name in _SIZES:
        if n < bound:
            return name
    return "n>10M"


def card_settings(config: ExportConfig | None) -> dict[str, Any]:
    """The export's filter settings as the card states them (the stores are listed apart)."""
    return (config or ExportConfig()).model_dump(mode="json", exclude={"stores"})


def card_yaml(pretty_name: str, tags: list[str], examples: int, data_files: str) -> str:
    """A card's YAML front matter, what the Hub reads: its name, tags and size, and ``configs`` naming the data files
    of the ``train`` split (a trajectories export's card and a DPO pairs export's)."""
    return DatasetCardData(
        pretty_name=pretty_name,
        language=["en"],
        task_categories=["text-generation"],
        tags=tags,
        size_categories=[size_category(examples)],
        configs=[{"config_name": "default", "data_files": [{"split": "train", "path": data_files}]}],
    ).to_yaml()


def saved_folder_text(summary_file: str) -> str:
    """How to load a ``Dataset.save_to_disk`` folder that holds ``summary_file`` (in Markdown) and its card."""
    return ("A `datasets` folder (`Dataset.save_to_disk`): `data-*.arrow`, `dataset_info.json`, `state.json`, "
            f"plus {summary_file} and this card.\n\n"
            "```python\nfrom datasets import load_from_disk, load_dataset\n"
            "ds = load_from_disk(\"path/to/this/folder\")                 # a local copy\n"
            "ds = load_dataset(\"org/name\", split=\"train\")               # from the Hub (the arrow files)\n"
            "```")


def _counts_table(summary: ExportSummary) -> str:
    cols = ["kept", "unconvertible", "incomplete_reflections", "duplicates", "capped", "shares", "exported"]
    lines = ["| source method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, m in summary.methods.items():
        lines.append(f"| {name} | " + " | ".join(str(getattr(m, c)) for c in cols) + " |")
    total = [sum(getattr(m, c) for m in summary.methods.values()) for c in cols]
    lines.append("| **total** | " + " | ".join(str(x) for x in total) + " |")
    return "\n".join(lines)


def _load_section(fmt: str, data_files: str) -> str:
    if fmt == "actune":
        return (saved_folder_text("`export_summary.json` (what each filter removed, per source method)")
                + "\n\n`actune train CONFIG train.dataset=path/to/this/folder` trains on the local folder.")
    return (f"One JSON object a line: `{data_files}` (the `{fmt}` layout), and this card.\n\n"
            "```python\nfrom datasets import load_dataset\n"
            f"ds = load_dataset(\"json\", data_files=\"{data_files}\", split=\"train\")  # a local copy\n"
            "ds = load_dataset(\"org/name\", split=\"train\")                         # from the Hub\n```")


_ORIGIN_WORDS = {"bootstrapped": "bootstrapped by actune (an agent loop run on a model)",
                 "imported": "imported from trajectories made elsewhere (`actune import`)",
                 "scripted": "scripted gold paths (a teacher that reads each training question's supporting pages)"}


def _origin_text(summary: ExportSummary) -> str:
    """Where the exported episodes came from, in words (an import-only export is not "bootstrapped")."""
    origins = summary.origins or {"bootstrapped": summary.exported}
    if len(origins) == 1:
        return _ORIGIN_WORDS[next(iter(origins))]
    return "; ".join(f"{n} {_ORIGIN_WORDS[o]}" for o, n in origins.items())


def _judge_lines(summary: ExportSummary) -> list[str]:
    """The card's judge section: the rules, and how many kept records each judged."""
    lines = [
        "An episode was kept when it was **correct** (the task metric's flag on the final answer against the gold "
        "answer) and **grounded**: it was shown what holds the answer (at the evidence level, where the task names "
        "its supporting sentences, every sentence of one evidence set appeared in the episode's observations; at "
        "the page level, where it names only supporting pages, every one of them was opened), with no step-order "
        "problem. Methods that read no pages (standard, CoT, CoT-SC) cannot be grounded and are kept on "
        "correctness alone; a task naming no supporting pages counts as grounded (unchecked).",
    ]
    if judge := summary.judge:
        levels = ""
        if "grounded_evidence" in judge:  # exports of an older actune did not count the levels
            page = judge["grounding_required"] - judge["grounded_evidence"] - judge["grounding_unchecked"]
            levels = f"{judge['grounded_evidence']} at the evidence level, {page} at the page level; "
        lines += ["", f"Of the {judge['kept']} kept records in the stores: {judge['grounding_required']} judged "
                  f"correct and grounded ({levels}for {judge['grounding_unchecked']} of them the task names no "
                  f"supporting page, so grounding was not checked), {judge['grounding_not_required']} judged on "
                  "correctness with grounding not required, "
                  f"{judge['grounding_not_applicable']} from methods that read no pages."]
    return lines


def dataset_card(summary: ExportSummary, rows: Sequence[dict[str, Any]], *, fmt: str, data_files: str,
                 settings: dict[str, Any] | None = None, unmasked: int = 0) -> str:
    """The card text (YAML front matter + Markdown body) of an export.

    ``fmt``: ``actune`` (the ``datasets`` folder, in ``summary.wire``) or ``openai``/``sharegpt``/``alpaca``;
    ``data_files``: the path or glob of the data, relative to the card, that the Hub loads; ``rows``: the
    exported rows (:func:`~actune.bootstrap.export.export_rows`), for the environments and tasks;
    the judge counts are ``summary.judge`` (read with the examples); ``settings``: the export's filter settings
    (``ExportConfig`` fields); ``unmasked``: turns the format trains although actune would
    not (from :func:`~actune.bootstrap.export_formats.export_file`)."""
    front = card_yaml(f"actune {summary.steps_method} agent trajectories" + ("" if fmt == "actune" else f" ({fmt})"),
                      ["agent", summary.steps_method, "actune", "trajectories"], summary.exported, data_files)
    fmt_of = step_format(summary.steps_method)
    name, steps_text = ((fmt_of.title, fmt_of.card_steps) if fmt_of is not None and fmt_of.card_steps
                        else (summary.steps_method, f"{summary.steps_method} steps"))
    envs = Counter(str(r.get("env", "")) for r in rows)
    env_text = ", ".join(f"{e} ({n} examples)" for e, n in envs.items())
    converted = [m for m in summary.methods if m != summary.steps_method]
    loss_key = f"actune-{summary.wire}" if fmt == "actune" else fmt
    wire = (f"`{summary.wire}`: " + _WIRE_WORDS[summary.wire]
            if fmt == "actune" else f"`{fmt}` JSONL, made from actune's {summary.wire} wire")
    lines = [
        f"---\n{front}\n---",
        "",
        f"# actune {name} agent trajectories",
        "",
        f"{summary.exported} agent episodes over {summary.tasks} tasks ({_origin_text(summary)}), each kept only "
        "when actune's judge keeps it, and exported for supervised fine-tuning of a zero-shot agent: each example "
        "is the episode a fine-tuned model sees and writes in the loop (instruction, question, steps), with no "
        "few-shot exemplars.",
        "",
        "## Source",
        "",
        "Trajectory stores (in order): " + ", ".join(f"`{s}`" for s in summary.stores) + ".",
        f"Environments: {env_text or 'none'}.",
        "",
        "What happened to the kept records of each source method (`export_summary.json`): converted into the "
        "step format (`unconvertible`: could not be), near-duplicates of an earlier episode of the same task "
        "dropped, at most a fixed number of episodes per task (`capped`), method shares drawn (`shares`):",
        "",
        _counts_table(summary),
        "",
        f"Tasks covered: {summary.tasks}.",
    ]
    if settings:
        lines += ["", "Export settings: " + ", ".join(f"`{k}: {json.dumps(v)}`" for k, v in settings.items()) + "."]
    lines += ["", "## Judge", "", *_judge_lines(summary)]
    lines += [
        "",
        "## Step format",
        "",
        f"`{summary.steps_method}` ({name}): {steps_text}."
        + (f" Records collected by {', '.join(converted)} were converted into it "
           f"({_conversion_words(summary.steps_method)})." if converted else ""),
        "",
        "## Wire format and loss",
        "",
        f"Wire format: {wire}.",
        "",
        _LOSS[loss_key].replace("{unmasked}", str(unmasked)),
    ]
    if fmt == "actune":
        lines += ["", f"Metadata columns: {_COLUMNS}."]
    lines += ["", "## Load it", "", _load_section(fmt, data_files), "", *provenance_markdown(provenance())]
    return "\n".join(lines)
