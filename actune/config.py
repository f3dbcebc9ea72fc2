"""Typed configs loaded from YAML with ``key=value`` overrides.

Every stage has one pydantic model whose fields and docstrings are its documentation. This module is
the machinery they share: load a YAML file, apply dotted overrides, validate, and turn every problem
(unknown key, wrong type, missing value) into a :class:`ConfigError` naming the key path and the file.
"""

from __future__ import annotations

import difflib
import os
import re
import reprlib
import types
import typing
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from actune.records.jsonl import json_problem, read_text

__all__ = ["MASK", "ConfigError", "RunName", "StrictModel", "load_config", "apply_overrides", "dump_yaml",
           "actune_home", "fill_model", "is_section", "section_dict", "with_default", "api_key_flag", "secret_flag",
           "mask_flag_values"]


class ConfigError(ValueError):
    """A config could not be loaded; the message names the file and the key path."""


class StrictModel(BaseModel):
    """Base for every config: unknown keys are errors, a true/false is no number, and field docstrings become
    descriptions."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic's lax mode reads true as 1 (serve.port=true, max_steps: yes); strict mode everywhere would also
        # refuse a path or a number written as a string, which YAML and key=value overrides give
        if isinstance(value, bool) and info.field_name is not None:
            leaves = _leaf_types(cls.model_fields[info.field_name].annotation)
            if leaves & {int, float} and not leaves & {bool, Any}:
                raise ValueError(f"a number, not {str(value).lower()}")
        return value


def _leaf_types(annotation: Any) -> set[Any]:
    """The types a field's annotation accepts at its top level: ``int | None`` and ``Annotated[int, ...]`` give
    ``{int, NoneType}``; a list or a mapping is itself one leaf (its items are not looked into)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _leaf_types(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_leaf_types(arg) for arg in typing.get_args(annotation)))
    return {annotation}


M = TypeVar("M", bound=BaseModel)


def _run_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name):
        raise ValueError("a run name is 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit "
                         "(it names folders)")
    return name


RunName = Annotated[str, AfterValidator(_run_name)]
"""A run's name: it becomes part of run ids and of the folders trackers write (``<log dir>/<run id>``), so letters,
digits, ``.``, ``_`` and ``-`` only: a ``/`` or ``..`` would write outside the run's folder."""


def actune_home() -> Path:
    """Where actune keeps models, caches and server logs (``$ACTUNE_HOME``, default ``~/.cache/actune``)."""
    return Path(os.environ.get("ACTUNE_HOME") or Path.home() / ".cache" / "actune").expanduser()


def split_override(item: str) -> tuple[str, str | None]:
    """(``key.path``, raw value) of a ``key.path=value`` override, the key stripped; the value is None when the
    item has no ``=``. The one place an override is cut, for every command that reads or qualifies one."""
    key, eq, raw = item.partition("=")
    return key.strip(), (raw if eq else None)


