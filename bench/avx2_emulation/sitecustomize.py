"""Loaded by every Python process started under ``bench/emulate_avx2.sh`` (it puts this folder first on
PYTHONPATH): vLLM picks its kernel library from torch's CPU checks (``vllm._C_AVX2`` when AVX-512 is absent),
so those checks answer as an AVX2-only CPU would, in every process that imports ``torch.cpu``. Timing only;
nothing else changes. torch is not imported here (a process that never uses it starts as fast as without
the script), and the ``sitecustomize`` this one shadows, if any, still runs."""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _cap(module):
    module._is_avx512_supported = lambda: False
    module._is_avx512_bf16_supported = lambda: False
    module._is_amx_tile_supported = lambda: False


class _CapTorchCpu(importlib.abc.MetaPathFinder):
    """Finds ``torch.cpu`` as usual and caps its checks once it has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch.cpu":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _cap(module)

        spec.loader.exec_module = exec_module  # this module's own loader: nothing else is patched
        return spec


if os.environ.get("ACTUNE_EMULATE_AVX2") == "1":
    if "torch.cpu" in sys.modules:
        _cap(sys.modules["torch.cpu"])
    else:
        sys.meta_path.insert(0, _CapTorchCpu())

# the next sitecustomize on the path (a distribution's or the user's), which Python would have run without us
_next = importlib.machinery.PathFinder.find_spec(
    "sitecustomize", [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE])
if _next is not None and _next.loader is not None:
    _module = importlib.util.module_from_spec(_next)
    _next.loader.exec_module(_module)
