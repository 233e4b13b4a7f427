"""What ORT changed in the graph it trains: the fused nodes its passes created, by type and count, and which
operators of the export they replaced, read from the graphs ORTModule writes when asked (``save_onnx``).

ORTModule writes ``<prefix>_<stage>_training.onnx`` per stage of its pipeline; three of them tell the story:
``torch_exported`` (what torch.onnx.export made of the model), ``optimized_pre_grad`` (the forward graph after
ORT's graph transformers) and ``execution_model`` (forward + backward, as the session runs it). The counts come
from the files; only the names of fused types to look for, and the pattern each one stands for, are written
down here (from ONNX Runtime's transformer sources: gelu_fusion.cc, layer_norm_fusion.cc, matmul_scale_fusion.cc,
bias_dropout_fusion.cc, ...).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

EXPORTED, FORWARD, TRAINING = "torch_exported", "optimized_pre_grad", "execution_model"
PREFIX = "model"

REPLACES = {
    "Gelu": "Div, Erf, Add, Mul, Mul: x * 0.5 * (1 + erf(x / sqrt(2)))",
    "FastGelu": "the tanh approximation of GELU (Mul, Pow, Add, Tanh, ...)",
    "BiasGelu": "Add (a bias) + Gelu",
    "QuickGelu": "Mul + Sigmoid + Mul",
    "LayerNormalization": "ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add",
    "SimplifiedLayerNormalization": "Pow, ReduceMean, Add, Sqrt, Div, Mul (RMS norm)",
    "SkipLayerNormalization": "Add (the residual) + LayerNormalization",
    "EmbedLayerNormalization": "the embeddings' Gathers and Adds + LayerNormalization",
    "FusedMatMul": "MatMul with a Transpose of an input or a scaling Mul folded in",
    "FusedGemm": "Gemm + its activation",
    "BiasDropout": "Add (a bias, and a residual) + Dropout",
    "BitmaskDropout": "Dropout keeping its mask as bits",
    "BiasSoftmax": "Add (the attention mask) + Softmax",
    "Attention": "the attention block's MatMuls, Softmax, Transposes and Reshapes",
    "MultiHeadAttention": "the attention block's MatMuls, Softmax, Transposes and Reshapes",
    "SoftmaxCrossEntropyLossInternal": "LogSoftmax + NegativeLogLikelihoodLoss (ORTModule's export of cross_entropy)",
    "ConcatTraining": "Concat, also giving the split sizes its gradient needs",
}


def graph_files(folder: Path, prefix: str = PREFIX) -> dict[str, Path]:
    """stage -> file of the graphs ORTModule wrote into ``folder``."""
    found = {}
    for path in sorted(Path(folder).glob(f"{prefix}_*_training.onnx")):
        found[path.name.removeprefix(f"{prefix}_").removesuffix("_training.onnx")] = path
    return found


def op_counts(path: Path) -> Counter:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return Counter(node.op_type for node in model.graph.node)


def fused_rows(counts: dict[str, Counter]) -> list[dict]:
    """One row per fused type found in any stage: its count per stage, where it first appears and the pattern
    it stands for (pure)."""
    rows = []
    for op, replaces in REPLACES.items():
        found = {stage: counts.get(stage, Counter()).get(op, 0) for stage in (EXPORTED, FORWARD, TRAINING)}
        if not any(found.values()):
            continue
        where = ("already in the export" if found[EXPORTED] else "fused in the forward graph" if found[FORWARD]
                 else "fused with the training graph")
        rows.append({"op": op, "exported": found[EXPORTED], "forward": found[FORWARD], "training": found[TRAINING],
                     "where": where, "replaces": replaces})
    return rows


def removed_rows(counts: dict[str, Counter], top: int = 8) -> list[dict]:
    """The export's operators that ORT's forward passes removed or made rarer, most removed first (pure)."""
    before, after = counts.get(EXPORTED, Counter()), counts.get(FORWARD, Counter())
    rows = [{"op": op, "exported": n, "forward": after.get(op, 0), "change": after.get(op, 0) - n}
            for op, n in before.items() if after.get(op, 0) < n]
    rows.sort(key=lambda r: (r["change"], r["op"]))
    return rows[:top]


def transposes(folder: Path, prefix: str = PREFIX) -> dict[str, tuple[bool, bool]]:
    """Node name -> (transA, transB) of the matrix products in the graph the session ran (execution_model):
    what the trace's shapes alone cannot say (matmul.py)."""
    import onnx

    path = graph_files(folder, prefix).get(TRAINING)
    if path is None:
        return {}
    found = {}
    for node in onnx.load(str(path), load_external_data=False).graph.node:
        if node.op_type in ("MatMul", "FusedMatMul", "Gemm", "FusedGemm"):
            attributes = {a.name: a.i for a in node.attribute if a.name in ("transA", "transB")}
            found[node.name] = (bool(attributes.get("transA", 0)), bool(attributes.get("transB", 0)))
    return found


def summary(folder: Path, prefix: str = PREFIX) -> dict | None:
    """{nodes: {stage: n}, fused: [...], removed: [...]} from the graphs in ``folder``; None without them."""
    files = graph_files(folder, prefix)
    if EXPORTED not in files or FORWARD not in files:
        return None
    counts = {stage: op_counts(path) for stage, path in files.items() if stage in (EXPORTED, FORWARD, TRAINING)}
    return {"nodes": {stage: sum(found.values()) for stage, found in counts.items()}, "fused": fused_rows(counts),
            "removed": removed_rows(counts)}
