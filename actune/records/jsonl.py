"""Reading UTF-8 text and JSONL files whose every bad line is reported as ``file:line``.

Every reader here raises the caller's own error type (``TaskFileError``, ``CorpusError``, ``ConfigError``,
``StoreError``...) for a line that is not UTF-8, not JSON or not a record, so a user is told which file and
line to fix rather than shown a bare ``UnicodeDecodeError``.

Torn lines: an append-only JSONL file (a trajectory store) is written one whole line per write, its newline
last, so a last line without its newline is a write that a dying process cut short (:func:`is_torn`).
:mod:`actune.records.store` cuts such a line when it opens the file to append; :func:`iter_appended` is how every
reader of such files treats it, so a store whose writer was killed can still be read before it is reopened.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["JSON_ERRORS", "MAX_LINE_BYTES", "json_problem", "is_torn", "read_text", "read_json", "iter_jsonl_objects",
           "iter_appended", "shown_bytes", "json_object"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def is_torn(raw: bytes) -> bool:
    """Whether a line read from a file is torn: it lacks its closing newline. Only a file's last line can."""
    return not raw.endswith(b"\n")


def _not_utf8(data: bytes, e: UnicodeDecodeError, first_line: int = 1) -> tuple[int, str]:
    """(line number, message) for bytes of ``data`` that are not UTF-8."""
    line = first_line + data.count(b"\n", 0, e.start)
    line_start = data.rfind(b"\n", 0, e.start) + 1
    column = len(data[line_start:e.start].decode("utf-8")) + 1  # what precedes the bad bytes is valid
    return line, f"not UTF-8 text ({shown_bytes(data[e.start:e.end])} at column {column}; save the file as UTF-8)"


def shown_bytes(bad: bytes) -> str:
    """Bytes that are not UTF-8 as an error names them: ``byte 0xfc``, ``bytes 0xe9 0x41``."""
    return ("bytes " if len(bad) > 1 else "byte ") + " ".join(f"0x{b:02x}" for b in bad)


def _decode(data: bytes, path: Path, error: type[Exception], first_line: int = 1) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, message = _not_utf8(data, e, first_line)
        raise error(f"{path}:{line}: {message}") from None


def read_text(path: str | Path, error: type[Exception] = ValueError) -> str:
    """The whole file as UTF-8 text; bytes that are not UTF-8 raise ``error`` naming the file and line."""
    path = Path(path)
    return _decode(path.read_bytes(), path, error)


def json_object(path: str | Path) -> dict[str, Any] | None:
    """The JSON object a file holds, or None when it is missing, unreadable, not JSON or not an object: how a command
    tells its own earlier output (which it wrote as such an object) from anything else at that path."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return data if isinstance(data, dict) else None


def read_json(path: str | Path, error: type[Exception], what: str) -> Any:
    """A whole JSON file; a missing file (``{path}: {what} not found``), bytes that are not UTF-8 and invalid JSON
    raise ``error`` naming the file (and line)."""
    path = Path(path)
    try:
        text = read_text(path, error)  # its own named errors (an ``error`` may be a ValueError: kept apart)
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    try:
        return json.loads(text)
    except JSON_ERRORS as e:
        line, problem = json_problem(e)
        raise error(f"{path}{f':{line}' if line else ''}: invalid JSON: {problem}") from None


JSON_ERRORS = (ValueError, RecursionError)
"""What ``json.loads`` raises on bad input: ``JSONDecodeError`` (a ValueError), a ValueError for an integer past
Python's 4,300 digits, a RecursionError for thousands of nested brackets. Readers catch all three, so each is a
named error (file, line), never a traceback."""


def json_problem(e: BaseException) -> tuple[int | None, str]:
    """(line within the parsed text or None, what is wrong) of one of :data:`JSON_ERRORS`."""
    if isinstance(e, json.JSONDecodeError):
        return e.lineno, f"{e.msg}, column {e.colno}"
    if isinstance(e, RecursionError):
        return None, "nested too deeply"
    return None, str(e).split(";")[0]  # "Exceeds the limit (4300 digits) for integer string conversion: ..."


MAX_LINE_BYTES = 64 * 2**20
"""The longest line a JSONL reader takes: far above any record (an episode is kilobytes, a wiki page less), far
below what a file that is no JSONL (a binary, one huge line) would make it hold in memory."""


def _lines(path: Path, error: type[Exception]) -> Iterator[tuple[int, bytes]]:
    # Bytes, split at b"\n" only: line numbers are those of an editor and of the store's own count, and a
    # line that is not UTF-8 can be named before it is decoded.
    with open(path, "rb") as f:
        for line_no, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:
                raise error(f"{path}:{line_no}: a line longer than {MAX_LINE_BYTES:,} bytes; no record is that "
                            "large (is this a JSONL file?)")
            yield line_no, raw


def iter_jsonl_objects(path: str | Path, error: type[Exception] = ValueError) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(where, record)`` for each non-blank line, ``where`` being ``file:line``.

    A line that is not UTF-8, not valid JSON, or not a JSON object, raises ``error`` naming the file and line.
    """
    path = Path(path)
    for line_no, raw in _lines(path, error):
        line = _decode(raw, path, error, line_no)
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            record = json.loads(line)
        except JSON_ERRORS as e:
            raise error(f"{where}: not valid JSON ({json_problem(e)[1]})") from None
        if not isinstance(record, dict):
            raise error(f"{where}: expected a JSON object, got {type(record).__name__}")
        yield where, record


def iter_appended(path: str | Path, parse: Callable[[str], T], error: type[Exception] = ValueError,
                  what: str = "") -> Iterator[tuple[int, T]]:
    """Yield ``(line number, parse(line))`` for each non-blank line of an append-only JSONL file.

    ``parse`` rejects a line by raising ``ValueError``. A torn last line (:func:`is_torn`) that does not
    decode or parse is skipped, with a warning: it was never a whole record. Any other line that does not
    decode or parse raises ``error`` with ``file:line: {what}{reason}``.
    """
    path = Path(path)
    for line_no, raw in _lines(path, error):
        try:
            line = raw.decode("utf-8")
            if not line.strip():
                continue
            record = parse(line)
        except ValueError as e:  # UnicodeDecodeError included: a write cut inside a character is torn too
            if is_torn(raw):
                log.warning("%s:%d: skipped a torn last line (%d bytes without a newline: a write cut short)",
                            path, line_no, len(raw))
                return
            reason = _not_utf8(raw, e)[1] if isinstance(e, UnicodeDecodeError) else str(e)
            raise error(f"{path}:{line_no}: {what}{reason}") from None
        yield line_no, record
