"""Refuse custom ``torch.autograd.Function``s inside ORTModule instead of training them wrongly.

ORTModule runs custom autograd Functions through its ``torch_interop_utils`` extension, which
does not build on current torch. Without it, the exporter inlines the Function's forward and
ORT differentiates that, silently ignoring the hand-written backward. So while ORTModule
exports a model, calling a custom Function raises; the ORT backend turns that into a clear
error (ort_fallback="error") or a recorded fallback to PyTorch (ort_fallback="allow").
"""

from __future__ import annotations

import sys

import torch

_installed = False


class CustomAutogradFunctionError(RuntimeError):
    pass


def _in_ortmodule_export() -> bool:
    ortmodule = sys.modules.get("onnxruntime.training.ortmodule")
    return bool(ortmodule is not None and ortmodule.ORTMODULE_ONNX_EXPORT_CONTEXT[0])


def guard_custom_autograd_functions() -> None:
    """Wrap ``torch.autograd.Function.apply`` once per process; outside ORT's export it is a pass-through."""
    global _installed
    if _installed:
        return
    original = torch.autograd.Function.apply.__func__

    def apply(cls, *args, **kwargs):
        if _in_ortmodule_export() and not cls.__module__.startswith(("onnxruntime.", "torch.")):
            # Raised as ORT's own "unsupported ONNX model" exception, so ORTModule's fallback policy
            # decides: FALLBACK_DISABLE re-raises it, the default policy runs PyTorch instead.
            from onnxruntime.training.ortmodule._fallback import ORTModuleONNXModelException, wrap_exception

            raise wrap_exception(ORTModuleONNXModelException, CustomAutogradFunctionError(
                f"The model calls the custom torch.autograd.Function {cls.__module__}.{cls.__qualname__}. "
                f"ORTModule cannot run custom autograd Functions on torch {torch.__version__} (its "
                "torch_interop_utils extension does not build) and would silently ignore the Function's backward."))
        return original(cls, *args, **kwargs)

    torch.autograd.Function.apply = classmethod(apply)
    _installed = True
