"""An inference export never uses ORTModule's training symbolics.

When ORTModule exports a model for training it registers, process-wide, its own ONNX symbolics for about 26 aten
ops (embedding, cross-entropy, ...). They write ATen nodes that only onnxruntime-training's ATen executor runs. A
model exported afterwards in the same process (a kernel that trained with ORT, then pressed Export) passed its
parity check there, where the executor is loaded, and failed in every plain onnxruntime: "ATenOperatorExecutor is
not initialized". The export lifts those registrations for its duration and puts them back after.
"""
from __future__ import annotations

import contextlib
import sys

REGISTRY = "onnxruntime.training.ortmodule._custom_op_symbolic_registry"
ATEN_DOMAIN = "org.pytorch.aten"


def _exporter_registry():
    try:
        from torch.onnx._internal.torchscript_exporter import registration  # torch >= 2.9
    except ImportError:  # older torch kept it here
        from torch.onnx._internal import registration
    return registration.registry


@contextlib.contextmanager
def without_training_symbolics():
    """Inside: torch's exporter has none of ORTModule's symbolics (a no-op where ORTModule never loaded)."""
    module = sys.modules.get(REGISTRY)
    if module is None:
        yield
        return
    from torch.onnx import register_custom_op_symbolic, unregister_custom_op_symbolic

    registry, lifted = _exporter_registry(), []
    for name in module.CustomOpSymbolicRegistry._SYMBOLICS:
        qualified = f"aten{name}" if name.startswith("::") else name  # as torch stores "::embedding"
        group = registry.get_function_group(qualified)
        for opset, function in list(getattr(getattr(group, "_functions", None), "_overrides", {}).items()):
            unregister_custom_op_symbolic(qualified, opset)
            lifted.append((qualified, function, opset))
    try:
        yield
    finally:
        for qualified, function, opset in lifted:
            register_custom_op_symbolic(qualified, function, opset)


def training_only_nodes(path) -> list[str]:
    """The op types of an ONNX file's nodes that only ORT training runs (ATen fallbacks), for a clear refusal."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return sorted({f"{node.domain}::{node.op_type}" for node in model.graph.node
                   if node.domain == ATEN_DOMAIN or node.op_type == "ATen"})
