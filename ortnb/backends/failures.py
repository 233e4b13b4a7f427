"""Why ONNX Runtime could not train a model: one line naming the operator or type at fault, and what to change.

ORTModule wraps each failure in pages of text (an export error carries the whole TorchScript graph, a
gradient-build error a C++ signature). The cause a user can act on is one line of it; the patterns below
find that line, most specific first. Each was seen on torch 2.13 with onnxruntime-training 1.19.2.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnosis:
    reason: str  # one line: what could not be done, naming the operator, node or type
    advice: str = ""  # what to change in the model, when known


CUSTOM_FUNCTION = re.compile(r"The model calls the custom torch\.autograd\.Function [^\n]*")
NO_GRADIENT = re.compile(r"The gradient builder has not been registered: (\w+) for node (\S+)")
NO_EXPORT = re.compile(r"Exporting the operator '([\w:.]+)' to ONNX opset version (\d+) is not supported")
EXPORT_REFUSED = re.compile(r"SymbolicValueError: (Unsupported: ONNX export of [^\[\n]*?)\s*\[")
NOT_FLATTENABLE = re.compile(r"Unsupported flatten data type: <class '([^']+)'>")

# ONNX operators without a gradient in ORT, with the PyTorch code that produces them and the way around.
NO_GRADIENT_ADVICE = {
    "InstanceNormalization": "torch exports GroupNorm and InstanceNorm without affine weights as ONNX "
                             "InstanceNormalization, which ORT cannot differentiate; with affine=True (the "
                             "default of nn.GroupNorm) ORTModule runs torch's own group norm kernel instead.",
    "CumSum": "torch.cumsum on a tensor that needs a gradient: ORT has no CumSum gradient.",
}
FLATTEN_ADVICE = ("ORTModule passes only tensors, None, numbers and strings, nested in dicts, lists and tuples (a "
                  "transformers ModelOutput or a diffusers BaseOutput is fine): return those, and build other "
                  "objects outside forward().")


def diagnose(error: BaseException) -> Diagnosis:
    text = _all_text(error)
    if match := CUSTOM_FUNCTION.search(text):
        return Diagnosis(match.group(0).strip())
    if match := NO_GRADIENT.search(text):
        op, node = match.groups()
        return Diagnosis(f"the ONNX operator {op} (node {node}) has no gradient in ONNX Runtime",
                         NO_GRADIENT_ADVICE.get(op, "Compute that part with operators ORT can differentiate; the "
                                                    "node name shows where in the model it is."))
    if match := NO_EXPORT.search(text):
        op, opset = match.groups()
        return Diagnosis(f"the ONNX exporter cannot export {op} (opset {opset})",
                         f"Compute that part with exportable operators, or register an export rule with "
                         f"torch.onnx.register_custom_op_symbolic({op!r}, ..., {opset}).")
    if match := EXPORT_REFUSED.search(text):
        return Diagnosis(f"the ONNX exporter refused the model: {match.group(1).strip()}")
    if match := NOT_FLATTENABLE.search(text):
        return Diagnosis(f"the model's forward takes or returns a {match.group(1)}, which ORTModule cannot pass "
                         "through an ONNX graph", FLATTEN_ADVICE)
    if shape_failure := _shape_inference_failure(error):
        return shape_failure
    return Diagnosis(_root_cause(error))


def _all_text(error: BaseException) -> str:
    """Messages and tracebacks of the whole chain: ORT puts the inner error into its own message as text."""
    return "".join(traceback.format_exception(error))


def _chain(error: BaseException):
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _shape_inference_failure(error: BaseException) -> Diagnosis | None:
    """ORT's symbolic shape inference raises plain Python errors (OverflowError on a -inf constant); the node
    it was looking at is a local of its frame."""
    for link in _chain(error):
        tb, node = link.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.endswith("symbolic_shape_infer.py"):
                node = tb.tb_frame.f_locals.get("node", node)
            tb = tb.tb_next
        if node is not None and hasattr(node, "op_type"):
            advice = ""
            if node.op_type == "Where":
                advice = ("If the model calls torch's scaled_dot_product_attention with a boolean attn_mask, this is "
                          "its export: pass an additive float mask (0 and -inf) instead, or use eager attention.")
            return Diagnosis(f"the {node.op_type} node {node.name} failed ONNX Runtime's shape inference "
                             f"({type(link).__name__}: {_first_line(str(link))})", advice)
    return None


def _root_cause(error: BaseException) -> str:
    root = list(_chain(error))[-1]
    return f"{type(root).__name__}: {_first_line(str(root))}"


def _first_line(text: str, limit: int = 300) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[:limit].rstrip() + " ..."
