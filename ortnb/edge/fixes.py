"""What today's stack breaks in ONNX Runtime 1.19.2's artifact generation, and the mend for each.

Like ``backends/ort_compat.py`` for ORTModule, each mend is a ``Fix`` whose ``needed(model)`` looks at the
ONNX model in hand and whose ``apply(model)`` changes it in place; a fix runs only when needed and the
artifacts' manifest lists the ones that ran. tests/edge/test_edge_fixes.py shows that each is needed.

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


# Ops whose ORT 1.19.2 gradient reduces over the broadcast axes, which it finds by comparing the inputs' (for
# Expand: the input's and output's) inferred shapes. Two different symbols there are taken as equal
# (ComputeBroadcastBackwardAxes: "symbolic dimension expects to match ... a relaxing case"), so a broadcast
# input gets no ReduceSum.
BROADCASTING = ("Add", "Sub", "Mul", "Div", "Expand")


def _inferred_dims(model) -> dict:
    """{tensor: its dims} after onnx's shape inference, the pass generate_artifacts runs before the gradient:
    onnx (1.23 here) gives every dimension it cannot infer a fresh symbol of its own (unk__N)."""
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model)
    return {v.name: list(v.type.tensor_type.shape.dim) for v in (*inferred.graph.value_info, *inferred.graph.input,
                                                                  *inferred.graph.output)
            if v.type.tensor_type.HasField("shape")}


def _unequal_symbols(a, b) -> bool:
    return any(x.dim_param and y.dim_param and x.dim_param != y.dim_param for x, y in zip(reversed(a), reversed(b)))


def _ambiguous(node, dims: dict) -> bool:
    pair = (node.input[0], node.output[0]) if node.op_type == "Expand" else tuple(node.input[:2])
    return len(pair) == 2 and all(name in dims for name in pair) and _unequal_symbols(dims[pair[0]], dims[pair[1]])


def ambiguous_broadcasts(model, trainable=None) -> list[str]:
    """The broadcasting nodes whose gradient ORT 1.19.2 would build on two different symbols taken as equal;
    with ``trainable`` (parameter names), only those a gradient flows through."""
    dims = _inferred_dims(model)
    downstream = _downstream(model, trainable) if trainable is not None else None
    return [node.name for node in model.graph.node if node.op_type in BROADCASTING and _ambiguous(node, dims)
            and (downstream is None or any(name in downstream for name in node.input))]


def _downstream(model, sources) -> set[str]:
    """Every tensor computed from ``sources`` (nodes are in topological order in an ONNX graph)."""
    reached = set(sources)
    for node in model.graph.node:
        if any(name in reached for name in node.input):
            reached.update(node.output)
    return reached


def _add_symbolic_shapes(model) -> None:
    """Annotate every tensor with the shape ONNX Runtime's symbolic shape inference (the one ORTModule runs)
    finds: it follows Shape/Slice arithmetic, so BERT's position embeddings come out [1, sequence, hidden]
    beside [batch, sequence, hidden], and the gradient builder sees the broadcast. onnx's later inference keeps
    these shapes. Left as it was where that inference fails: export_artifacts then refuses what stays unclear."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    # Its infer_shapes() would save a model to sym_shape_infer_temp.onnx in the working folder when inference
    # is incomplete; the same steps without that save (onnxruntime 1.19.2, the last release):
    inference = SymbolicShapeInference(2**31 - 1, True, False, 0)  # int_max, auto_merge, guess_output_rank, verbose
    try:
        inference._preprocess(model)
        complete = False
        while inference.run_:
            complete = inference._infer_impl()
    except Exception:  # noqa: BLE001 - an op it does not know: the refusal after the fixes names the node
        return
    if not complete:
        return
    del model.graph.value_info[:]
    model.graph.value_info.extend(inference.out_mp_.graph.value_info)


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
    # Last: it annotates the graph as the fixes above left it.
    Fix("symbolic_shapes",
        "onnx's shape inference names each dimension it cannot infer with a symbol of its own, and ORT 1.19.2's "
        "gradient builder takes two different symbols as equal: a broadcast add (BERT's [1, seq, hidden] position "
        "embeddings onto [batch, seq, hidden]) gets no ReduceSum, so the gradient is wrong and GatherGrad writes "
        "past its buffer (heap corruption: NaN losses, 'Shape of gradient and momentum_1 mismatch', a dead worker)",
        lambda model: bool(ambiguous_broadcasts(model)), _add_symbolic_shapes),
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
