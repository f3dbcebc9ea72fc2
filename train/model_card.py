"""The model card (``README.md``, Hugging Face model-card YAML + body) of an adapter folder and of its ``merged/``.

    write_model_card(Path("runs/adapter"))                     # base model + LoRA: library_name peft
    write_model_card(Path("runs/adapter/merged"), merged=True)  # one plain model: library_name transformers

Built only from what the folder holds (``training_meta.json``, ``actune_prompt.json``) and the dataset's
``export_summary.json`` when it is still where training read it, so a card can be rewritten for any adapter
folder (``actune card PATH``: :func:`write_folder_card`). An adapter folder without ``training_meta.json`` gets
a shorter card from ``adapter_config.json`` (base model, LoRA settings) and, when there is one, the Trainer's
``trainer_state.json`` (losses, dev losses); what neither records is said to be unrecorded. The card replaces
the template card PEFT's ``save_pretrained`` writes (whose ``base_model`` is the local folder the base was
loaded from). The YAML names the base model by its Hub id (``smollm2-135m`` is
``HuggingFaceTB/SmolLM2-135M-Instruct``; a local base folder is named in the body only), the library and tags;
the body gives the method and step format, the training data, the LoRA and trainer settings, the dev
losses, the eval table when an eval report is given (:mod:`actune.train.card_eval`), the prompt spec and how
to serve the model with vLLM and with ``actune serve``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCardData

from actune.agent.method_registry import step_format
from actune.agent.prompt_spec import PROMPT_SPEC_FILE, PromptSpec, load_prompt_spec
from actune.records.atomic_write import atomic_write_text
from actune.records.jsonl import json_object, read_json
from actune.runtime.model_files import KNOWN_MODELS, MANIFEST
from actune.runtime.provenance import provenance_markdown
from actune.train.card_eval import ReportError, eval_section, model_index
from actune.train.common import TRAINING_META_FILE

__all__ = ["CARD_FILE", "CardError", "hub_base_model", "model_card", "write_folder_card", "write_model_card"]

CARD_FILE = "README.md"
_EXPORT_SUMMARY = "export_summary.json"  # bootstrap's file name (a stage does not import another)
_ADAPTER_CONFIG = "adapter_config.json"
_TRAINER_STATE = "trainer_state.json"
_PEFT_TEMPLATE = "# Model Card for Model ID"
"""The heading of the template card PEFT's ``save_pretrained`` writes."""


class CardError(ValueError):
    """A card cannot be written for this folder (no prompt spec, a card of someone else's in the way...)."""

def _method_words(method: str) -> tuple[str, str | None, str]:
    """(title, reasoning label, the episode's shape) of a step format, as the card names them."""
    f = step_format(method)
    if f is None or not f.card_ending:
        return method, "Thought", "Action i: ..."
    return f.title, f.label, f.card_ending


