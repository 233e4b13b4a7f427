"""The arithmetic of a matrix product from the shapes its profiler recorded (pure): what turns the matrix
products' milliseconds into achieved GFLOP/s, set against the machine's measured peak (peak.json).

torch.profiler records an op's input shapes, the logical shapes of the kernels that do the work (``aten::mm``,
``addmm``, ``bmm``, ``baddbmm``: a transposed operand arrives as a transposed view); the composite ops above them
(``aten::matmul``, ``aten::linear``) hold no arithmetic of their own and are not counted, or a product would be
counted twice; their shapes are read as they are (no transposed pairing). ONNX Runtime's trace records each node's ``input_type_shape`` but not its ``transA``/``transB``
attributes, which are read from the graph the session ran (fusions.transposes); without them the pairing of
dimensions that gives the fewest FLOPs is taken, so a rate is never overstated.
"""

from __future__ import annotations

import math

# op key (categories.op_key) -> index of the two operands among the inputs; torch's kernels and ORT's nodes
_OPERANDS = {"mm": (0, 1), "bmm": (0, 1), "addmm": (1, 2), "baddbmm": (1, 2), "addbmm": (1, 2),
             "matmul": (0, 1), "gemm": (0, 1), "fusedgemm": (0, 1), "fusedmatmul": (0, 1)}
TORCH_KERNELS = ("mm", "bmm", "addmm", "baddbmm", "addbmm")  # aten::matmul and aten::linear call these


def matmul_flops(key: str, shapes: list[list[int]], transposed: tuple[bool, bool] | None = None) -> float | None:
    """2 x batch x m x k x n for a product ``key`` with these input shapes; None when it is not one or the
    shapes do not say (a missing operand, dimensions that do not meet). ``transposed``: (transA, transB) as the
    node's attributes say; None: the fewest-FLOPs pairing that fits."""
    where = _OPERANDS.get(key)
    if where is None or len(shapes) <= max(where):
        return None
    a, b = list(shapes[where[0]]), list(shapes[where[1]])
    if not a or not b:
        return None
    a = a if len(a) >= 2 else [1, *a]
    b = b if len(b) >= 2 else [*b, 1]
    (a1, a2), (b1, b2) = a[-2:], b[-2:]
    batch = max(math.prod(a[:-2]), math.prod(b[:-2]))
    pairings = {(False, False): (a1, a2, b2, b1), (False, True): (a1, a2, b1, b2), (True, False): (a2, a1, b2, b1),
                (True, True): (a2, a1, b1, b2)}  # (transA, transB) -> m, k, n and the dimension k must meet
    chosen = [pairings[transposed]] if transposed is not None else list(pairings.values())
    fits = [2.0 * batch * m * k * n for m, k, n, shared in chosen if k == shared]
    return min(fits) if fits else None


def achieved(flops: float, ms: float, peak_flops: float | None) -> dict:
    """{gflops, peak_gflops, of_peak}: what the matrix products reached in their own time (pure)."""
    gflops = flops / (ms / 1000.0) / 1e9 if ms > 0 and flops > 0 else None
    peak = peak_flops / 1e9 if peak_flops else None
    return {"gflops": gflops, "peak_gflops": peak, "of_peak": gflops / peak if gflops and peak else None}
