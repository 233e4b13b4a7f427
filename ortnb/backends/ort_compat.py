"""Make ORTModule from onnxruntime-training 1.19.2 import and train on current PyTorch.

1.19.2 is the last release of ONNX Runtime training; it was written against torch 2.3. Each
incompatibility is a `Fix`: ``needed()`` looks at the running versions, ``apply()`` mends it.
A fix is applied only when needed, and ``load_ortmodule()`` records which ones ran, so the
engine report can say so. See ../shared/ort-on-current-pytorch.md for how each was found.

Not mended: ``torch.onnx._internal._beartype`` (gone since torch 2.8) is used only by ORTModule's
ZeRO stage 3 support, which ortnb refuses for the ORT backend.

Fixes marked ``before_import`` must run before anything imports ``onnxruntime.training``:
that package tries to import ORTModule in its own ``__init__`` and binds names at import time.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import threading
import types
from dataclasses import dataclass
from typing import Callable

from .._imports import choose_deepspeed_cpu_quietly, require_ort_training
from . import ort_extensions

ORTMODULE = "onnxruntime.training.ortmodule"
CPP_EXTENSIONS = ORTMODULE + ".torch_cpp_extensions"

# Since torch 2.9 the TorchScript exporter lives in torch.onnx._internal.torchscript_exporter;
# ORTModule imports these modules by their old names.
TORCHSCRIPT_EXPORTER_MODULES = ("jit_utils", "_globals", "_type_utils", "registration", "symbolic_helper", "utils")


@dataclass(frozen=True)
class Fix:
    name: str
    why: str
    needed: Callable[[], bool]
    apply: Callable[[], None]
    before_import: bool = True


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


# --- 1. the TorchScript exporter moved -------------------------------------------------------

def _exporter_moved() -> bool:
    return (not _module_exists("torch.onnx._internal.jit_utils")
            and _module_exists("torch.onnx._internal.torchscript_exporter"))


def _alias_exporter_modules() -> None:
    import torch.onnx
    import torch.onnx._internal as internal

    names = list(TORCHSCRIPT_EXPORTER_MODULES)
    names += [f"symbolic_opset{v}" for v in range(7, 21)
              if _module_exists(f"torch.onnx._internal.torchscript_exporter.symbolic_opset{v}")]
    for name in names:
        module = importlib.import_module(f"torch.onnx._internal.torchscript_exporter.{name}")
        sys.modules.setdefault(f"torch.onnx._internal.{name}", module)
        if not hasattr(internal, name):
            setattr(internal, name, module)
        if not hasattr(torch.onnx, name):  # `from torch.onnx import _globals` and friends
            setattr(torch.onnx, name, module)


# --- 2. private exporter helpers left out of torch.onnx's compatibility shims -----------------

# Private names ORTModule's symbolic functions import from the public torch.onnx modules (for
# convolutions: ViT, any Conv model). Since torch 2.9 those modules re-export only part.
SHIM_NAMES = {"symbolic_opset9": ("_convolution", "_convolution_mode")}


def _shim_names_missing() -> bool:
    return any(not hasattr(importlib.import_module(f"torch.onnx.{module}"), name)
               for module, names in SHIM_NAMES.items() for name in names)


def _restore_shim_names() -> None:
    for module, names in SHIM_NAMES.items():
        shim = importlib.import_module(f"torch.onnx.{module}")
        source = importlib.import_module(f"torch.onnx._internal.torchscript_exporter.{module}")
        for name in names:
            if not hasattr(shim, name):
                setattr(shim, name, getattr(source, name))


# --- 3. torch.onnx.export defaults to the dynamo exporter ------------------------------------

def _export_defaults_to_dynamo() -> bool:
    import torch.onnx

    parameter = inspect.signature(torch.onnx.export).parameters.get("dynamo")
    return parameter is not None and parameter.default is True and not getattr(torch.onnx.export, "_ortnb", False)


def _in_ortmodule_export() -> bool:
    ortmodule = sys.modules.get(ORTMODULE)
    return bool(ortmodule is not None and ortmodule.ORTMODULE_ONNX_EXPORT_CONTEXT[0])


def _export_with_torchscript_inside_ortmodule() -> None:
    """ORTModule's export needs the TorchScript exporter; everyone else keeps torch's default."""
    import torch.onnx

    original = torch.onnx.export

    def export(*args, **kwargs):
        if "dynamo" not in kwargs and _in_ortmodule_export():
            kwargs["dynamo"] = False
        return original(*args, **kwargs)

    export.__wrapped__ = original
    export.__signature__ = inspect.signature(original)
    export._ortnb = True
    torch.onnx.export = export


# --- 4. ORTModule's C++ extensions -----------------------------------------------------------

def _extensions_not_installed() -> bool:
    spec = importlib.util.find_spec("onnxruntime")
    folder = os.path.join(os.path.dirname(spec.origin), "training", "ortmodule", "torch_cpp_extensions")
    return not any(name.endswith((".so", ".dll", ".dylib")) for name in os.listdir(folder))


def _torch_interop_stand_in() -> types.ModuleType:
    """ORTModule imports torch_interop_utils even with custom autograd support off; it cannot be
    built on torch >= 2.x, so a stand-in answers with the reason if anything calls it."""
    module = types.ModuleType(CPP_EXTENSIONS + ".torch_interop_utils")

    def unsupported(*_args, **_kwargs):
        raise RuntimeError("Custom torch.autograd.Function support in ORTModule (torch_interop_utils) "
                           "does not build on this torch; ortnb runs with it disabled.")

    def __getattr__(name):
        if name.startswith("__"):  # inspect and pickle probe dunders on every module in sys.modules
            raise AttributeError(name)
        return unsupported

    module.__getattr__ = __getattr__
    return module


def _load_cached_extension() -> None:
    path = ort_extensions.ensure_extension()
    name = CPP_EXTENSIONS + ".aten_op_executor"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    sys.modules[CPP_EXTENSIONS + ".torch_interop_utils"] = _torch_interop_stand_in()
    # Read by ORTModule when it is imported: without torch_interop_utils it must stay off.
    os.environ["ORTMODULE_ENABLE_CUSTOM_AUTOGRAD"] = "0"


def _forget_missing_extension_error() -> None:
    """ORTModule's import looked for *.so files in its own folder and recorded an error that
    fails every ORTModule(...); the extension is loaded from ortnb's cache instead."""
    ortmodule = sys.modules[ORTMODULE]
    error = ortmodule._FALLBACK_INIT_EXCEPTION
    if error is not None and "extensions were not detected" in str(error):
        ortmodule._FALLBACK_INIT_EXCEPTION = None
    package = sys.modules[CPP_EXTENSIONS]
    package.aten_op_executor = sys.modules[CPP_EXTENSIONS + ".aten_op_executor"]
    package.torch_interop_utils = sys.modules[CPP_EXTENSIONS + ".torch_interop_utils"]