def _parse_override(item: str) -> tuple[list[str], Any]:
    key, raw = split_override(item)
    if raw is None:
        raise ConfigError(f"override {item!r} is not of the form key.path=value")
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override {key!r}=... has an empty key")  # the value is never echoed: it may be a secret
    # YAML scalars give the natural types: 32 -> int, true -> bool, [a, b] -> list, null -> None.
    try:
        value = yaml.load(raw, Loader=_UniqueKeyLoader) if raw.strip() else ""  # noqa: S506 - a SafeLoader
    except _KeyWrittenTwice as e:  # the key alone: the value may be a secret
        raise ConfigError(f"override {key}={{...}}: {e.problem.split(' (lines')[0]}") from None
    except yaml.YAMLError:
        value = raw
    except (ValueError, RecursionError) as e:  # an integer past 4,300 digits, nesting, a tag that fails (!!int x)
        problem = "not a valid value (not shown: the key is a secret's)" if is_secret_name(key.split(".")[-1]) \
            else json_problem(e)[1]
        raise ConfigError(f"override {key}: {problem}") from None
    return key.split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Return a copy of ``data`` with each ``a.b.c=value`` set (creating nested mappings)."""
    out = _deep_copy(data)
    for item in overrides:
        path, value = _parse_override(item)
        node = out
        for i, part in enumerate(path[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise ConfigError(  # the key alone: the override's value may be a secret
                    f"override {'.'.join(path)}=...: {'.'.join(path[: i + 1])} is a value, not a section"
                )
            node = child
        node[path[-1]] = value
    return out


def _deep_copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _deep_copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_deep_copy(v) for v in data]
    return data


class _KeyWrittenTwice(yaml.constructor.ConstructorError):
    """A mapping that writes one key twice (:class:`_UniqueKeyLoader`)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a key written twice in one mapping is an error: PyYAML keeps the last silently,
    so a user who edits the first ``learning_rate:`` of two would train with the other."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                continue  # a merge key (``<<: *base``) and non-string keys: PyYAML's own rules
            key, line = key_node.value, key_node.start_mark.line + 1
            if key in seen:
                raise _KeyWrittenTwice(
                    None, None, f"key {key!r} written twice (lines {seen[key]} and {line})", key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> dict[str, Any]:
    """The mapping a config file holds (see :func:`read_yaml_lines`)."""
    return read_yaml_lines(path)[0]


def _load_with_lines(text: str) -> tuple[Any, dict[tuple, int]]:
    # yaml.load's own steps, keeping the node tree: it knows the line of every key
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        return (None if node is None else loader.construct_document(node)), _key_lines(node)
    finally:
        loader.dispose()


def _key_lines(root: yaml.Node | None) -> dict[tuple, int]:
    """The line of each key path (and list item) a file writes; a node reached again through an alias is not walked
    again, so nested aliases cost no more than their text (the anchor, written first, keeps its lines)."""
    lines: dict[tuple, int] = {}
    seen: set[int] = set()
    todo: list[tuple[tuple, yaml.Node | None]] = [((), root)]
    while todo:
        path, node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            children = [((*path, key.value), key, value) for key, value in node.value
                        if isinstance(key, yaml.ScalarNode)]
        elif isinstance(node, yaml.SequenceNode):
            children = [((*path, i), item, item) for i, item in enumerate(node.value)]
        else:
            continue
        for child, at, _ in children:  # a merge (<<) puts its keys first: a key the mapping writes itself wins
            lines[child] = at.start_mark.line + 1
        todo.extend((child, value) for child, _, value in reversed(children))  # document order: an anchor's own
    return lines


def read_yaml_lines(path: Path) -> tuple[dict[str, Any], dict[tuple, int]]:
    """The mapping a config file holds, and the line of each key path in it (errors name it); a named
    :class:`ConfigError` for a file that is missing, unreadable, not YAML, not a mapping or too large."""
    try:
        text = read_text(path, ConfigError)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a folder, not a config file") from None
    except OSError as e:  # a symlink loop, no permission: the file cannot be read, which no room would cure
        raise ConfigError(f"{path}: cannot read the config: {e.strerror or e}") from None
    try:
        data, lines = _load_with_lines(text)
    except (ValueError, RecursionError) as e:  # an integer past 4,300 digits, thousands of nested brackets
        raise ConfigError(f"{path}: invalid YAML: {json_problem(e)[1]}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: invalid YAML: {getattr(e, 'problem', e)}") from None
    if data is None:  # an empty file (or comments only) is more likely a mistake than a wish for every default
        raise ConfigError(f"{path}: holds no settings; to run with every default, write {{}} in it")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping of keys, got {type(data).__name__}")
    values, size = _expanded_size(data, {})
    if values > MAX_CONFIG_VALUES:
        raise ConfigError(f"{path}: expands to more than {MAX_CONFIG_VALUES:,} values (nested YAML aliases?); "
                          "a config is read whole, so it must stay small")
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: expands to more than {MAX_CONFIG_BYTES:,} bytes of text (a long string behind "
                          "YAML aliases?); a config is read whole and printed whole, so it must stay small")
    return data, lines


MAX_CONFIG_VALUES = 100_000
"""Values a config file may expand to once its YAML aliases are followed: far above any real config, far below
what a few hundred bytes of nested aliases expand to (a billion)."""

MAX_CONFIG_BYTES = 16_000_000
"""Characters of text a config may expand to: one 100 KB string referenced 50,000 times is few values but 5 GB
once ``config show`` prints it."""


def _expanded_size(node: Any, memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values, characters of keys and scalars) in ``node`` with every alias expanded, counted without expanding
    (each shared node once)."""
    if not isinstance(node, (dict, list)):
        return 1, len(str(node)) if isinstance(node, (str, bytes)) else 8
    if id(node) not in memo:
        children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
        sizes = [_expanded_size(c, memo) for c in children]
        memo[id(node)] = 1 + sum(v for v, _ in sizes), sum(b for _, b in sizes)
    return memo[id(node)]


def _is_secret(loc: tuple) -> bool:
    """A field whose value must never be echoed in an error (a mistyped key is still a key)."""
    return any(isinstance(p, str) and any(w in p.lower() for w in ("key", "token", "secret", "password"))
               for p in loc)


# What an error echoes of a bad value: a few levels, items and characters, so a value built of nested YAML
# aliases (kilobytes of file, gigabytes when printed whole) cannot flood the terminal or a log.
_ECHO = reprlib.Repr()
_ECHO.maxlevel, _ECHO.maxlist, _ECHO.maxdict, _ECHO.maxstring, _ECHO.maxother = 1, 4, 4, 80, 80
_MAX_ERROR_LINES = 20


def _section_fields(model: type[BaseModel] | None, path: tuple) -> list[str]:
    """The keys the config section at ``path`` of ``model`` accepts ([] when the path leaves known sections)."""
    current: Any = model
    for part in path:
        fields = getattr(current, "model_fields", None)
        if not isinstance(part, str) or not fields or part not in fields:
            return []
        annotation = fields[part].annotation
        nested = [a for a in (annotation, *typing.get_args(annotation))
                  if isinstance(a, type) and issubclass(a, BaseModel)]
        current = nested[0] if nested else None
    return list(getattr(current, "model_fields", {}) or {})


def _did_you_mean(model: type[BaseModel] | None, loc: tuple) -> str:
    close = difflib.get_close_matches(str(loc[-1]), _section_fields(model, tuple(loc[:-1])), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _line_of(loc: tuple, key_lines: dict[tuple, int]) -> str:
    """`` [line N]``: where the file writes ``loc`` or, for a key it lacks, the nearest section it writes; nothing
    where an override set it (line 0)."""
    for end in range(len(loc), -1, -1):  # () is the section's own line where a run config's section was read
        if loc[:end] in key_lines:
            return f" [line {key_lines[loc[:end]]}]" if key_lines[loc[:end]] else ""
    return ""


def _format_validation_error(err: ValidationError, source: str, prefix: str = "",
                             model: type[BaseModel] | None = None, key_lines: dict[tuple, int] | None = None) -> str:
    lines = []
    errors = err.errors()
    for e in errors[:_MAX_ERROR_LINES]:
        loc = prefix + ".".join(str(p) for p in e["loc"]) or "(top level)"
        kind = e["type"]
        if kind == "extra_forbidden":
            msg = "unknown key" + _did_you_mean(model, e["loc"])
        elif kind == "missing":
            msg = "required value is missing"
        else:
            msg = e["msg"]
            if "input" in e and kind not in ("missing",) and not _is_secret(e["loc"]):
                msg += f" (got {mask_url_credentials(_ECHO.repr(e['input']))})"
        lines.append(f"  {loc}: {msg}{_line_of(tuple(e['loc']), key_lines or {})}")
    if len(errors) > _MAX_ERROR_LINES:
        lines.append(f"  ... and {len(errors) - _MAX_ERROR_LINES} more")
    return f"{source}: invalid config\n" + "\n".join(lines)


def load_config(
    cls: type[M],
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    *,
    section: str | None = None,
) -> M:
    """Load ``cls`` from a YAML file (optional) and ``key=value`` overrides, validated.

    With ``section`` (e.g. ``"serve"``) a file that has that top-level key is a run config and only that
    section is read; overrides may then be written with or without the ``section.`` prefix, and errors
    name the full key path (``serve.port``). A file without the key is read whole.
    Raises :class:`ConfigError` naming the file and every bad key path.
    """
    data, key_lines = read_yaml_lines(Path(path)) if path is not None else ({}, {})
    overrides = list(overrides or [])
    prefix = ""
    if section is not None and isinstance(data.get(section), dict):
        data, prefix = data[section], f"{section}."
        overrides = [o.removeprefix(prefix) for o in overrides]
        key_lines = {k[1:]: line for k, line in key_lines.items() if k[:1] == (section,)}
    data = apply_overrides(data, overrides)
    for item in overrides:  # a value an override set is not the file's: no line of the file names it (0)
        key = tuple(split_override(item)[0].split("."))
        key_lines = {**{k: line for k, line in key_lines.items() if k[:len(key)] != key}, key: 0}
    source = str(path) if path is not None else "command-line overrides"
    if overrides and path is not None:
        source += " (with overrides)"
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_validation_error(e, source, prefix, cls, key_lines)) from None


# By pattern, not by exact name (issue #47: a plug-in's env.options held secret_key, aws_secret_access_key,
# private_key, apikey): any key that says secret, password, private or access key, credential or API key; and any
# "..._token" but the tokenizer's special tokens (TRL's pad_token, eos_token... are settings, not secrets).
_SECRET_NAME = re.compile(r"secret|passw(?:or)?d|private_?key|access_?key|credential|api_?key"
                          r"|(?:^|_)auth(?:_|$)|authorization|^token$|_token$", re.IGNORECASE)
_NOT_SECRET = re.compile(r"_env$|^(?:pad|eos|bos|unk|sep|cls|mask|additional_special|image|video|audio|boi|eoi|"
                         r"start|end|stop|think|max|min|num|total|prompt|completion)_tokens?$", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
MASK = "***"
"""What every secret is written as, wherever actune prints, logs or writes it."""


def is_secret_name(name: str) -> bool:
    """A config key that holds a secret (``api_key``, ``hub_token``, ``aws_secret_access_key``, ``apikey``), not
    one that names where a secret is (``api_key_env``), counts tokens (``max_tokens``) or names a special token
    (``eos_token``)."""
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET.search(name)


def mask_url_credentials(text: str) -> str:
    """``https://user:pass@host/v1`` -> ``https://***@host/v1``: credentials written into a URL."""
    return _URL_CREDENTIALS.sub(f"{MASK}@", text)


def api_key_flag(flag: str) -> bool:
    """``--api-key`` as vLLM's parser reads it: dashes or underscores (``--api_key``), or a prefix argparse takes for
    it (``--api-ke``; ``--api-k`` at least: shorter ones are prefixes of other flags too)."""
    name = flag.split("=", 1)[0].replace("_", "-")
    return len(name) >= len("--api-k") and "--api-key".startswith(name)


def secret_flag(arg: str) -> bool:
    """Whether a command-line argument is a flag that carries a secret (``--api-key`` in every spelling
    :func:`api_key_flag` knows, ``--hf-token``): its value, the next argument or what follows ``=``, is one."""
    return arg.startswith("--") and (api_key_flag(arg) or is_secret_name(arg[2:].split("=", 1)[0].replace("-", "_")))


def mask_flag_values(args: list[Any]) -> list[Any]:
    """A list of command-line arguments (``serve.extra_args``) with the value of every :func:`secret_flag` masked."""
    out: list[Any] = []
    for i, arg in enumerate(args):
        after_flag = i > 0 and isinstance(args[i - 1], str) and secret_flag(args[i - 1]) and "=" not in args[i - 1]
        if after_flag:
            out.append(MASK)
        elif isinstance(arg, str) and secret_flag(arg) and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=" + MASK)
        else:
            out.append(arg)
    return out


def public_dump(model: BaseModel) -> dict[str, Any]:
    """``model.model_dump(mode="json")`` with every secret that is set written as ``***`` (and the value of a secret
    flag in a list of command-line arguments, ``extra_args: [--api-key, ***]``): what may be printed, logged or
    written to a file (run states, reports)."""
    def mask(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: MASK if is_secret_name(str(k)) and v not in (None, "") else mask(v) for k, v in node.items()}
        if isinstance(node, list) and any(isinstance(a, str) and secret_flag(a) for a in node):
            return [mask(v) for v in mask_flag_values(node)]
        if isinstance(node, str):
            return mask_url_credentials(node)
        return [mask(v) for v in node] if isinstance(node, list) else node

    return mask(model.model_dump(mode="json"))


def dump_yaml(model: BaseModel) -> str:
    """The resolved config as YAML (what ``actune config show`` prints), secrets masked."""
    return yaml.safe_dump(public_dump(model), sort_keys=False)


def fill_model(data: Any, fields: dict[str, str]) -> Any:
    """A config's raw ``data`` with its top-level ``model`` written into each ``section: key`` of ``fields``
    that the data leaves unset. Before validation, so a key counts as set only when the file (or an
    override) names it."""
    if not isinstance(data, dict) or data.get("model") is None:
        return data
    data = dict(data)
    for section, key in fields.items():
        if is_section(data.get(section)):  # anything else is left for validation to name (``serve: 5``)
            data[section] = with_default(data.get(section), key, data["model"])
    return data


def is_section(value: Any) -> bool:
    """Whether ``value`` can be a config section before validation: unset, a mapping or a model."""
    return value is None or isinstance(value, (dict, BaseModel))


def section_dict(section: Any) -> dict[str, Any]:
    """A config section as a plain dict of what is set: a model's set fields, a mapping as it is, None as {}."""
    if section is None:
        return {}
    if isinstance(section, BaseModel):
        return section.model_dump(exclude_unset=True)
    return dict(section)


def with_default(section: Any, key: str, value: str) -> dict[str, Any]:
    """``section`` (:func:`section_dict`) with ``key`` set to ``value`` where it is not set."""
    out = section_dict(section)
    out.setdefault(key, value)
    return out
