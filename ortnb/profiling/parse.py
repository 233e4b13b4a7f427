"""What the profilers wrote, as plain data: torch.profiler's averages as ops with self times, and ONNX Runtime's
trace as node times inside the profiled window (pure, but for reading the trace file)."""

from __future__ import annotations

import json
from pathlib import Path

# ORTModule runs its forward and backward graphs inside one autograd Function: torch.profiler sees their whole
# time as that Function's self time, which the ORT trace then splits node by node.
ORT_WRAPPERS = ("ORTModuleFunction", "_ORTModuleFunction")


class ProfileUnreadable(ValueError):
    """A profiler's output that cannot be read; the message names its path."""


def torch_ops(averages, shapes: bool = False, top: int | None = None) -> list[dict]:
    """torch.profiler's key_averages() as [{name, self_ms, calls[, shapes]}], longest self time first."""
    rows = []
    for event in averages:
        row = {"name": event.key, "self_ms": event.self_cpu_time_total / 1000.0, "calls": int(event.count)}
        if shapes:
            row["shapes"] = [list(s) for s in (event.input_shapes or []) if s]
        rows.append(row)
    rows.sort(key=lambda r: -r["self_ms"])
    return rows[:top] if top else rows


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


def ort_nodes(events: list[dict], start_us: float, end_us: float) -> list[dict]:
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
        row = nodes.setdefault(name, {"name": name, "op": args.get("op_name") or name.rsplit("/", 1)[-1],
                                      "self_ms": 0.0, "calls": 0, "shapes": _shapes(args)})
        row["self_ms"] += dur / 1000.0
        row["calls"] += 1
    return sorted(nodes.values(), key=lambda r: -r["self_ms"])


def _shapes(args: dict) -> list[list[int]]:
    """ORT's input_type_shape: [{"float": [16, 128, 384]}, ...] -> [[16, 128, 384], ...]."""
    found = []
    for entry in args.get("input_type_shape") or []:
        if isinstance(entry, dict):
            found.extend(list(shape) for shape in entry.values() if isinstance(shape, list))
    return found
