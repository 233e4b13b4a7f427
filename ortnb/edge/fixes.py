"""What today's stack breaks in ONNX Runtime 1.19.2's artifact generation, and the mend for each.

Like ``backends/ort_compat.py`` for ORTModule, each mend is a ``Fix`` whose ``needed(model)`` looks at the
ONNX model in hand and whose ``apply(model)`` changes it in place; a fix runs only when needed and the
artifacts' manifest lists the ones that ran. tests/test_edge_fixes.py shows that each is needed.

The export flags that avoid other breakage are not fixes but choices, made once in ``artifacts.py``:
the TorchScript exporter (``dynamo=False``), training mode, no constant folding (initializer names stay
PyTorch's), eager attention, and logits as the only output (the loss takes every graph output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

# The newest ONNX IR version ONNX Runtime 1.19.2 loads. onnx 1.23's onnxblock stamps the optimizer model
# with its own IR_VERSION (12 and later): Optimizer() then refuses it with "Unsupported model IR version".
ORT_MAX_IR_VERSION = 10
# torch writes LayerNormalization as one node from opset 17. ORT's gradient builder for it reads the
# node's optional Mean and InvStdDev outputs, which the exporter leaves out.
LAYER_NORM_OUTPUTS = 3


@dataclass(frozen=True)
class Fix:
    name: str
    why: str
    needed: Callable[[object], bool]
    apply: Callable[[object], None]


def _layer_norms_missing_outputs(model) -> list:
    return [n for n in model.graph.node if n.op_type == "LayerNormalization" and len(n.output) < LAYER_NORM_OUTPUTS]


def _add_layer_norm_outputs(model) -> None:
    for index, node in enumerate(_layer_norms_missing_outputs(model)):
        base = node.name or f"layer_norm_{index}"
        while len(node.output) < LAYER_NORM_OUTPUTS:
            node.output.append(f"{base}/saved_{('mean', 'inv_std_dev')[len(node.output) - 1]}")


def _ir_too_new(model) -> bool:
    return model.ir_version > ORT_MAX_IR_VERSION


def _clamp_ir(model) -> None:
    # The graphs use nothing newer than IR 10 knows: their opsets are ones ORT 1.19.2 runs.
    model.ir_version = ORT_MAX_IR_VERSION


# Applied to the exported forward graph, before generate_artifacts builds its gradient.
BEFORE_GRADIENT = (
    Fix("layer_norm_saved_outputs",
        "opset 17+ LayerNormalization has no Mean/InvStdDev outputs; ORT 1.19.2's gradient builder reads them "
        "(GradientBuilderBase::O ... i < node_->OutputDefs().size())",
        lambda model: bool(_layer_norms_missing_outputs(model)), _add_layer_norm_outputs),
)
# Applied to each artifact that generate_artifacts wrote.
AFTER_GENERATION = (
    Fix("ir_version_clamp",
        f"onnx >= 1.19 stamps the optimizer model with an IR version newer than {ORT_MAX_IR_VERSION}, which ORT "
        "1.19.2 refuses to load", _ir_too_new, _clamp_ir),
)
FIXES = BEFORE_GRADIENT + AFTER_GENERATION


def apply(fixes, model, skip: frozenset[str] = frozenset()) -> list[str]:
    """Apply each needed fix (except those in ``skip``, for tests); returns the names of those applied."""
    applied = []
    for fix in fixes:
        if fix.name not in skip and fix.needed(model):
            fix.apply(model)
            applied.append(fix.name)
    return applied
