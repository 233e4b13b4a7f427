"""What the profilers wrote, as plain data: torch.profiler's averages as ops with self times, and ONNX Runtime's
trace as node times inside the profiled window (pure, but for reading the trace file)."""

from __future__ import annotations

import json
from pathlib import Path

from . import categories
from .matmul import TORCH_KERNELS, matmul_flops

# ORTModule runs its forward and backward graphs inside one autograd Function: torch.profiler sees their whole
# time as that Function's self time, which the ORT trace then splits node by node.
ORT_WRAPPERS = ("ORTModuleFunction", "_ORTModuleFunction")


class ProfileUnreadable(ValueError):
    """A profiler's output that cannot be read; the message names its path."""


# torch.profiler's record_function scopes whose ops belong to them whatever the op: AdamW's aten::sqrt or
# addcdiv_ is the optimizer's time, not element-wise model work.
SCOPES = ("Optimizer.", "enumerate(DataLoader)")


def scope_of(event) -> str | None:
    """The outermost scope an event ran in: a SCOPES prefix's scope name, "ort" inside ORTModule's Function
    (ONNX Runtime's own trace counts those, ATen fallback ops included), or None."""
    found, parent = None, getattr(event, "cpu_parent", None)
    while parent is not None:
        if is_ort_wrapper(parent.name):
            found = "ort"
        elif parent.name.startswith(SCOPES):
            found = parent.name
        parent = parent.cpu_parent
    return found


def scoped_name(name: str, scope: str | None) -> str:
    """'Optimizer.step#AdamW.step/aten::sqrt': an op named with the scope it belongs to (categories.category
    reads the scope first)."""
    return f"{scope}/{name}" if scope and scope != "ort" else name


def torch_ops(events, shapes: bool = False, top: int | None = None) -> list[dict]:
    """torch.profiler's events (``profiler.events()``) as [{name, self_ms, calls[, shapes]}] summed by op (and
    input shapes with ``shapes``), longest self time first; ops run inside ORTModule are left to ORT's trace."""
    rows: dict[tuple, dict] = {}
    for event in events:
        scope = scope_of(event)
        if scope == "ort":
            continue
        name = scoped_name(event.name, scope)
        recorded = [list(s) for s in (getattr(event, "input_shapes", None) or []) if s]
        found = recorded if shapes else []
        key = (name, repr(found)) if shapes else (name,)
        row = rows.setdefault(key, {"name": name, "self_ms": 0.0, "calls": 0, "flops": 0.0,
                                    **({"shapes": found} if shapes else {})})
        row["self_ms"] += event.self_cpu_time_total / 1000.0
        row["calls"] += 1
        row["flops"] += product_flops(name, recorded)
    ordered = sorted(rows.values(), key=lambda r: -r["self_ms"])
    return ordered[:top] if top else ordered


def is_ort_wrapper(name: str) -> bool:
    return any(wrapper in name for wrapper in ORT_WRAPPERS)


def read_trace(path: Path) -> list[dict]:
    """An ONNX Runtime trace: a JSON list of events (chrome trace format)."""
    try:
        events = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ProfileUnreadable(f"ONNX Runtime's profile {path} cannot be read: {error}") from error
    if not isinstance(events, list):
        raise ProfileUnreadable(f"ONNX Runtime's profile {path} is not a list of events (got "
                                f"{type(events).__name__})")
    return events


def ort_nodes(events: list[dict], start_us: float, end_us: float,
              transposes: dict[str, tuple[bool, bool]] | None = None) -> list[dict]:
    """The node kernels that ran inside [start_us, end_us) (microseconds since the trace's origin), one row per
    node: {name (the node), op (its type), self_ms (all its runs), calls, shapes}. Fences and session events are
    not kernels and are left out."""
    nodes: dict[str, dict] = {}
    for event in events:
        if event.get("cat") != "Node" or not str(event.get("name", "")).endswith("_kernel_time"):
            continue
        ts, dur = event.get("ts"), event.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or not start_us <= ts < end_us:
            continue
        args = event.get("args") or {}
        name = event["name"][: -len("_kernel_time")]
        row = nodes.setdefault(name, {"name": name, "op": node_op(name, args.get("op_name")),
                                      "self_ms": 0.0, "calls": 0, "flops": 0.0, "shapes": _shapes(args)})
        row["self_ms"] += dur / 1000.0
        row["calls"] += 1
        row["flops"] += product_flops(row["op"], _shapes(args), (transposes or {}).get(name))
    return sorted(nodes.values(), key=lambda r: -r["self_ms"])


def product_flops(name: str, shapes: list[list[int]], transposed: tuple[bool, bool] | None = None) -> float:
    """The FLOPs of one call when it is a matrix product that does its own arithmetic, else 0 (torch's
    composite aten::matmul and aten::linear are counted in the kernels they call: matmul.TORCH_KERNELS)."""
    if categories.category(name) != categories.MATMUL:
        return 0.0
    key = categories.op_key(name)
    if "::" in name:  # torch: the logical shapes of a kernel (a transposed operand is a transposed view)
        if key not in TORCH_KERNELS:
            return 0.0
        transposed = (False, False)
    return matmul_flops(key, shapes, transposed) or 0.0


def node_op(name: str, op: str | None) -> str:
    """A node's op type; an ``ATen`` node (an op ORT hands back to PyTorch, such as an embedding) is named with
    the module it belongs to, ``ATen(word_embeddings)``, since the type alone says nothing of what it does."""
    op = op or name.rsplit("/", 1)[-1]
    if op != "ATen":
        return op
    module = [part for part in name.split("/") if part and not part.startswith("ATen")]
    return f"ATen({module[-1]})" if module else op


def _shapes(args: dict) -> list[list[int]]:
    """ORT's input_type_shape: [{"float": [16, 128, 384]}, ...] -> [[16, 128, 384], ...]."""
    found = []
    for entry in args.get("input_type_shape") or []:
        if isinstance(entry, dict):
            found.extend(list(shape) for shape in entry.values() if isinstance(shape, list))
    return found
