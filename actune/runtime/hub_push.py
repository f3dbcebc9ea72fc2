"""Upload what actune wrote to the Hugging Face Hub: an adapter folder, a merged model folder, an export, DPO pairs.

    result = push("runs/adapter", "org/name", private=True)        # ``actune push runs/adapter --repo org/name``

What is pushed is told from the files (:func:`detect_kind`): an export folder or file or a DPO pairs folder goes to
a dataset repo, an adapter or model folder to a model repo, whose uploaded config names the card's Hub
``base_model`` instead of the local folder it was loaded from, so the repo loads from the Hub. Each must carry its
card (``README.md`` with YAML metadata; ``actune card PATH`` writes one), else it is refused. The repo is created if
missing and the files go up in one commit. The token is ``huggingface_hub``'s own (``HF_TOKEN`` or the stored
login), never an argument, and is masked in every error; ``api_factory`` lets tests run the same code against a
fake.

The rules in full: docs/modules.md, actune.runtime.hub_push.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from actune.config import is_secret_name

__all__ = ["CARD_FILE", "PushError", "PushResult", "detect_kind", "file_card_path", "make_api", "push"]

CARD_FILE = "README.md"
EXPORT_MARKER = "export_summary.json"
PAIRS_MARKER = "pairs_summary.json"
"""What a DPO pairs export holds (``actune.bootstrap.preference_pairs``, a stage this core module may not import)."""
ADAPTER_MARKER = "adapter_config.json"
MODEL_MARKER = "config.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin")
ADAPTER_IGNORE = ["merged/**"]
"""Left out of an adapter push: the merged model is its own repo."""
HUB_NAME_KEYS: dict[str, tuple[str, str]] = {"adapter": (ADAPTER_MARKER, "base_model_name_or_path"),
                                              "model": (MODEL_MARKER, "_name_or_path")}
"""Per kind, the file and key that name the model it was made from: uploaded naming the card's Hub id."""

Kind = Literal["export", "export_file", "pairs", "adapter", "model"]
REPO_TYPE: dict[str, str] = {"export": "dataset", "export_file": "dataset", "pairs": "dataset", "adapter": "model",
                             "model": "model"}
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


class PushError(RuntimeError):
    """The folder cannot be pushed (not actune's, no card) or the Hub refused it; never holds the token."""


@dataclass
class PushResult:
    """What :func:`push` sent, and where."""

    kind: str
    """``export``, ``export_file``, ``pairs`` (DPO pairs), ``adapter`` or ``model`` (:func:`detect_kind`)."""
    repo_type: str
    repo_id: str
    revision: str
    files: list[str] = field(default_factory=list)
    """The paths uploaded, relative to the repo root, sorted."""
    commit_url: str = ""
    hub_base_model: str | None = None
    """The Hub id the uploaded ``hub_config_file`` names (:data:`HUB_NAME_KEYS`) in place of the local folder's
    value (None: uploaded as it is)."""
    hub_config_file: str | None = None
    """``adapter_config.json`` or ``config.json``: the file uploaded with ``hub_base_model`` in it (None: none)."""


def file_card_path(path: str | Path) -> Path:
    """The card of an export file: ``runs/dataset.openai.jsonl`` -> ``runs/dataset.openai.README.md``."""
    p = Path(path)
    return p.with_name(f"{p.stem}.{CARD_FILE}")


def detect_kind(path: str | Path) -> Kind:
    """What ``path`` holds (module docstring), or a :class:`PushError` naming it."""
    p = Path(path)
    if p.is_file():
        if p.suffix == ".jsonl":
            return "export_file"
        raise PushError(f"{p}: a file, but not an export (actune export --format ... writes a .jsonl file)")
    if not p.is_dir():
        raise PushError(f"{p}: no such folder")
    if (p / EXPORT_MARKER).is_file():
        return "export"
    if (p / PAIRS_MARKER).is_file():
        return "pairs"
    if (p / ADAPTER_MARKER).is_file():
        return "adapter"
    if (p / MODEL_MARKER).is_file() and any(f.suffix in WEIGHT_SUFFIXES for f in p.iterdir()):
        return "model"
    raise PushError(f"{p}: neither an export ({EXPORT_MARKER}), an adapter ({ADAPTER_MARKER}), a model folder "
                    f"({MODEL_MARKER} and weights) nor DPO pairs ({PAIRS_MARKER}): nothing actune knows how to push")


