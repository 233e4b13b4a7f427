"""The learning-rate schedule, moved into the optimizer graph for the browser.

ONNX Runtime Web 1.19.2's training API has no call to set the learning rate (its WebAssembly exports have no
SetLearningRate): every step would run at the optimizer's default, 1e-3. The optimizer graph, though, receives
the step count (1 at the first step). So the bundle's copy of optimizer_model.onnx computes the rate itself,
``peak * max(0, 1 - (step - 1) / steps)``, the linear decay ``loop.learning_rate`` gives the Python training API,
and ignores the rate ORT feeds. The same graph loaded by the Python API trains as ``ortnb.edge.train`` does, to the
float32 rounding of the rate (losses within 1e-6: tests/edge/test_edge_web.py). Torch-free.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OPTIMIZER_OPS = ("AdamWOptimizer", "SGDOptimizerV2")
PREFIX = "ortnb_schedule_"


def scheduled_optimizer(source: Path, target: Path, *, peak: float, steps: int) -> None:
    """Write ``source`` (an artifacts' optimizer_model.onnx) to ``target`` with the linear decay in the graph."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = onnx.load(str(source))
    optimizers = [node for node in graph.graph.node if node.op_type in OPTIMIZER_OPS]
    if len(optimizers) != 1 or optimizers[0].input[0] != "learning_rate":
        raise ValueError(f"{source} is not an optimizer graph ONNX Runtime's artifact generation writes (one "
                         f"{' or '.join(OPTIMIZER_OPS)} node fed learning_rate)")
    constants = {"peak": peak, "steps": float(steps), "one": 1.0, "zero": 0.0}
    graph.graph.initializer.extend(numpy_helper.from_array(np.array([value], np.float32), name(key))
                                   for key, value in constants.items())
    schedule = [
        helper.make_node("Cast", ["step"], [name("step")], to=TensorProto.FLOAT),
        helper.make_node("Sub", [name("step"), name("one")], [name("done")]),  # steps before this one
        helper.make_node("Div", [name("done"), name("steps")], [name("fraction")]),
        helper.make_node("Sub", [name("one"), name("fraction")], [name("left")]),
        helper.make_node("Max", [name("left"), name("zero")], [name("keep")]),  # 0 after the last step
        helper.make_node("Mul", [name("peak"), name("keep")], [name("rate")]),
    ]
    optimizers[0].input[0] = name("rate")
    nodes = schedule + list(graph.graph.node)
    del graph.graph.node[:]
    graph.graph.node.extend(nodes)
    onnx.checker.check_model(graph)
    onnx.save(graph, str(target))


def name(key: str) -> str:
    return PREFIX + key


def rate(peak: float, steps: int, step: int) -> float:
    """What the graph computes at ``step`` (1-based), as ``loop.learning_rate`` does."""
    return peak * max(0.0, 1.0 - (step - 1) / steps)
