import json
import shutil

import pytest

from actune.runtime.model_files import KNOWN_MODELS, MANIFEST, ModelError, prepare_model


def test_local_folder_is_returned_as_is(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert prepare_model(str(tmp_path)) == tmp_path.resolve()


def test_folder_without_config_is_an_error(tmp_path):
    with pytest.raises(ModelError, match="no config.json"):
        prepare_model(str(tmp_path))


def test_unknown_name_lists_known_names():
    with pytest.raises(ModelError) as e:
        prepare_model("no-such-model")
    for name in KNOWN_MODELS:
        assert name in str(e.value)


def test_embedded_model_is_ready_and_idempotent(embedded_model):
    manifest = json.loads((embedded_model / MANIFEST).read_text())
    assert manifest["source"] == KNOWN_MODELS["smollm2-135m"].requirement
    # The build checked one real generation; "Paris" is what the model answers greedily.
    assert manifest["check_generation"]
    config = json.loads((embedded_model / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (embedded_model / "model.safetensors").stat().st_size > 200_000_000
    before = (embedded_model / "model.safetensors").stat().st_mtime_ns
    assert prepare_model("smollm2-135m") == embedded_model
    assert (embedded_model / "model.safetensors").stat().st_mtime_ns == before
    # no build leftovers beside the model
    assert not [p for p in embedded_model.parent.iterdir() if p.name.startswith(".smollm2-135m-build-")]


def test_hub_id_goes_through_snapshot_download(embedded_model, tmp_path, monkeypatch):
    # The Hub cannot be reached here: lay out a real huggingface_hub cache for the id and let the same
    # code path resolve it offline.
    repo = tmp_path / "hub" / "models--acme--tiny"
    snap = repo / "snapshots" / "0123456789abcdef"
    snap.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(embedded_model / name, snap / name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123456789abcdef")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import importlib

    import huggingface_hub.constants as c

    importlib.reload(c)
    try:
        got = prepare_model("acme/tiny")
    finally:
        monkeypatch.undo()
        importlib.reload(c)
    assert got == snap
    assert json.loads((got / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
