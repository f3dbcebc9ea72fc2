"""The README's commands run as written, it stays short, and no relative link of README.md or docs/*.md is dead.

Only the cheap commands run: ``actune --version``, ``actune --help``, any ``actune ... --help`` and
``actune config show ...`` line of a ```bash block exactly as written, and ``actune COMMAND --help`` for every
command those blocks name (``actune model prepare --help`` where a subcommand follows).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MAX_README_LINES = 200

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_WORD = re.compile(r"^[a-z][a-z-]*$")


def _actune() -> list[str]:
    """The ``actune`` installed beside this interpreter (.venv/bin/actune), else ``python -m actune``."""
    script = Path(sys.executable).with_name("actune")
    return [str(script)] if script.exists() else [sys.executable, "-m", "actune"]


def bash_lines(text: str) -> list[str]:
    """Every command line of the ```bash blocks, continuation lines (trailing backslash) joined."""
    lines: list[str] = []
    for lang, body in _FENCE.findall(text):
        if lang != "bash":
            continue
        pending = ""
        for raw in body.splitlines():
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def actune_argvs(line: str) -> list[list[str]]:
    """The argument lists after each ``actune`` / ``.venv/bin/actune`` / ``-m actune`` of a shell line."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        return []
    found = []
    for i, tok in enumerate(tokens):
        if tok in ("actune", ".venv/bin/actune"):  # also `python -m actune ...`
            args = []
            for t in tokens[i + 1:]:
                if t in ("&&", "||", ";", "|"):
                    break
                args.append(t)
            found.append(args)
    return found


def _lines() -> list[str]:
    return bash_lines(README.read_text(encoding="utf-8"))


def cheap_commands() -> list[list[str]]:
    """The README's own lines that only print: ``--version``, ``--help``, ``config show``."""
    out = []
    for line in _lines():
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue
        if not tokens or tokens[0] not in ("actune", ".venv/bin/actune"):
            continue
        args = tokens[1:]
        if args in (["--version"], ["--help"]) or "--help" in args or args[:2] == ["config", "show"]:
            out.append(args)
    return out


def named_commands() -> list[str]:
    """Every command the README's bash blocks run through ``actune``, in order, each once."""
    names: list[str] = []
    for line in _lines():
        for args in actune_argvs(line):
            if args and _WORD.match(args[0]) and args[0] not in names:
                names.append(args[0])
    return names


def subcommands(command: str) -> list[list[str]]:
    """``[command, sub]`` for each subcommand the README writes after ``command`` (``model prepare``)."""
    subs: list[list[str]] = []
    for line in _lines():
        for args in actune_argvs(line):
            if len(args) > 1 and args[0] == command and _WORD.match(args[1]) and [command, args[1]] not in subs:
                subs.append([command, args[1]])
    return subs


def run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(_actune() + args, cwd=REPO, capture_output=True, text=True, timeout=120)


def test_readme_names_version_and_help():
    cheap = cheap_commands()
    assert ["--version"] in cheap and ["--help"] in cheap
    assert len(named_commands()) >= 5


@pytest.mark.parametrize("args", cheap_commands(), ids=" ".join)
def test_cheap_readme_command_runs_as_written(args):
    out = run(args)
    assert out.returncode == 0, (args, out.stderr[-2000:])
    assert out.stdout.strip(), args


@pytest.mark.parametrize("command", named_commands())
def test_each_named_command_has_help(command):
    out = run([command, "--help"])
    assert out.returncode == 0, (command, out.stderr[-2000:])
    assert out.stdout.strip()
    for pair in subcommands(command):
        # a word after the command is a subcommand only where the command lists it as one
        if re.search(rf"[{{,]{re.escape(pair[1])}[,}}]", out.stdout):
            sub = run(pair + ["--help"])
            assert sub.returncode == 0, (pair, sub.stderr[-2000:])
            assert sub.stdout.strip(), pair


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines; at most {MAX_README_LINES}: move detail to docs/"


def _without_code(text: str) -> str:
    text = _FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_targets(page: Path) -> list[str]:
    targets = []
    for target in _LINK.findall(_without_code(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http:, https:, mailto: and anchors in the same page
        targets.append(target.split("#", 1)[0])
    return targets


PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_exist(page):
    dead = [t for t in relative_targets(page) if not (page.parent / t).exists()]
    assert not dead, f"{page.relative_to(REPO)}: dead relative links {dead}"


def test_readme_links_every_docs_page():
    targets = set(relative_targets(README))
    for doc in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{doc.name}" in targets, f"README.md does not link docs/{doc.name}"
