"""The profile's categories (profiling/categories.py, pure): both engines' op names land in the same category,
so a stacked bar per engine compares like with like, and a breakdown adds up to the step it describes."""

from __future__ import annotations

import pytest

from ortnb.profiling import CATEGORIES, breakdown, category
from ortnb.profiling.categories import op_key

# What torch.profiler (ATen, autograd, record_function scopes) and ONNX Runtime's session profiler (node types,
# node names with their module path and _kernel_time) name for the same work in a BERT step.
NAMES = {
    "matrix products": ["aten::addmm", "aten::mm", "aten::bmm", "aten::matmul", "MatMul", "FusedMatMul", "Gemm", "FusedGemm",
                        "/bert/encoder/layer.0/attention/self/MatMul_kernel_time",
                        "evaluate_function: AddmmBackward0"],
    "attention": ["aten::_softmax", "aten::_softmax_backward_data", "aten::scaled_dot_product_attention",
                  "aten::_scaled_dot_product_flash_attention_for_cpu", "Softmax", "SoftmaxGrad_13"],
    "normalisation": ["aten::native_layer_norm", "aten::native_layer_norm_backward", "LayerNormalization",
                      "SkipLayerNormalization", "LayerNormalizationGrad", "SimplifiedLayerNormalization"],
    "activations": ["aten::gelu", "aten::gelu_backward", "aten::tanh", "Gelu", "BiasGelu", "BiasGeluGrad_dX",
                    "FastGeluGrad"],
    "embeddings": ["aten::embedding", "aten::embedding_dense_backward", "Gather", "GatherGrad",
                   "ATen(word_embeddings)"],
    "element-wise/other": ["aten::add_", "aten::mul", "aten::copy_", "aten::native_dropout", "Add", "Cast",
                           "BiasDropout", "aten::_log_softmax", "aten::nll_loss_forward",
                           "SoftmaxCrossEntropyLossInternal", "SoftmaxCrossEntropyLossInternalGrad"],
    "optimizer step": ["Optimizer.step#AdamW.step", "aten::_foreach_add_", "aten::_foreach_mul_",
                       "aten::_fused_adamw_", "Optimizer.step#AdamW.step/aten::sqrt",
                       "Optimizer.zero_grad#AdamW.zero_grad"],
    "data loading": ["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                     "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__/aten::stack"],
}


@pytest.mark.parametrize("expected, name", [(c, n) for c, names in NAMES.items() for n in names])
def test_each_engine_s_op_names_land_in_the_category_of_their_work(expected, name):
    assert category(name) == expected


def test_op_keys_lose_only_the_engines_decoration():
    assert [op_key(n) for n in ("aten::addmm", "SoftmaxGrad_13", "/bert/pooler/dense/Gemm_kernel_time",
                                "evaluate_function: NativeLayerNormBackward0", "aten::gelu_backward")] == \
        ["addmm", "softmax", "gemm", "nativelayernorm", "gelu"]


def test_a_breakdown_adds_up_to_the_step_with_the_rest_as_framework_overhead():
    self_ms = {"aten::addmm": 60.0, "aten::_softmax": 8.0, "aten::native_layer_norm": 4.0, "aten::gelu": 6.0,
               "aten::embedding": 2.0, "aten::add_": 10.0, "aten::_fused_adamw_": 20.0,
               "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__": 2.0}  # over 2 steps
    rows = breakdown(self_ms, steps=2, step_ms=70.0)
    assert [r["category"] for r in rows] == list(CATEGORIES)
    assert {r["category"]: r["ms_per_step"] for r in rows} == {
        "matrix products": 30.0, "attention": 4.0, "normalisation": 2.0, "activations": 3.0, "embeddings": 1.0,
        "element-wise/other": 5.0, "optimizer step": 10.0, "data loading": 1.0, "framework overhead": 14.0}
    assert sum(r["ms_per_step"] for r in rows) == 70.0 and rows[0]["share"] == 30.0 / 70.0
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)


def test_ops_longer_than_the_step_leave_no_negative_overhead_and_bad_steps_are_refused():
    rows = breakdown({"aten::addmm": 90.0}, steps=1, step_ms=80.0)  # profiler skew: the caller reports it
    assert rows[-1] == {"category": "framework overhead", "ms_per_step": 0.0, "share": 0.0}
    with pytest.raises(ValueError, match=r"steps=0: profile at least one step"):
        breakdown({}, steps=0, step_ms=1.0)
    assert all(r["share"] is None for r in breakdown({}, steps=1, step_ms=0.0))
