"""Run as a device would, without PyTorch: hide it from the import system.

onnxruntime.training imports ORTModule (and so torch) whenever torch is installed; on a phone or a
small box it is not, and ``onnxruntime.training`` then skips ORTModule. Hiding torch makes this process
take that same path, and any code of ours that reached for torch would fail here, loudly, as it would
there. ``"torch" not in sys.modules`` holds to the end (tests/edge/test_edge_train.py checks it).
"""

from __future__ import annotations

import importlib.abc
import sys

HIDDEN = frozenset({"torch", "torchvision", "torchaudio", "deepspeed"})


class _Hiding(importlib.abc.MetaPathFinder):
    """Wraps one finder of sys.meta_path and finds nothing for the hidden packages."""

    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN or not hasattr(self.finder, "find_spec"):
            return None
        return self.finder.find_spec(name, path, target)

    def invalidate_caches(self):
        if hasattr(self.finder, "invalidate_caches"):
            self.finder.invalidate_caches()

    def __getattr__(self, name):  # find_distributions and the like: what importlib.metadata asks for
        return getattr(self.finder, name)


def hide_torch() -> None:
    """From now on this process imports as if torch were not installed. Call it first thing."""
    loaded = sorted(name for name in sys.modules if name.partition(".")[0] in HIDDEN)
    if loaded:
        raise RuntimeError(f"{loaded[0]} is imported already: hide_torch() must run before anything imports it")
    sys.meta_path[:] = [f if isinstance(f, _Hiding) else _Hiding(f) for f in sys.meta_path]


def import_training_api():
    """``onnxruntime.training.api``, also where torch is missing.

    onnxruntime-training 1.19.2's ``onnxruntime/training/__init__.py`` imports its ``optim`` package, whose
    FP16 optimizer imports torch unconditionally: without torch, ``import onnxruntime.training.api`` fails
    although the API itself (checkpoint_state, module, optimizer, lr_scheduler) needs only ORT's C++ core and
    numpy. So when torch cannot be imported, the package is entered without running that ``__init__``.
    Returns (module, fixes applied)."""
    import importlib
    import importlib.util
    import types

    if "onnxruntime.training" in sys.modules or importlib.util.find_spec("torch") is not None:
        return importlib.import_module("onnxruntime.training.api"), []
    spec = importlib.util.find_spec("onnxruntime.training")
    package = types.ModuleType(spec.name)
    package.__spec__, package.__path__, package.__file__ = spec, list(spec.submodule_search_locations), spec.origin
    package.__package__ = spec.name
    sys.modules[spec.name] = package
    return importlib.import_module("onnxruntime.training.api"), ["training_api_without_torch"]
