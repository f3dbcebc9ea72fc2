import re
from pathlib import Path

import pytest
from pydantic import Field

from actune.config import ConfigError, StrictModel, apply_overrides, dump_yaml, load_config


class Inner(StrictModel):
    rate: float = 0.1
    """A learning rate."""
    names: list[str] = Field(default_factory=list)


class Outer(StrictModel):
    model: str
    """Which model (required)."""
    steps: int = 10
    inner: Inner = Field(default_factory=Inner)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


def test_yaml_and_overrides_resolve_with_types(tmp_path):
    p = write(tmp_path, "model: m\ninner:\n  rate: 0.5\n")
    cfg = load_config(Outer, p, ["steps=32", "inner.names=[a, b]", "inner.rate=1e-3"])
    assert cfg.model == "m"
    assert cfg.steps == 32
    assert cfg.inner.names == ["a", "b"]
    assert cfg.inner.rate == pytest.approx(1e-3)


def test_unknown_key_names_key_path_and_file(tmp_path):
    p = write(tmp_path, "model: m\ninner:\n  rat: 0.5\n")
    with pytest.raises(ConfigError) as e:
        load_config(Outer, p)
    assert str(p) in str(e.value)
    assert "inner.rat: unknown key (did you mean rate?)" in str(e.value)