def _check_card(card: Path, kind: str, what: Path) -> dict[str, Any]:
    """The card's YAML metadata, or a :class:`PushError` saying why ``what`` cannot be pushed with it."""
    from huggingface_hub import metadata_load

    redo = ("re-export it with `actune export`" if kind.startswith("export") else
            "export the pairs again (`actune export ... train.objective=dpo`, or the quickstart's pairs stage)"
            if kind == "pairs" else
            f"write actune's card with `actune card {what}` (from the folder's own files)")
    if not card.is_file():
        raise PushError(f"{what}: no card ({card} is missing); {redo}")
    meta = metadata_load(card)
    if not meta:
        raise PushError(f"{card}: the card has no YAML metadata; {redo}")
    base = meta.get("base_model")
    if kind in ("adapter", "model") and isinstance(base, str) and base.startswith(("/", ".", "~")):
        raise PushError(f"{card}: the card names a local folder as base_model ({base}): not actune's card; {redo}")
    return meta


def _hub_config(folder: Path, kind: str, base_model: Any) -> tuple[str, str] | None:
    """(file name, text) of the file of :data:`HUB_NAME_KEYS` of a ``kind`` folder with its key set to
    ``base_model`` (the card's Hub id); None when there is no Hub id, the kind has no such file, or the file names
    it already. A model folder's ``config.json`` without the key (transformers 5 does not save it) is left as it
    is: the key is not added."""
    if kind not in HUB_NAME_KEYS or not isinstance(base_model, str) or not base_model:
        return None
    name, key = HUB_NAME_KEYS[kind]
    path = folder / name
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise PushError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(config, dict) or config.get(key) == base_model or (kind == "model" and key not in config):
        return None
    return name, json.dumps({**config, key: base_model}, indent=2, sort_keys=True) + "\n"


def _mirror(folder: Path, files: list[str], staging: Path) -> Path:
    """``staging`` holding ``files`` of ``folder`` as links to them (copies where links cannot be made): a folder
    to upload in which one file can be replaced without touching ``folder``."""
    for rel in files:
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.symlink_to((folder / rel).resolve())
        except OSError:
            shutil.copyfile(folder / rel, target)
    return staging


def _files(folder: Path, ignore: list[str]) -> list[str]:
    skip = tuple(p.removesuffix("**") for p in ignore)
    return sorted(rel for f in folder.rglob("*") if f.is_file()
                  and not (rel := f.relative_to(folder).as_posix()).startswith(skip))


def _secrets() -> list[str]:
    found = [os.environ.get("HF_TOKEN") or ""]
    try:
        from huggingface_hub import get_token

        found.append(get_token() or "")
    except Exception:  # no stored login readable: nothing to mask from it
        pass
    return [s for s in found if len(s) >= 4]


_SECRET_ENV = re.compile(r"(?:^|_)(?:API_KEY|TOKEN|SECRET|PASSWORD)$")


def _secret_values() -> dict[str, str]:
    """name -> value of every secret this process can see: the Hub token and each environment variable named
    like one (``OPENAI_API_KEY``, ``VLLM_API_KEY``, ``WANDB_TOKEN``...), long enough to mean something."""
    by_value = {value: name for name, value in sorted(os.environ.items())
                if _SECRET_ENV.search(name) and len(value) >= 8}
    for value in _secrets():
        by_value.setdefault(value, "the Hugging Face token")
    return {name: value for value, name in by_value.items()}