# --- 5. NVTX ranges on a CPU-only torch ------------------------------------------------------

def _nvtx_unusable() -> bool:
    import torch

    return not torch.cuda.is_available()


def _silence_nvtx_ranges() -> None:
    """ORTModule pushes NVTX ranges unconditionally; a CPU torch raises "NVTX functions not
    installed". Replace the helpers in every ORT module that bound them by name."""
    profile_utils = sys.modules["onnxruntime.training.utils.torch_profile_utils"]
    originals = {profile_utils.torch_nvtx_range_push, profile_utils.torch_nvtx_range_pop}

    def no_op(*_args, **_kwargs):
        return None

    for name, module in list(sys.modules.items()):
        if name.startswith("onnxruntime.training") and module is not None:
            for attribute in ("torch_nvtx_range_push", "torch_nvtx_range_pop"):
                if getattr(module, attribute, None) in originals:
                    setattr(module, attribute, no_op)


# --- 6. output capture without file descriptors -------------------------------------------------

def _has_fileno(stream) -> bool:
    try:
        stream.fileno()
        return True
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return False


def _stream_suppression_needs_fileno() -> bool:
    return True  # every 1.19.2 build redirects sys.stdout.fileno() while it exports and builds graphs


def _suppress_only_with_file_descriptors() -> None:
    """ORTModule silences C++ output by dup2-ing sys.stdout.fileno(); pytest's capture and some
    notebook front-ends give streams without a file descriptor, and the export then fails with
    "'NoneType' object cannot be interpreted as an integer". Without descriptors, nothing is silenced."""
    import contextlib

    logger_module = sys.modules[ORTMODULE + "._logger"]
    original = logger_module._suppress_os_stream_output

    @contextlib.contextmanager
    def suppress(enable=True, on_exit=None):
        if enable and not (_has_fileno(sys.stdout) and _has_fileno(sys.stderr)):
            yield
            return
        with original(enable=enable, on_exit=on_exit):
            yield

    logger_module._suppress_os_stream_output = suppress


# --- 7. transformers' packed-sequence check does not export -------------------------------------

def _diff_not_exportable() -> bool:
    from torch.onnx._internal.torchscript_exporter import registration

    return not registration.registry.is_registered_op("aten::diff", 17)