def _known_name(name: str) -> str | None:
    """The embedded model a ``train.base_model`` setting is: its name, or the folder actune built it in (whose
    ``actune_model.json`` names it); None otherwise."""
    if name in KNOWN_MODELS:
        return name
    try:
        built = json.loads((Path(name) / MANIFEST).read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return built if built in KNOWN_MODELS else None


def hub_base_model(name: str) -> str | None:
    """The Hub id of a ``train.base_model`` setting: an embedded model's source model (by name or by the folder
    actune built it in), a Hub id as is, None for any other local folder."""
    if (known := _known_name(name)) is not None:
        return KNOWN_MODELS[known].hf_name
    parts = name.split("/")
    if len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~")) and not Path(name).exists():
        return name
    return None


def _export_summary(meta: dict[str, Any]) -> dict[str, Any] | None:
    path = Path(str(meta.get("config", {}).get("dataset", ""))) / _EXPORT_SUMMARY
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _trainer_state(folder: Path) -> dict[str, Any] | None:
    """The Trainer's ``trainer_state.json``: the folder's own, else its last ``checkpoint-N/``'s."""
    steps = {p: p.parent.name.removeprefix("checkpoint-") for p in folder.glob(f"checkpoint-*/{_TRAINER_STATE}")}
    checkpoints = sorted((p for p, n in steps.items() if n.isdigit()), key=lambda p: int(steps[p]), reverse=True)
    for path in [folder / _TRAINER_STATE, *checkpoints]:
        if (state := json_object(path)) is not None:
            return state
    return None


def _meta_from_adapter_files(folder: Path) -> dict[str, Any]:
    """What an adapter folder without ``training_meta.json`` says of its training, in ``training_meta.json``'s
    keys: the base model and LoRA settings of ``adapter_config.json``, the losses of ``trainer_state.json``."""
    adapter = json_object(folder / _ADAPTER_CONFIG)
    if adapter is None:
        raise CardError(f"{folder}: neither {TRAINING_META_FILE} nor a readable {_ADAPTER_CONFIG}: nothing to write "
                        "a card from")
    meta: dict[str, Any] = {"config": {
        "base_model": adapter.get("base_model_name_or_path") or "an unrecorded base model",
        "lora": {"r": adapter.get("r"), "alpha": adapter.get("lora_alpha"), "dropout": adapter.get("lora_dropout"),
                 "target_modules": adapter.get("target_modules")}}}
    state = _trainer_state(folder)
    if state is not None:
        history = [h for h in state.get("log_history") or [] if isinstance(h, dict)]
        losses = [h for h in history if "loss" in h]
        meta["eval_losses"] = [{"step": int(h["step"]), "epoch": float(h.get("epoch") or 0),
                                "loss": float(h["eval_loss"])} for h in history if "eval_loss" in h and "step" in h]
        if losses:
            steps = state.get("global_step") or losses[-1].get("step") or 0
            meta.update(final_loss=float(losses[-1]["loss"]), steps=int(steps))
        if state.get("best_global_step") is not None and state.get("best_metric") is not None:
            meta.update(best_step=int(state["best_global_step"]), best_eval_loss=float(state["best_metric"]))
    return meta


def _data_section(meta: dict[str, Any], summary: dict[str, Any] | None) -> list[str]:
    if "examples" not in meta:
        return [f"Not recorded: the folder has no {TRAINING_META_FILE} (which `actune train` writes), so the "
                "examples, tokens and dataset it was trained on are unknown here."]
    lines = [f"- {meta['examples']} examples over {meta['task_ids']} tasks: {meta['train_examples']} trained on, "
             f"{meta['dev_examples']} in the dev slice (held out by task: {len(meta.get('dev_task_ids') or [])} "
             f"tasks), {meta.get('dropped_examples', 0)} dropped (no trained token).",
             f"- {meta['tokens']} tokens, {meta['trained_tokens']} carrying loss ({meta['masked_fraction']:.1%} "
             f"masked: the prompt head and observations), {meta.get('truncated_examples', 0)} examples truncated "
             f"to {meta['config'].get('max_length')} tokens."]
    if summary:
        per = ", ".join(f"{m} {c.get('exported', 0)}" for m, c in summary.get("methods", {}).items())
        lines.append(f"- Exported by `actune export` from {', '.join(f'`{s}`' for s in summary.get('stores', []))}: "
                     f"{summary.get('exported')} kept episodes (per source method: {per}), each kept by actune's "
                     "judge: correct and, for methods that read pages, grounded (every supporting page read).")
    else:
        lines.append(f"- Dataset: `{meta['config'].get('dataset')}` (an `actune export` of judged trajectories: "
                     "correct and grounded episodes only).")
    return lines


_TRAINED_BY = {
    "sft": "TRL's `SFTTrainer` on agent trajectories that actune bootstrapped and judged",
    "dpo": "TRL's `DPOTrainer` on pairs of one task's kept and failed episodes that actune bootstrapped and judged",
    "grpo": "TRL's `GRPOTrainer` on episodes the model itself played in actune's agent loop, rewarded by its judge",
}
"""How each objective's card says what the model was trained with (``training_meta.json``'s ``objective``)."""


def _objective_data(meta: dict[str, Any]) -> list[str]:
    """The training-data lines of a DPO or GRPO adapter, from its meta file."""
    start = f"- Started from `{meta['config']['base_model']}` (its weights, LoRA trained on top)."
    if meta["objective"] == "dpo":
        return [f"- {meta['pairs']} preference pairs (a kept and a failed episode of one task, the prompt shared): "
                f"{meta['train_pairs']} trained on, {meta['dev_pairs']} in the dev slice; beta {meta['beta']}, loss "
                f"{', '.join(meta['loss_type'])}.", f"- Pairs: `{meta['config'].get('dataset')}` (`actune export` "
                "with `train.objective=dpo`).", start]
    last = meta["rewards"][-1][1] if meta.get("rewards") else None
    return [f"- {meta['tasks']} training tasks, {meta['tasks_per_step']} a step x {meta['num_generations']} episodes "
            f"at temperature {meta['temperature']}, played by the model being trained; reward "
            f"{meta['reward']} (the judge's verdict); beta {meta['beta']}; last step's mean reward "
            + (f"{last:.3f}." if last is not None else "not recorded."),
            f"- The episodes: `{meta['rollouts']}` (a trajectory store per step).", start]


def _loss_section(meta: dict[str, Any]) -> list[str]:
    if "final_loss" not in meta:
        return [f"Losses: not recorded (no {TRAINING_META_FILE} or {_TRAINER_STATE} in the folder)."]
    lines = [f"Final training loss {meta['final_loss']:.4f} after {meta['steps']} steps."]
    evals = meta.get("eval_losses") or []
    if evals:
        lines += ["", "| step | epoch | dev loss |", "|---|---|---|"]
        lines += [f"| {e['step']} | {e['epoch']:.2f} | {e['loss']:.4f} |" for e in evals]
    if meta.get("best_step") is not None:
        lines += ["", f"The saved weights are those of step {meta['best_step']}, the lowest dev loss "
                      f"({meta['best_eval_loss']:.4f})."]
    return lines


def _training_meta(folder: Path) -> dict[str, Any] | None:
    """The folder's ``training_meta.json``; None when it has none. One that is not the file ``actune train`` writes
    (bad JSON, no ``config.base_model``) is a :class:`CardError` naming it: a card built from half of it would
    tell a reader something the training never did."""
    path = folder / TRAINING_META_FILE
    if not path.is_file():
        return None
    meta = read_json(path, CardError, "training meta")
    config = meta.get("config") if isinstance(meta, dict) else None
    if not isinstance(config, dict) or not isinstance(config.get("base_model"), str):
        raise CardError(f"{path}: not the training_meta.json actune train writes (config.base_model missing or not a "
                        "string); rerun the training or delete the file for a card from adapter_config.json")
    return meta


def model_card(folder: Path, *, merged: bool = False, report: str | Path | None = None) -> str:
    """The card text of an adapter folder (``merged=False``) or of a merged model folder. A folder without
    ``training_meta.json``: an adapter's card from its ``adapter_config.json`` (module docstring), a
    :class:`CardError` for a merged one. ``report``: an eval ``report.json`` whose rows of this model go in an
    Evaluation section (:mod:`actune.train.card_eval`; a :class:`~actune.train.card_eval.ReportError` when it
    has none)."""
    meta = _training_meta(folder)
    if meta is None and merged:
        raise CardError(f"{folder}: no {TRAINING_META_FILE}: the merged model's card is written from it "
                        "(`actune train` writes it in merged/ as in the adapter folder)")
    try:
        return _card_text(folder, _meta_from_adapter_files(folder) if meta is None else meta, merged, report)
    except (CardError, ReportError):  # named already
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # a field missing or of another type
        if meta is None:
            raise CardError(f"{folder}: its {_ADAPTER_CONFIG} or {_TRAINER_STATE} is not as PEFT and the Trainer "
                            f"write them ({type(e).__name__}: {e})") from None
        raise CardError(f"{folder / TRAINING_META_FILE}: not the training_meta.json actune train writes "
                        f"({type(e).__name__}: {e}); rerun the training or delete the file") from None


def _card_text(folder: Path, meta: dict[str, Any], merged: bool, report: str | Path | None) -> str:
    spec = load_prompt_spec(folder)
    cfg = meta["config"]
    base_name = _known_name(str(cfg["base_model"])) or str(cfg["base_model"])
    base_id = hub_base_model(base_name)
    name = _method_words(spec.method)[0]
    objective = str(meta.get("objective") or "sft")
    front = _front_matter(spec.method, base_id, base_name, merged=merged, report=report, folder=folder,
                          objective=objective)
    repo = "org/name"
    lines = [
        "---", front.to_yaml(), "---", "",
        f"# {name} agent, fine-tuned with actune", "",
        f"This is {_what_it_is(base_id, base_name, merged)}, fine-tuned with {_TRAINED_BY[objective]}, to act "
        f"zero-shot (no exemplars) in the {name} format.",
        "",
        "## Method and step format", "", _method_paragraph(spec.method, cfg.get("mask_observations")), "",
        "## Training data", "", *(_data_section(meta, _export_summary(meta)) if objective == "sft"
                                  else _objective_data(meta)), "",
        "## Training", "", _training_paragraph(meta, merged), "",
        *_loss_section(meta), "",
        *([*eval_section(report, folder), ""] if report is not None else []),
        "## Prompt", "", _prompt_paragraph(spec), "",
        "```json", spec.model_dump_json(indent=2), "```", "",
        "## Serve it", "",
        f"Replace `{repo}` with this repo's id.", "",
        *_serve_lines(repo, base_id, base_name, int(cfg.get("lora", {}).get("r") or 16), merged), "",
        *(provenance_markdown(meta["provenance"]) if meta.get("provenance") else
          ["## Provenance", "", "Not recorded: trained before actune wrote it into training_meta.json.", ""]),
    ]
    return "\n".join(lines)


def _front_matter(method: str, base_id: str | None, base_name: str, *, merged: bool, report: str | Path | None,
                  folder: Path, objective: str = "sft") -> ModelCardData:
    """The card's YAML: base model (its Hub id), library, tags, and the eval rows as a model-index."""
    index = report is not None and model_index(report, folder, f"actune-{method}-{base_name}"
                                               + ("-merged" if merged else ""))
    # the eval rows go as model-index itself: ModelCardData's eval_results form holds one metric per result
    return ModelCardData(base_model=base_id or None, library_name="transformers" if merged else "peft",
                         pipeline_tag="text-generation", language=["en"],
                         tags=["actune", "agent", method, "lora", objective, "trl"] + (["merged"] if merged else []),
                         **({"model-index": index} if index else {}))


def _what_it_is(base_id: str | None, base_name: str, merged: bool) -> str:
    what = ("the base model with an actune LoRA adapter merged into its weights (one plain model folder)"
            if merged else "an actune LoRA adapter")
    base_text = f"`{base_id}`" if base_id else f"a local model folder (`{base_name}`)"
    if base_name in KNOWN_MODELS:
        base_text += (f" (actune's `{base_name}`: {KNOWN_MODELS[base_name].description}; the adapter was trained "
                      f"on those weights, which `actune serve --model {base_name}` serves)")
    return f"{what}: base model {base_text}"


def _method_paragraph(method: str, mask_observations: bool | None) -> str:
    _, label, ending = _method_words(method)
    if method in ("cot", "standard"):
        shape = f"`{method}`: one answer, no tool (`{ending}`). "
    else:
        step = f"`{label} i: ...` then an action" if label else "an action"
        shape = f"`{method}`: each step is {step}, answered by `Observation i: ...` (`{ending}`). "
    written = ", ".join(w for w in ((label or "").lower() + "s", "actions", "answers") if w != "s")
    return (shape
            + {True: f"Loss is on what the model writes ({written}), never on the prompt or "
                     "observations (`mask_observations: true`).",
               False: "Loss is on every token, prompt and observations included (`mask_observations: false`).",
               None: "Which tokens carried loss is not recorded."}[mask_observations])


def _training_paragraph(meta: dict[str, Any], merged: bool) -> str:
    cfg = meta["config"]
    lora = cfg.get("lora", {})
    return (f"LoRA r={lora.get('r')}, alpha={lora.get('alpha')}, dropout={lora.get('dropout')}, target modules "
            f"{lora.get('target_modules')}; "
            + (f"learning rate {cfg.get('learning_rate')}, "
               f"{cfg.get('per_device_train_batch_size')} sequences x {cfg.get('gradient_accumulation_steps')} "
               f"accumulation x {meta.get('processes', 1)} processes, {cfg.get('num_train_epochs')} epochs "
               f"(max_steps {cfg.get('max_steps')}), {meta['dtype']}, seed {cfg.get('seed')}."
               if "dtype" in meta else f"the trainer settings are not recorded (no {TRAINING_META_FILE}).")
            + (f" Merged in {meta['merged']['dtype']}." if merged and meta.get("merged") else ""))


def _prompt_paragraph(spec: PromptSpec) -> str:
    return (f"`actune_prompt.json` says how the model must be prompted: method `{spec.method}`, regime "
            f"`{spec.regime}`, wire `{spec.wire}` ("
            + ("the paper's plain-text episode: instruction, `Question: ...`, then the steps, completed as text"
               if spec.wire == "text"
               else "chat turns: system instruction, user question, observations as user turns")
            + "). `actune eval` and `actune run --adapter` read it.")


def _serve_lines(repo: str, base_id: str | None, base_name: str, lora_r: int, merged: bool) -> list[str]:
    """How to serve the model with vLLM and with ``actune serve``: a bash block."""
    serve = ["```bash"]
    if merged:
        serve += [f"vllm serve {repo}", f"actune serve --model {repo}            # the same, from actune"]
    else:
        serve += [f"vllm serve {base_id or base_name} --enable-lora --max-lora-rank {max(16, lora_r)} "
                  f"\\\n    --lora-modules tuned={repo}",
                  f"hf download {repo} --local-dir adapter",
                  f"actune serve --model {base_name} --adapter tuned=adapter",
                  "actune run --adapter adapter --env wiki --corpus CORPUS --question \"...\"  # the agent loop"]
    serve.append("```")
    return serve


def write_model_card(folder: Path, *, merged: bool = False, report: str | Path | None = None) -> Path:
    """Write :func:`model_card` to ``folder/README.md`` (atomically) and return its path."""
    path = folder / CARD_FILE
    atomic_write_text(path, model_card(folder, merged=merged, report=report))
    return path


def _card_owner(card: Path) -> str | None:
    """Whose card ``card`` is: ``actune`` (its tags say so), ``peft`` (the template PEFT writes), None (someone
    else's, hand-written say)."""
    from huggingface_hub import metadata_load

    text = card.read_text(encoding="utf-8", errors="replace")
    try:
        tags = (metadata_load(card) or {}).get("tags") or []
    except Exception:  # YAML that does not parse: not actune's, not PEFT's
        tags = []
    if "actune" in tags:
        return "actune"
    return "peft" if _PEFT_TEMPLATE in text else None


def write_folder_card(folder: str | Path, *, force: bool = False,
                      report: str | Path | None = None) -> tuple[Path, str]:
    """Write the card of an adapter folder (``adapter_config.json``) or a merged model folder (``config.json``)
    from its own files and, given ``report``, the eval table of an eval ``report.json`` (``actune card PATH
    [--report FILE]``); return (its path, what it replaced: ``nothing``, ``actune's card``, ``PEFT's template
    card`` or ``a card of its own``). A card that is neither actune's nor PEFT's template is replaced only with
    ``force``."""
    path = Path(folder)
    merged = not (path / _ADAPTER_CONFIG).is_file()
    if merged and not (path / "config.json").is_file():
        raise CardError(f"{path}: neither an adapter folder ({_ADAPTER_CONFIG}) nor a model folder (config.json)")
    if not (path / PROMPT_SPEC_FILE).is_file():
        raise CardError(f"{path}: no {PROMPT_SPEC_FILE}, so the card cannot say how the model is prompted (the "
                        "method, regime and wire format it was trained in); `actune train` writes it, or write one "
                        "with actune.agent.prompt_spec.save_prompt_spec")
    card = path / CARD_FILE
    replaced = "nothing"
    if card.is_file():
        owner = _card_owner(card)
        if owner is None and not force:
            raise CardError(f"{card}: a card that is neither actune's nor PEFT's template is there; --force "
                            "replaces it")
        replaced = {"actune": "actune's card", "peft": "PEFT's template card", None: "a card of its own"}[owner]
    return write_model_card(path, merged=merged, report=report), replaced