def _json_secret_keys(node: Any, where: str = "") -> list[str]:
    if isinstance(node, dict):
        return [f"{where}{k}" for k, v in node.items() if is_secret_name(str(k)) and isinstance(v, str)
                and v not in ("", "***")] + \
            [hit for k, v in node.items() for hit in _json_secret_keys(v, f"{where}{k}.")]
    return [hit for i, v in enumerate(node) for hit in _json_secret_keys(v, f"{where}{i}.")] \
        if isinstance(node, list) else []


def secrets_in(folder: Path, files: list[str]) -> list[str]:
    """``file: what`` for every file of ``folder`` that holds a secret: a value of :func:`_secret_values`, or a
    JSON key named as a secret (``api_key``, ``hub_token``) with a value that is not masked. Weights are not
    read (a token cannot hide in a tensor by accident)."""
    values = _secret_values()
    found = []
    for rel in files:
        path = folder / rel
        if path.suffix in WEIGHT_SUFFIXES or path.suffix in (".pt", ".pth"):
            continue
        data = path.read_bytes()
        found += [f"{rel}: the value of {name}" for name, value in values.items() if value.encode() in data]
        if path.suffix == ".json":
            try:
                found += [f"{rel}: key {key}" for key in _json_secret_keys(json.loads(data))]
            except ValueError:
                pass  # not JSON after all: its bytes were checked above
    return found


def _mask(text: str) -> str:
    for secret in _secrets():
        text = text.replace(secret, "***")
    return text


def make_api() -> Any:
    """A ``huggingface_hub.HfApi`` using the token of ``HF_TOKEN`` or the stored login; a :class:`PushError`
    when there is neither."""
    from huggingface_hub import HfApi, get_token

    if not get_token():
        raise PushError("no Hugging Face token: set HF_TOKEN or log in with `hf auth login`")
    return HfApi()  # reads the same token itself: it is never passed around


def push(path: str | Path, repo_id: str, *, private: bool = False, revision: str = "main",
         api_factory: Callable[[], Any] = make_api) -> PushResult:
    """Upload ``path`` (an export folder or file, an adapter or model folder) to ``repo_id`` (module docstring)."""
    p = Path(path)
    if not _REPO_ID.fullmatch(repo_id):
        raise PushError(f"--repo {repo_id!r}: expected org/name")
    kind = detect_kind(p)
    card = file_card_path(p) if kind == "export_file" else p / CARD_FILE
    meta = _check_card(card, kind, p)
    repo_type = REPO_TYPE[kind]
    ignore = ADAPTER_IGNORE if kind == "adapter" else []
    hub_config = _hub_config(p, kind, meta.get("base_model"))
    with tempfile.TemporaryDirectory(prefix="actune-push-") as staging:
        folder = p
        if kind == "export_file":  # the repo holds the data file and its card as README.md
            folder = Path(staging)
            shutil.copyfile(p, folder / p.name)
            shutil.copyfile(card, folder / CARD_FILE)
        elif hub_config is not None:  # the folder as it is, but its config naming the base by Hub id
            config_file, text = hub_config
            folder = _mirror(p, [f for f in _files(p, ignore) if f != config_file], Path(staging))
            (folder / config_file).write_text(text, encoding="utf-8")
        files = _files(folder, ignore)
        leaked = secrets_in(folder, files)
        if leaked:
            raise PushError(f"{p}: refusing to upload a secret ({'; '.join(leaked)}); remove it from the file "
                            "(actune writes secrets as ***) and push again")
        api = api_factory()
        try:
            api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
            if revision != "main":
                api.create_branch(repo_id, repo_type=repo_type, branch=revision, exist_ok=True)
            info = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                                     revision=revision, ignore_patterns=ignore or None,
                                     commit_message=f"actune push: {kind} {p.name}")
        except Exception as e:
            raise PushError(f"pushing {p} to {repo_id} ({repo_type}) failed: {_mask(f'{type(e).__name__}: {e}')}") \
                from None
    return PushResult(kind, repo_type, repo_id, revision, files, str(getattr(info, "commit_url", "") or ""),
                      hub_base_model=meta.get("base_model") if hub_config else None,
                      hub_config_file=hub_config[0] if hub_config else None)
