"""The arithmetic of a matrix product from the shapes its profiler recorded (pure): what turns the matrix
products' milliseconds into achieved GFLOP/s, set against the machine's measured peak (peak.json).

torch.profiler records an op's input shapes; ONNX Runtime's trace records each node's ``input_type_shape``.
Neither records transpose attributes, so the shared dimension is found from the shapes (A's last against B's
first, then the transposed pairings, in that order): exact for the products of a transformer step, where a
square weight reads the same either way.
"""

from __future__ import annotations

import math

# op key (categories.op_key) -> index of the two operands among the inputs
_OPERANDS = {"mm": (0, 1), "bmm": (0, 1), "matmul": (0, 1), "gemm": (0, 1), "fusedgemm": (0, 1),
             "fusedmatmul": (0, 1), "addmm": (1, 2), "baddbmm": (1, 2), "addbmm": (1, 2), "linear": (0, 1)}


def matmul_flops(key: str, shapes: list[list[int]]) -> float | None:
    """2 x batch x m x k x n for a product ``key`` with these input shapes; None when it is not one or the
    shapes do not say (a missing operand, dimensions that do not meet)."""
    where = _OPERANDS.get(key)
    if where is None or len(shapes) <= max(where):
        return None
    a, b = list(shapes[where[0]]), list(shapes[where[1]])
    if not a or not b:
        return None
    if key == "linear":  # x [..., k] @ W[n, k].T
        return 2.0 * math.prod(a[:-1]) * a[-1] * b[0] if len(b) == 2 and b[1] == a[-1] else None
    a = a if len(a) >= 2 else [1, *a]
    b = b if len(b) >= 2 else [*b, 1]
    (a1, a2), (b1, b2) = a[-2:], b[-2:]
    batch = max(math.prod(a[:-2]), math.prod(b[:-2]))
    for m, k, n, shared in ((a1, a2, b2, b1), (a1, a2, b1, b2), (a2, a1, b2, b1), (a2, a1, b1, b2)):
        if k == shared:
            return 2.0 * batch * m * k * n
    return None


def achieved(flops: float, ms: float, peak_flops: float | None) -> dict:
    """{gflops, peak_gflops, of_peak}: what the matrix products reached in their own time (pure)."""
    gflops = flops / (ms / 1000.0) / 1e9 if ms > 0 and flops > 0 else None
    peak = peak_flops / 1e9 if peak_flops else None
    return {"gflops": gflops, "peak_gflops": peak, "of_peak": gflops / peak if gflops and peak else None}