def test_an_unknown_key_suggests_the_closest_known_one_of_its_own_section_only(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_config(Outer, write(tmp_path, "model: m\nstep: 3\ncolour: red\ninner:\n  nmes: [a]\n  steps: 1\n"))
    assert sorted(str(e.value).splitlines()[1:]) == [
        "  colour: unknown key [line 3]", "  inner.nmes: unknown key (did you mean names?) [line 5]",
        "  inner.steps: unknown key [line 6]", "  step: unknown key (did you mean steps?) [line 2]"]


def test_an_error_names_the_line_the_file_writes_and_none_for_a_value_an_override_set(tmp_path):
    p = write(tmp_path, "model: m\ninner:\n  rate: fast\n  names:\n    - a\n    - [b]\n")
    with pytest.raises(ConfigError) as e:
        load_config(Outer, p)
    assert [line.split(":")[0] + line[line.rfind(" ["):] for line in str(e.value).splitlines()[1:]] == [
        "  inner.rate [line 3]", "  inner.names.1 [line 6]"]
    with pytest.raises(ConfigError) as e:  # the file's line would name a value that is not the one refused
        load_config(Outer, p, ["inner.rate=slow", "inner.names=[a]"])
    assert str(e.value).splitlines()[1] == "  inner.rate: Input should be a valid number, unable to parse string as a " \
                                           "number (got 'slow')"
    with pytest.raises(ConfigError, match=r"  model: required value is missing$"):  # the top level has no line
        load_config(Outer, write(tmp_path, "steps: 3\n"))


def test_lines_follow_anchors_merge_keys_and_a_run_configs_section(tmp_path):
    class Run(StrictModel):
        base: Inner = Field(default_factory=Inner)
        other: Inner = Field(default_factory=Inner)
        again: Inner = Field(default_factory=Inner)

    p = write(tmp_path, "base: &b\n  rate: fast\n  names: [a]\nother:\n  <<: *b\n  rate: slow\nagain: *b\n")
    with pytest.raises(ConfigError) as e:
        load_config(Run, p)
    assert sorted(line.split(":")[0] + line[line.rfind(" ["):] for line in str(e.value).splitlines()[1:]) == [
        "  again.rate [line 7]", "  base.rate [line 2]", "  other.rate [line 6]"]  # an alias: its own line
    with pytest.raises(ConfigError, match=r"  serve.model: required value is missing \[line 2\]$"):
        load_config(Outer, write(tmp_path, "name: x\nserve:\n  steps: 3\n"), section="serve")


def test_true_or_false_is_no_number(tmp_path):
    class Flags(StrictModel):
        port: int | None = None
        rate: float = 0.1
        on: bool | int = 0

    for override in ("port=true", "rate=false"):
        with pytest.raises(ConfigError, match=r": Value error, a number, not (true|false)"):
            load_config(Flags, overrides=[override])
    assert load_config(Flags, overrides=["on=true", "port=0"]).model_dump() == {"port": 0, "rate": 0.1, "on": True}
    with pytest.raises(ConfigError, match=r"  steps: Value error, a number, not true \(got True\) \[line 2\]"):
        load_config(Outer, write(tmp_path, "model: m\nsteps: yes\n"))


def test_wrong_type_names_key_and_value(tmp_path):
    p = write(tmp_path, "model: m\n")
    with pytest.raises(ConfigError) as e:
        load_config(Outer, p, ["steps=many"])
    assert "steps:" in str(e.value) and "'many'" in str(e.value)


def test_missing_required_value(tmp_path):
    p = write(tmp_path, "steps: 3\n")
    with pytest.raises(ConfigError) as e:
        load_config(Outer, p)
    assert "model: required value is missing" in str(e.value)


def test_invalid_yaml_names_line(tmp_path):
    p = write(tmp_path, "model: m\nsteps: [1, 2\n")
    with pytest.raises(ConfigError) as e:
        load_config(Outer, p)
    assert f"{p}:" in str(e.value) and "invalid YAML" in str(e.value)


def test_a_key_written_twice_is_an_error_with_both_lines_and_anchors_still_merge(tmp_path):
    p = write(tmp_path, "model: m\ninner:\n  rate: 0.5\n  names: [a]\n  rate: 0.7\n")
    with pytest.raises(ConfigError, match=r"c.yaml:5: invalid YAML: key 'rate' written twice \(lines 3 and 5\)"):
        load_config(Outer, p)
    # the same key in two sections, and a merge key, are not duplicates
    p = write(tmp_path, "model: m\nbase: &b {rate: 0.5}\ninner:\n  <<: *b\n  names: [rate]\n")
    with pytest.raises(ConfigError, match="base"):  # an unknown key, read past the YAML
        load_config(Outer, p)
    assert load_config(Outer, write(tmp_path, "model: m\ninner: {rate: 0.5}\nsteps: 3\n")).inner.rate == 0.5


def test_a_folder_or_a_symlink_loop_given_as_the_config_is_a_named_error(tmp_path):
    with pytest.raises(ConfigError, match="a folder, not a config file"):
        load_config(Outer, tmp_path)
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(ConfigError, match=r"loop.yaml: cannot read the config: Too many levels of symbolic links"):
        load_config(Outer, loop)


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(Outer, tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(Outer, write(tmp_path, "- a\n- b\n"))


def test_an_empty_config_file_is_refused_and_an_explicit_empty_mapping_is_every_default(tmp_path):
    with pytest.raises(ConfigError, match=r"c.yaml: holds no settings; to run with every default, write \{\} in it"):
        load_config(Outer, write(tmp_path, "# only a comment\n"), ["model=m"])
    assert load_config(Outer, write(tmp_path, "{}\n"), ["model=m"]).steps == 10


def test_a_key_written_twice_in_an_overrides_mapping_is_an_error_that_shows_no_value():
    with pytest.raises(ConfigError, match=r"^override inner=\{\.\.\.\}: key 'rate' written twice$") as e:
        apply_overrides({}, ["inner={rate: 0.5, names: [a], rate: 0.7}"])
    assert "0.7" not in str(e.value)
    assert apply_overrides({}, ["inner={rate: 0.5, names: [rate]}"]) == {"inner": {"rate": 0.5, "names": ["rate"]}}


def test_override_errors():
    with pytest.raises(ConfigError, match="key.path=value"):
        apply_overrides({}, ["steps"])
    with pytest.raises(ConfigError, match="steps is a value, not a section"):
        apply_overrides({"steps": 3}, ["steps.x=1"])


def test_an_override_error_never_echoes_the_value(capsys):
    """Issue #47 finding 7: `serve.api_key=!!int SECRET` printed SECRET in the error, `serve=5 serve.api_key=SECRET`
    echoed the override whole."""
    from actune.cli import main

    for argv in (["serve.api_key=!!int SECRET"], ["serve=5", "serve.api_key=SECRET"], ["=SECRET"]):
        assert main(["config", "show", *argv]) == 2
        err = capsys.readouterr().err
        assert "SECRET" not in err and err.startswith("actune: config error: override "), err


def test_overrides_do_not_mutate_input():
    data = {"inner": {"rate": 1}}
    out = apply_overrides(data, ["inner.rate=2"])
    assert data == {"inner": {"rate": 1}} and out == {"inner": {"rate": 2}}


def test_dump_roundtrips(tmp_path):
    cfg = load_config(Outer, None, ["model=x", "inner.names=[q]"])
    again = load_config(Outer, write(tmp_path, dump_yaml(cfg)))
    assert again == cfg


def test_field_docstrings_are_descriptions():
    assert Outer.model_fields["model"].description == "Which model (required)."
    assert Inner.model_fields["rate"].description == "A learning rate."


def test_section_of_a_run_config_is_read_alone(tmp_path):
    p = write(tmp_path, "serve:\n  model: m\n  steps: 2\nother: {anything: 1}\n")
    cfg = load_config(Outer, p, ["serve.steps=5"], section="serve")
    assert (cfg.model, cfg.steps) == ("m", 5)
    with pytest.raises(ConfigError, match=r"serve\.inner\.bogus: unknown key"):
        load_config(Outer, p, ["inner.bogus=1"], section="serve")
    # a file without the section is read whole
    assert load_config(Outer, write(tmp_path, "model: q\n"), section="serve").model == "q"


def test_a_bad_secret_value_is_not_echoed(tmp_path):
    from actune.config import StrictModel

    class WithKey(StrictModel):
        api_key: int = 0
        other: int = 0

    path = tmp_path / "c.yaml"
    path.write_text("api_key: sk-live-123\nother: x7\n")
    with pytest.raises(ConfigError) as err:
        load_config(WithKey, path, [])
    assert "sk-live-123" not in str(err.value) and "api_key: Input should be a valid integer" in str(err.value)
    assert "(got 'x7')" in str(err.value)  # other values are still shown


def test_public_dump_masks_secrets_but_not_their_variables_or_token_counts() -> None:
    from pydantic import BaseModel

    from actune.config import dump_yaml, is_secret_name, public_dump

    class Inner(BaseModel):
        hub_token: str | None = None
        max_tokens: int = 128

    class Outer(BaseModel):
        api_key: str | None = None
        api_key_env: str | None = None
        inner: Inner = Inner()

    cfg = Outer(api_key="sk-live-123", api_key_env="MY_KEY", inner=Inner(hub_token="hf_abc"))
    assert public_dump(cfg) == {"api_key": "***", "api_key_env": "MY_KEY",
                                "inner": {"hub_token": "***", "max_tokens": 128}}
    assert public_dump(Outer())["api_key"] is None  # an unset secret stays visibly unset
    assert "sk-live-123" not in dump_yaml(cfg) and "hf_abc" not in dump_yaml(cfg)
    names = ("api_key", "hub_token", "api_key_env", "max_tokens", "password", "eos_token", "pad_token", "token")
    assert [is_secret_name(n) for n in names] == [True, True, False, False, True, False, False, True]



def test_a_secret_flags_value_in_a_list_of_arguments_is_masked() -> None:
    # serve.extra_args may carry --api-key (start_server moves it into vLLM's environment): not into a report
    from actune.config import public_dump
    from actune.serve.config import ServeConfig

    cfg = ServeConfig(extra_args=["--max-num-seqs", "4", "--api-key", "SEK2", "--api_key=SEK5", "--hf-token", "hf_x",
                                  "--api-ke", "SEK6", "--x", "http://u:pw@h/", "--seed", "0"])
    assert public_dump(cfg)["extra_args"] == ["--max-num-seqs", "4", "--api-key", "***", "--api_key=***",
                                              "--hf-token", "***", "--api-ke", "***", "--x", "http://***@h/",
                                              "--seed", "0"]
    assert public_dump(ServeConfig(extra_args=["--max-num-seqs", "4"]))["extra_args"] == ["--max-num-seqs", "4"]


def test_one_override_splitter_serves_every_command() -> None:
    from actune.config import split_override

    assert split_override(" train.lora.r =16") == ("train.lora.r", "16")
    assert split_override("serve={api_key: x=y}") == ("serve", "{api_key: x=y}")  # only the first "=" cuts
    assert split_override("notanoverride") == ("notanoverride", None)
    # the stage commands qualify by it: a short key and a key with spaces around "=" alike
    from actune.cli.run_config import qualify_section_overrides
    assert qualify_section_overrides(["concurrency =3"], "bootstrap") == ["bootstrap.concurrency =3"]


def test_secrets_are_masked_by_pattern_and_inside_urls() -> None:
    from actune.config import is_secret_name, mask_url_credentials

    # issue #47: a plug-in's env.options keys and a URL's credentials were printed
    for name in ("secret_key", "aws_secret_access_key", "private_key", "apikey", "api_key", "hub_token", "password",
                 "client_secret", "credentials", "basic_auth", "x_auth_token"):
        assert is_secret_name(name), name
    for name in ("api_key_env", "max_tokens", "eos_token", "pad_token", "max_new_tokens", "author", "tokenizer",
                 "prompt_tokens"):
        assert not is_secret_name(name), name
    assert mask_url_credentials("https://me:pw@host:8000/v1, http://host/v1") == "https://***@host:8000/v1, http://host/v1"
    from actune.config import public_dump
    from actune.eval.config import EvalConfig

    assert public_dump(EvalConfig(endpoints=["https://me:pw@host/v1"]))["endpoints"] == ["https://***@host/v1"]


def test_a_run_name_that_would_name_a_folder_elsewhere_is_refused(tmp_path):
    from actune.cli.run_config import RunConfig

    for bad in ("../../etc", "a/b", ".hidden", "", "x" * 101):
        with pytest.raises(ConfigError, match="a run name is 1-100 letters"):
            load_config(RunConfig, None, [f"name={bad!r}"])
    assert load_config(RunConfig, None, ["name=hotpotqa-r1_v2.0"]).name == "hotpotqa-r1_v2.0"


@pytest.mark.parametrize("override, named", [
    ("serve=5", "serve: Input should be a valid dictionary"), ("train=abc", "train: Input should be a valid dictionary"),
    ("eval=3", "eval: Input should be a valid dictionary"), ("eval.models=5", "eval.models: Input should be a valid list"),
    ("eval={models: [5]}", "eval.models.0: Input should be a valid dictionary")])
def test_a_section_that_is_no_mapping_is_named_beside_a_top_level_model(override, named):
    # the top-level model is written into serve, train and eval's models before validation: a section that is no
    # mapping must reach validation, which names it, not crash the filling
    from actune.cli.run_config import RunConfig

    with pytest.raises(ConfigError, match=re.escape(named)):
        load_config(RunConfig, None, ["model=smollm2-135m", override])
