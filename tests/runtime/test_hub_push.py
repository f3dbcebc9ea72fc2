"""``actune push`` (:mod:`actune.runtime.hub_push`) against a fake Hub client: the same code path as a real push, with
``FakeHfApi`` standing in for ``huggingface_hub.HfApi`` (injected through ``api_factory``). Checks the repo type
told from the folder, the files uploaded (the Hub's own ignore-pattern matcher), the card check, and that the
token never reaches the output or an error."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from actune.cli import build_parser
from actune.runtime.hub_push import PushError, detect_kind, file_card_path, make_api, push

TOKEN = "hf_SecretTokenNeverShown123"
DATASET_CARD = "---\ntask_categories:\n- text-generation\ntags:\n- actune\n---\n\n# data\n"
MODEL_CARD = "---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\nlibrary_name: peft\ntags:\n- actune\n---\n\n# m\n"


class FakeHfApi:
    """Records create_repo / create_branch / upload_folder calls; upload_folder lists the files it would send
    (filtered by ``ignore_patterns`` with huggingface_hub's own matcher, as HfApi does) and reads their bytes
    while the folder exists."""

    def __init__(self, fail_with: str | None = None) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.uploaded: list[str] = []
        self.contents: dict[str, bytes] = {}
        """What each uploaded file held, as the Hub would get it."""
        self.fail_with = fail_with

    def create_repo(self, repo_id: str, **kw) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kw}))
        if self.fail_with:
            raise RuntimeError(self.fail_with)
        return f"https://huggingface.co/{repo_id}"

    def create_branch(self, repo_id: str, **kw) -> None:
        self.calls.append(("create_branch", {"repo_id": repo_id, **kw}))

    def upload_folder(self, *, folder_path: str, repo_id: str, **kw) -> SimpleNamespace:
        from huggingface_hub.utils import filter_repo_objects

        self.calls.append(("upload_folder", {"folder_path": folder_path, "repo_id": repo_id, **kw}))
        root = Path(folder_path)
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        self.uploaded = sorted(filter_repo_objects(files, ignore_patterns=kw.get("ignore_patterns")))
        self.contents = {rel: (root / rel).read_bytes() for rel in self.uploaded}
        return SimpleNamespace(commit_url=f"https://huggingface.co/{repo_id}/commit/abc")


def factory(api: FakeHfApi):
    return lambda: api


def make_folder(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def adapter_folder(root: Path, card: str | None = MODEL_CARD) -> Path:
    files = {"adapter_config.json": "{}", "adapter_model.safetensors": "w", "training_meta.json": "{}",
             "merged/config.json": "{}", "merged/model.safetensors": "w", "merged/README.md": MODEL_CARD}
    if card is not None:
        files["README.md"] = card
    return make_folder(root, files)


def test_each_kind_of_folder_goes_to_its_repo_type(tmp_path):
    export = make_folder(tmp_path / "ds", {"export_summary.json": "{}", "data-00000-of-00001.arrow": "x",
                                           "state.json": "{}", "dataset_info.json": "{}", "README.md": DATASET_CARD})
    adapter = adapter_folder(tmp_path / "adapter")
    jsonl = make_folder(tmp_path, {"ds.openai.jsonl": "{}\n", "ds.openai.README.md": DATASET_CARD}) / "ds.openai.jsonl"
    cases = [(export, "export", "dataset", ["README.md", "data-00000-of-00001.arrow", "dataset_info.json",
                                            "export_summary.json", "state.json"]),
             (adapter, "adapter", "model", ["README.md", "adapter_config.json", "adapter_model.safetensors",
                                            "training_meta.json"]),  # merged/ is its own repo
             (adapter / "merged", "model", "model", ["README.md", "config.json", "model.safetensors"]),
             (jsonl, "export_file", "dataset", ["README.md", "ds.openai.jsonl"])]
    for path, kind, repo_type, files in cases:
        api = FakeHfApi()
        res = push(path, "org/name", private=True, api_factory=factory(api))
        assert detect_kind(path) == kind and (res.kind, res.repo_type) == (kind, repo_type)
        assert res.files == files and api.uploaded == files  # what we report is what the Hub gets
        assert [c for c, _ in api.calls] == ["create_repo", "upload_folder"]
        assert api.calls[0][1] == {"repo_id": "org/name", "repo_type": repo_type, "private": True, "exist_ok": True}
        assert api.calls[1][1]["repo_type"] == repo_type and api.calls[1][1]["revision"] == "main"
        assert res.commit_url == "https://huggingface.co/org/name/commit/abc"
    # the export file's card went up as README.md, its content unchanged
    assert file_card_path(jsonl) == tmp_path / "ds.openai.README.md"


def test_a_revision_other_than_main_is_created_as_a_branch(tmp_path):
    api = FakeHfApi()
    push(adapter_folder(tmp_path / "a"), "org/name", revision="v2", api_factory=factory(api))
    assert [c for c, _ in api.calls] == ["create_repo", "create_branch", "upload_folder"]
    assert api.calls[1][1] == {"repo_id": "org/name", "repo_type": "model", "branch": "v2", "exist_ok": True}
    assert api.calls[2][1]["revision"] == "v2"


def test_folders_that_cannot_be_pushed_are_refused_before_the_hub_is_asked(tmp_path):
    api = FakeHfApi()
    calls = factory(api)
    other = make_folder(tmp_path / "notes", {"a.txt": "x"})
    with pytest.raises(PushError, match=r"notes: neither an export \(export_summary.json\), an adapter"):
        push(other, "org/name", api_factory=calls)
    with pytest.raises(PushError, match="no such folder"):
        push(tmp_path / "missing", "org/name", api_factory=calls)
    with pytest.raises(PushError, match=r"no card \(.*README.md is missing\); write actune's card with `actune card "
                                        r".*nocard` \(from the folder's own files\)"):
        push(adapter_folder(tmp_path / "nocard", card=None), "org/name", api_factory=calls)
    with pytest.raises(PushError, match="no YAML metadata"):
        push(adapter_folder(tmp_path / "plain", card="# just text\n"), "org/name", api_factory=calls)
    peft_template = "---\nbase_model: /root/.cache/actune/models/smollm2-135m\nlibrary_name: peft\n---\n# x\n"
    with pytest.raises(PushError, match=r"names a local folder as base_model .*: not actune's card; write actune's "
                                        r"card with `actune card .*old`"):
        push(adapter_folder(tmp_path / "old", card=peft_template), "org/name", api_factory=calls)
    lone = make_folder(tmp_path, {"x.openai.jsonl": "{}\n"}) / "x.openai.jsonl"
    with pytest.raises(PushError, match=r"x.openai.README.md is missing\); re-export it"):
        push(lone, "org/name", api_factory=calls)
    with pytest.raises(PushError, match="expected org/name"):
        push(adapter_folder(tmp_path / "a"), "no slash", api_factory=calls)
    pairs = make_folder(tmp_path / "pairs", {"pairs_summary.json": "{}", "data-00000-of-00001.arrow": "x"})
    with pytest.raises(PushError, match=r"pairs: no card \(.*README.md is missing\); export the pairs again"):
        push(pairs, "org/name", api_factory=calls)  # one of an actune from before pairs had a card
    assert api.calls == []


def test_the_token_never_appears_in_output_or_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    folder = adapter_folder(tmp_path / "adapter")
    api = FakeHfApi(fail_with=f"401 Unauthorized: token {TOKEN} is invalid")
    args = build_parser().parse_args(["push", str(folder), "--repo", "org/name"])
    assert args.func(args, api_factory=factory(api)) == 1
    out, err = capsys.readouterr()
    assert "actune push: pushing" in err and "401 Unauthorized: token *** is invalid" in err
    assert TOKEN not in out + err
    ok = FakeHfApi()
    assert args.func(args, api_factory=factory(ok)) == 0
    out, err = capsys.readouterr()
    assert out == (f"pushed adapter {folder} to model repo org/name@main: 4 files "
                   "(https://huggingface.co/org/name/commit/abc)\nits adapter_config.json names the base model "
                   "HuggingFaceTB/SmolLM2-135M-Instruct (the Hub id of its card) in place of the local folder; the "
                   "folder's own copy is unchanged\n")
    assert TOKEN not in out + err
    assert all(TOKEN not in repr(kw) for _, kw in ok.calls)  # the token is never handed over: HfApi reads it


def test_the_command_has_no_token_option_and_needs_a_repo():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["push"]
    options = {o for a in sub._actions for o in a.option_strings}
    assert options == {"-h", "--help", "--repo", "--private", "--revision"}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["push", "runs/adapter"])


def test_make_api_needs_a_token_from_the_environment_or_the_login(monkeypatch):
    from huggingface_hub import HfApi, get_token

    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert isinstance(make_api(), HfApi)
    monkeypatch.delenv("HF_TOKEN")
    if get_token():
        pytest.skip("this machine has a stored Hugging Face login")
    with pytest.raises(PushError, match="no Hugging Face token: set HF_TOKEN or log in"):
        make_api()


LOCAL_BASE = "/root/.cache/actune/models/smollm2-135m"
HUB_BASE = "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_the_pushed_adapter_config_names_the_base_by_hub_id_and_the_folder_is_left_alone(tmp_path):
    config = {"base_model_name_or_path": LOCAL_BASE, "peft_type": "LORA", "r": 16, "target_modules": ["q_proj"]}
    folder = adapter_folder(tmp_path / "adapter")
    (folder / "adapter_config.json").write_text(json.dumps(config))
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    api = FakeHfApi()
    res = push(folder, "org/name", api_factory=factory(api))
    assert json.loads(api.contents["adapter_config.json"]) == {**config, "base_model_name_or_path": HUB_BASE}
    assert res.hub_base_model == HUB_BASE and api.calls[1][1]["folder_path"] != str(folder)
    assert res.files == api.uploaded == ["README.md", "adapter_config.json", "adapter_model.safetensors",
                                         "training_meta.json"]
    assert {rel: data for rel, data in api.contents.items() if rel != "adapter_config.json"} == {
        "README.md": MODEL_CARD.encode(), "adapter_model.safetensors": b"w", "training_meta.json": b"{}"}
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before  # not a byte changed


def test_the_adapter_config_is_pushed_as_it_is_without_a_hub_id_or_when_it_names_one(tmp_path):
    local_card = "---\nlibrary_name: peft\ntags:\n- actune\n---\n\n# m\n"  # a local base: no Hub id known
    cases = [(LOCAL_BASE, local_card), (HUB_BASE, MODEL_CARD)]
    for i, (named, card) in enumerate(cases):
        folder = adapter_folder(tmp_path / f"a{i}", card=card)
        text = json.dumps({"base_model_name_or_path": named, "r": 16})
        (folder / "adapter_config.json").write_text(text)
        api = FakeHfApi()
        res = push(folder, "org/name", api_factory=factory(api))
        assert res.hub_base_model is None and api.calls[1][1]["folder_path"] == str(folder)
        assert api.contents["adapter_config.json"] == text.encode()
    (folder / "adapter_config.json").write_text("{not json")  # a card with a Hub id: the config must be read
    with pytest.raises(PushError, match=r"adapter_config.json: not valid JSON"):
        push(folder, "org/name", api_factory=factory(FakeHfApi()))


def test_a_merged_folder_config_names_the_base_by_hub_id_in_the_upload_only(tmp_path, capsys):
    # older transformers saved the local folder the model was loaded from as _name_or_path
    config = {"_name_or_path": LOCAL_BASE, "architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    merged = adapter_folder(tmp_path / "adapter") / "merged"
    (merged / "config.json").write_text(json.dumps(config))
    before = {p: p.read_bytes() for p in merged.rglob("*") if p.is_file()}
    api = FakeHfApi()
    res = push(merged, "org/name-merged", api_factory=factory(api))
    assert json.loads(api.contents["config.json"]) == {**config, "_name_or_path": HUB_BASE}
    assert (res.kind, res.hub_base_model, res.hub_config_file) == ("model", HUB_BASE, "config.json")
    assert res.files == api.uploaded == ["README.md", "config.json", "model.safetensors"]
    assert api.contents["model.safetensors"] == b"w" and api.contents["README.md"] == MODEL_CARD.encode()
    assert {p: p.read_bytes() for p in merged.rglob("*") if p.is_file()} == before  # not a byte changed
    args = build_parser().parse_args(["push", str(merged), "--repo", "org/name-merged"])
    assert args.func(args, api_factory=factory(FakeHfApi())) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"its config.json names the base model {HUB_BASE} (the Hub id of its card) in place of the local folder; "
        "the folder's own copy is unchanged")


def test_a_merged_config_without_name_or_path_goes_up_as_it_is(tmp_path):
    # transformers 5 leaves _name_or_path out of a saved config.json: nothing to rewrite, nothing added
    merged = adapter_folder(tmp_path / "adapter") / "merged"
    text = json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    (merged / "config.json").write_text(text)
    api = FakeHfApi()
    res = push(merged, "org/name-merged", api_factory=factory(api))
    assert (res.hub_base_model, res.hub_config_file) == (None, None)
    assert api.calls[1][1]["folder_path"] == str(merged) and api.contents["config.json"] == text.encode()


def test_a_folder_holding_a_secret_is_refused_before_the_hub_is_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-0123456789")
    api = FakeHfApi()
    leaky = adapter_folder(tmp_path / "token")
    (leaky / "training_meta.json").write_text(json.dumps({"sft": {"hub_token": "hf_OtherTokenFromAConfig"}}))
    (leaky / "notes.md").write_text(f"pushed with {TOKEN}; served with sk-local-0123456789\n")
    with pytest.raises(PushError) as e:
        push(leaky, "org/name", api_factory=factory(api))
    assert str(e.value) == (f"{leaky}: refusing to upload a secret (notes.md: the value of HF_TOKEN; notes.md: the "
                            "value of OPENAI_API_KEY; training_meta.json: key sft.hub_token); remove it "
                            "from the file (actune writes secrets as ***) and push again")
    assert TOKEN not in str(e.value) and "hf_Other" not in str(e.value) and api.calls == []
    # masked, empty or merely named secrets go up
    (leaky / "training_meta.json").write_text(json.dumps({"hub_token": "***", "api_key": "", "api_key_env": "K"}))
    (leaky / "notes.md").write_text("no secrets here\n")
    assert push(leaky, "org/name", api_factory=factory(api)).files
