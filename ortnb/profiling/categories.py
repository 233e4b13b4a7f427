"""Where a step goes, in categories both engines share (issue 22's first piece; pure). torch.profiler names
ops as ATen does (``aten::addmm``, ``aten::native_layer_norm_backward``, ``Optimizer.step#AdamW.step``);
ONNX Runtime's session profiler names node types (``MatMul``, ``FusedMatMul``, ``SkipLayerNormalization``,
``SoftmaxGrad_13``, ``GatherGrad``). One ordered table of rules maps either to the same category, so a stacked
bar per engine compares like with like; what no op accounts for is the framework's overhead.

Times given to ``breakdown`` must be self times (an op's own time without the ops it called), or a parent
such as ``aten::linear`` would count its ``aten::addmm`` twice.
"""

from __future__ import annotations

import re

MATMUL, ATTENTION, NORM, ACTIVATION, EMBEDDING = ("matrix products", "attention", "normalisation", "activations",
                                                 "embeddings")
ELEMENTWISE, OPTIMIZER, DATA, OVERHEAD = "element-wise/other", "optimizer step", "data loading", "framework overhead"
CATEGORIES = (MATMUL, ATTENTION, NORM, ACTIVATION, EMBEDDING, ELEMENTWISE, OPTIMIZER, DATA, OVERHEAD)

# First match wins, so the specific come before the general (FusedMatMul before MatMul does not matter, but
# SkipLayerNormalization must not read as an element-wise Add, and _foreach_mul_ is the optimizer, not a Mul).
_RULES = [
    (OPTIMIZER, r"^optimizer\.|^foreach_|^fused_adamw?|adamw?(_|\.)step|^adam|^lamb|^sgd"),
    # the loss: cross-entropy holds a softmax, which must not read as attention
    (ELEMENTWISE, r"crossentropy|cross_entropy|nll_loss|log_softmax"),
    (DATA, r"dataloader|^enumerate\(|collat|^pin_memory"),
    (ATTENTION, r"softmax|attention|^sdpa|scaled_dot_product|^_efficient_attention|^baddbmm"),
    (MATMUL, r"matmul|^mm$|^addmm|^bmm$|gemm|^linear$|^einsum$|^conv"),  # FusedGemm too
    (NORM, r"layer_?norm|layernormalization|^(native_)?(batch|group|instance)_?norm|rmsnorm|simplifiedlayernorm"),
    (ACTIVATION, r"gelu|relu|silu|swish|tanh|sigmoid|^erf$|^quickgelu"),
    (EMBEDDING, r"embedding|^gather$|^gathergrad$|^index_select$|^gatherelements$|^embed"),
]
_COMPILED = [(category, re.compile(pattern)) for category, pattern in _RULES]


def op_key(name: str) -> str:
    """The op's name without engine decoration: ``aten::`` and other namespaces, autograd's
    ``evaluate_function: AddmmBackward0`` wrapper, ORT's ``_kernel_time`` and opset suffixes, gradient
    markers (``Grad``, ``Backward0``, ``_backward``), lower case."""
    key = name.split("evaluate_function:")[-1].strip()
    key = key.rsplit("/", 1)[-1]  # ORT's node names carry the module path: /bert/encoder/.../MatMul
    key = key.rsplit("::", 1)[-1]
    key = re.sub(r"_kernel_time$", "", key)
    key = re.sub(r"_\d+$", "", key)  # SoftmaxGrad_13: an opset version
    key = re.sub(r"(backward\d*|_backward|grad)$", "", key, flags=re.IGNORECASE)
    return key.strip("_").lower()


def category(name: str) -> str:
    """The category of an op of either engine; element-wise/other where no rule names it."""
    key = op_key(name)
    if name.lower().startswith(("optimizer.", "enumerate(")):  # torch.profiler's record_function scopes
        key = name.lower()
    for found, pattern in _COMPILED:
        if pattern.search(key):
            return found
    return ELEMENTWISE


def breakdown(self_ms: dict[str, float], steps: int, step_ms: float) -> list[dict]:
    """Rows of (category, ms_per_step, share) in CATEGORIES order, from each op's total self time over
    ``steps`` profiled steps of ``step_ms`` each (the profiled median step time). The framework overhead is the
    step time no op accounts for (0 when the ops sum to more, which the caller reports as profiler skew)."""
    if steps <= 0:
        raise ValueError(f"steps={steps}: profile at least one step")
    totals = dict.fromkeys(CATEGORIES, 0.0)
    for name, ms in self_ms.items():
        totals[category(name)] += ms / steps
    totals[OVERHEAD] = max(0.0, step_ms - sum(totals.values()))
    return [{"category": name, "ms_per_step": ms, "share": ms / step_ms if step_ms > 0 else None}
            for name, ms in totals.items()]