def _export_packed_sequence_check() -> None:
    """transformers 5's mask code runs ``(torch.diff(position_ids, ...) != 1).cumsum(-1)`` to find packed
    sequences whenever a decoder runs without an attention mask and without a cache, i.e. in training
    (Whisper's decoder, given only ``labels``). The TorchScript exporter has no symbolic for ``diff``, and
    exports ``cumsum`` of a bool tensor as an ONNX CumSum of bools, which is invalid (torch sums bools as
    int64). diff becomes a slice minus a slice; a bool cumsum gets a cast to int64 first."""
    import torch
    import torch.onnx
    from torch.onnx._internal.torchscript_exporter import _type_utils, symbolic_helper, symbolic_opset11

    @symbolic_helper.parse_args("v", "i", "i", "v", "v")
    def diff(g, tensor, n, dim, prepend, append):
        parts = [part for part in (prepend, tensor, append) if not symbolic_helper._is_none(part)]
        out = g.op("Concat", *parts, axis_i=dim) if len(parts) > 1 else tensor
        for _ in range(n):
            later = symbolic_helper._slice_helper(g, out, axes=[dim], starts=[1], ends=[sys.maxsize])
            earlier = symbolic_helper._slice_helper(g, out, axes=[dim], starts=[0], ends=[-1])
            out = g.op("Sub", later, earlier)
        return out

    def cumsum(g, tensor, dim, dtype=None):
        scalar_type = _type_utils.JitScalarType.from_value(tensor, _type_utils.JitScalarType.UNDEFINED)
        if scalar_type == _type_utils.JitScalarType.BOOL and symbolic_helper._is_none(dtype):
            tensor = g.op("Cast", tensor, to_i=_type_utils.JitScalarType.INT64.onnx_type())
        return symbolic_opset11.cumsum(g, tensor, dim, dtype)

    torch.onnx.register_custom_op_symbolic("aten::diff", diff, 9)
    torch.onnx.register_custom_op_symbolic("aten::cumsum", cumsum, 11)


FIXES: tuple[Fix, ...] = (
    Fix("torchscript_exporter_aliases", "torch>=2.9 moved the TorchScript exporter modules ORTModule imports",
        _exporter_moved, _alias_exporter_modules),
    Fix("exporter_shim_names", "torch>=2.9's torch.onnx.symbolic_* shims lack private helpers ORTModule imports",
        _shim_names_missing, _restore_shim_names),
    Fix("export_dynamo_false", "torch.onnx.export defaults to dynamo=True; ORTModule needs the TorchScript exporter",
        _export_defaults_to_dynamo, _export_with_torchscript_inside_ortmodule),
    Fix("cpp_extension_from_cache", "ORTModule's C++ extension is built by ortnb, not torch_ort.configure",
        _extensions_not_installed, _load_cached_extension),
    Fix("forget_missing_extension_error", "ORTModule recorded the extension as missing at import",
        _extensions_not_installed, _forget_missing_extension_error, before_import=False),
    Fix("nvtx_noop_without_cuda", "NVTX ranges raise on a CPU-only torch", _nvtx_unusable, _silence_nvtx_ranges,
        before_import=False),
    Fix("stream_suppression_without_fileno", "ORTModule's output silencing needs real file descriptors",
        _stream_suppression_needs_fileno, _suppress_only_with_file_descriptors, before_import=False),
    Fix("packed_sequence_check_export", "transformers' masks call torch.diff and a bool cumsum, which the "
        "TorchScript exporter cannot export", _diff_not_exportable, _export_packed_sequence_check,
        before_import=False),
)

_lock = threading.Lock()
_applied: list[str] | None = None


def load_ortmodule(skip: frozenset[str] = frozenset()):
    """Import ORTModule with every needed fix applied; returns the ``ortmodule`` package.

    ``skip`` names fixes to leave out; it exists so the tests can show each fix is needed.
    """
    global _applied
    with _lock:
        if _applied is None:
            require_ort_training("The ORT backend")
            choose_deepspeed_cpu_quietly()  # onnxruntime-training imports DeepSpeed
            applied = [fix.name for fix in FIXES if fix.before_import and fix.name not in skip and _apply(fix)]
            importlib.import_module(ORTMODULE)  # the import the fixes before it prepare for
            applied += [fix.name for fix in FIXES if not fix.before_import and fix.name not in skip and _apply(fix)]
            _applied = applied
        return sys.modules[ORTMODULE]


def _apply(fix: Fix) -> bool:
    if not fix.needed():
        return False
    fix.apply()
    return True


def applied_fixes() -> list[str]:
    """Names of the fixes this process applied (empty before ``load_ortmodule``)."""
    return list(_applied or [])
