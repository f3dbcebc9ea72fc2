"""LoRA adapters: check a folder before handing it to vLLM, and load/unload adapters at run time.

Run-time loading needs the server started with LoRA enabled (``enable_lora`` or ``adapters`` in
ServeConfig), which also sets ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``. The path is read by the server
process, so it must exist on the server's machine.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx

from actune.config import mask_url_credentials
from actune.serve.errors import AdapterError, ServeError


def validate_adapter_dir(path: str | Path, max_rank: int | None = None) -> Path:
    """Return the absolute adapter folder, or raise AdapterError saying what is wrong with it."""
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise AdapterError(f"LoRA adapter folder {folder} does not exist")
    config_file = folder / "adapter_config.json"
    if not config_file.is_file():
        raise AdapterError(
            f"{folder} is not a LoRA adapter folder: it has no adapter_config.json "
            "(expected a PEFT save_pretrained() output)"
        )
    try:
        config = json.loads(config_file.read_text())
    except json.JSONDecodeError as e:
        raise AdapterError(f"{config_file}:{e.lineno}: invalid JSON: {e.msg}") from None
    rank = config.get("r")
    if max_rank is not None and isinstance(rank, int) and rank > max_rank:
        raise AdapterError(
            f"{config_file}: adapter rank r={rank} exceeds the server's max_lora_rank={max_rank}; "
            f"start the server with max_lora_rank={rank} or more"
        )
    if not any((folder / name).is_file() for name in ("adapter_model.safetensors", "adapter_model.bin")):
        raise AdapterError(f"{folder} has adapter_config.json but no adapter_model.safetensors/.bin weights")
    return folder


def load_adapter(
    base_url: str, name: str, path: str | Path, api_key: str | None = None, timeout_s: float = 120.0
) -> None:
    """Load (or reload) adapter ``name`` from ``path`` into the running server at ``base_url`` (…/v1)."""
    folder = validate_adapter_dir(path)
    _post(base_url, "load_lora_adapter", {"lora_name": name, "lora_path": str(folder)}, api_key, timeout_s,
          f"load LoRA adapter {name!r} from {folder}")


def unload_adapter(base_url: str, name: str, api_key: str | None = None, timeout_s: float = 60.0) -> None:
    """Unload adapter ``name`` from the running server."""
    _post(base_url, "unload_lora_adapter", {"lora_name": name}, api_key, timeout_s, f"unload LoRA adapter {name!r}")


def served_models(base_url: str, api_key: str | None = None, timeout_s: float = 30.0) -> list[str]:
    """Names the server answers to: the base model's served name and every loaded adapter."""
    resp = httpx.get(f"{base_url.rstrip('/')}/models", headers=_headers(api_key), timeout=timeout_s)
    resp.raise_for_status()
    return [m["id"] for m in resp.json().get("data", [])]


def check_serves(endpoints: list[str], model: str, key: str, api_key: str | None = None) -> None:
    """Before a stage sends its first request to servers it did not start: each endpoint that lists its models
    (``GET /models``: vLLM, OpenAI and most hosted APIs) must list ``model``, else a :class:`ServeError` naming the
    endpoint, what it serves and the key that names the model (``key``), instead of a 404 per episode. An
    endpoint that lists nothing (no such route, not reachable yet) is left to the stage's own retries."""
    for url in endpoints:
        try:
            names = served_models(url, api_key, timeout_s=10.0)
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            continue
        if names and model not in names:
            shown = ", ".join(repr(n) for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            raise ServeError(f"{mask_url_credentials(url)} serves {shown}, not {model!r}: set {key} to the name the "
                             "server answers to (vLLM's --served-model-name)")


def _post(base_url: str, route: str, body: dict, api_key: str | None, timeout_s: float, what: str) -> None:
    url = f"{base_url.rstrip('/')}/{route}"
    shown = mask_url_credentials(url)  # what errors name: never a password written into the URL
    try:
        resp = httpx.post(url, json=body, headers=_headers(api_key), timeout=timeout_s)
    except httpx.HTTPError as e:
        raise AdapterError(f"could not {what}: {shown} unreachable ({mask_url_credentials(str(e))})") from None
    if resp.status_code == 404 and "not found" in resp.text.lower() and "lora" not in resp.text.lower():
        raise AdapterError(f"could not {what}: {shown} does not exist; was the server started with LoRA enabled "
                           "and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True?")
    if resp.status_code >= 400:
        raise AdapterError(f"could not {what}: server answered {resp.status_code}: {_error_message(resp)}")


def _error_message(resp: httpx.Response) -> str:
    try:
        return str(resp.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return resp.text[:500]


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def adapter_name(label: str, folder: str | Path) -> str:
    """``<label>-<first 10 hex of sha256(weights)>``: the adapter's name on the server and in requests. The
    hash makes a retrained adapter a new name, so a server never answers with a stale copy it loaded before."""
    folder = Path(folder)
    weights = next((folder / n for n in ("adapter_model.safetensors", "adapter_model.bin")
                    if (folder / n).is_file()), None)
    if weights is None:
        raise AdapterError(f"{folder}: not a LoRA adapter folder (no adapter_model.safetensors or .bin)")
    h = hashlib.sha256()
    with weights.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return f"{label}-{h.hexdigest()[:10]}"
