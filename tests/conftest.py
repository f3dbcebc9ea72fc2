"""Shared fixtures: the embedded model and one real vLLM server for the whole test session.

``vllm_server`` starts vLLM's OpenAI-compatible server once per pytest session with LoRA enabled, under
the server lock (``actune.serve.lock``: only one server may run at a time on a 2-core machine), and
stops it at the end, checking that no process of it is left. Tests that use it are marked ``server``
automatically, so ``pytest -m "not server"`` runs everything else. It is skipped when vLLM is not installed.

Tests marked ``long`` run only with ``ACTUNE_LONG_TESTS=1``: real runs of minutes each whose mechanism the default
run also checks (a sibling test on the real server, or the same stage code on a stand-in). They keep the
default run within its time on a 2-core AVX2-only CPU (CI's kind). Tests marked ``own_servers`` start vLLM
servers of their own and run first, before the session server starts.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

EMBEDDED_MODEL = "smollm2-135m"


LONG_TESTS = "ACTUNE_LONG_TESTS"


def pytest_collection_modifyitems(config, items):
    run_long = os.environ.get(LONG_TESTS) == "1"
    for item in items:
        if "vllm_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.server)
        if not run_long and item.get_closest_marker("long"):
            item.add_marker(pytest.mark.skip(reason=f"a long real run, also checked another way: set {LONG_TESTS}=1"))
    # Tests that start servers of their own go first, before the session server starts: beside an idle session
    # server the smoke test's two trainings took 0.7 min each, 0.4-0.5 alone, and 0.8-1.0 late in the suite
    # (2-core AVX2-only EPYC, 2026-12-03). The sort is stable, so every other test keeps its order.
    items.sort(key=lambda item: item.get_closest_marker("own_servers") is None)


# The optional parts an install can lack without failing (scripts/install.sh installs ALFWorld with `|| true`): the
# summary names each one missing, so a green run that skipped their tests says so.
OPTIONAL_PARTS = {"vllm": "vLLM (serving)", "textworld": "TextWorld (ALFWorld games)", "alfworld": "ALFWorld",
                  "tensorboard": "TensorBoard"}


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = terminalreporter.stats.get("skipped", [])
    missing = [name for module, name in OPTIONAL_PARTS.items() if importlib.util.find_spec(module) is None]
    shared = (Path(__file__).resolve().parents[2] / "shared").is_dir()
    if not skipped and not missing and shared:
        return
    terminalreporter.section("what this run did not test")
    for name in missing:
        terminalreporter.write_line(f"not installed: {name}")
    if not shared:
        terminalreporter.write_line("not here: ../shared (the real HotpotQA, FEVER and ALFWorld data)")
    reasons: dict[str, int] = {}
    for report in skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{n:4d} skipped: {reason}")


@pytest.fixture(scope="session")
def embedded_model() -> Path:
    """Local Hugging Face folder of SmolLM2-135M-Instruct (built once under $ACTUNE_HOME/models)."""
    for module in ("transformers", "gguf"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (pip install 'actune[cpu]'): cannot build the embedded model")
    from actune.runtime.model_files import prepare_model

    return prepare_model(EMBEDDED_MODEL)


def _say(config, message: str) -> None:
    """Print past pytest's output capture (waiting for the lock can take minutes: say why)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(message, file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def vllm_server(embedded_model: Path, tmp_path_factory, pytestconfig):
    """A running vLLM server for the embedded model: ``.base_url`` (…/v1), ``.model`` (served name,
    ``smollm2-135m``), ``.model_path``, ``.log_path``, ``.pid``. LoRA is enabled, so tests may load
    adapters at run time (actune.serve.adapters.load_adapter)."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed (pip install 'actune[cpu]' or 'actune[gpu]')")
    from actune.serve.config import ServeConfig
    from actune.serve.lock import exclusive_server_lock
    from actune.serve.server import free_port, group_members
    from actune.serve.server import vllm_server as start

    log_dir = tmp_path_factory.mktemp("vllm-server")
    with contextlib.ExitStack() as stack:
        stack.enter_context(exclusive_server_lock(log=lambda msg: _say(pytestconfig, msg)))
        cfg = ServeConfig(
            model=str(embedded_model), served_model_name=EMBEDDED_MODEL, enable_lora=True,
            port=free_port(), log_dir=log_dir, startup_timeout_s=600,
        )
        _say(pytestconfig, f"\nstarting vLLM for the test session (log in {log_dir})")
        server = stack.enter_context(start(cfg))
        yield server
    assert group_members(server.pid) == [], f"vLLM server processes left behind (group {server.pid})"


@pytest.fixture(scope="module")
def random_lora(embedded_model, tmp_path_factory):
    """A tiny PEFT LoRA (r=8 on q_proj/v_proj) for the embedded model whose B matrices are random, so it
    changes the outputs. One per test module: modules may write files into it (a prompt spec)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(embedded_model, dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.05)
    out = tmp_path_factory.mktemp("lora") / "random-lora"
    model.save_pretrained(out)
    return out
