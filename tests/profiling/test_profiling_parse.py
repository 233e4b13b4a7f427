"""What the profilers wrote, read as plain data (profiling/parse.py and the profile's own arithmetic, pure): ops
counted in the scope they ran in, ORT's nodes inside the profiled window only, and a breakdown that adds up."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ortnb.profiling import parse
from ortnb.profiling.profiles import breakdown_of, unprofiled_ms


def event(name, self_us, parent=None, shapes=()):
    return SimpleNamespace(name=name, self_cpu_time_total=self_us, cpu_parent=parent, input_shapes=list(shapes))


def test_ops_are_counted_in_the_scope_they_ran_in_and_ort_s_own_are_left_to_its_trace():
    step = event("Optimizer.step#AdamW.step", 500)
    batch = event("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100)
    ort = event("ORTModuleFunction", 9000)
    events = [step, event("aten::sqrt", 2000, step, [[4, 4]]), event("aten::sqrt", 1000, step, [[4, 4]]),
              event("aten::sqrt", 3000, None, [[8]]), batch, event("aten::stack", 250, batch),
              ort, event("aten::embedding", 700, ort), event("aten::embedding", 400, event("child", 0, ort))]
    rows = {row["name"]: row for row in parse.torch_ops(events)}
    assert rows["Optimizer.step#AdamW.step/aten::sqrt"] == {"name": "Optimizer.step#AdamW.step/aten::sqrt",
                                                            "self_ms": 3.0, "calls": 2, "flops": 0.0}
    assert rows["aten::sqrt"]["self_ms"] == 3.0 and rows["aten::sqrt"]["calls"] == 1
    assert rows["enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__/aten::stack"]["self_ms"] == 0.25
    assert "aten::embedding" not in rows and rows["ORTModuleFunction"]["self_ms"] == 9.0
    assert [row["self_ms"] for row in rows.values()] == [9.0, 3.0, 3.0, 0.5, 0.25, 0.1]  # longest first
    shaped = parse.torch_ops(events, shapes=True, top=2)
    assert [(r["name"], r["shapes"], r["self_ms"]) for r in shaped] == [
        ("ORTModuleFunction", [], 9.0), ("Optimizer.step#AdamW.step/aten::sqrt", [[4, 4]], 3.0)]


def test_an_aten_node_is_named_by_its_module_and_other_nodes_by_their_type():
    assert parse.node_op("/_original_module/bert/embeddings/word_embeddings/ATen_Grad/ATen_3", "ATen") == \
        "ATen(word_embeddings)"
    assert parse.node_op("/bert/encoder/layer.0/output/dense/MatMul", "FusedMatMul") == "FusedMatMul"
    assert parse.node_op("/bert/pooler/dense/Gemm", None) == "Gemm"
    assert parse.node_op("ATen", "ATen") == "ATen"


def trace():
    node = {"cat": "Node", "ph": "X", "pid": 1, "tid": 1}
    return [
        {"cat": "Session", "name": "session_initialization", "ts": 0, "dur": 100000},
        {**node, "name": "/a/MatMul_kernel_time", "ts": 500, "dur": 9999, "args": {"op_name": "MatMul"}},  # warm-up
        {**node, "name": "/a/MatMul_fence_before", "ts": 2000, "dur": 50, "args": {"op_name": "MatMul"}},
        {**node, "name": "/a/MatMul_kernel_time", "ts": 2000, "dur": 3000,
         "args": {"op_name": "MatMul", "input_type_shape": [{"float": [8, 64]}, {"float": [64, 64]}]}},
        {**node, "name": "/a/MatMul_kernel_time", "ts": 6000, "dur": 1000, "args": {"op_name": "MatMul"}},
        {**node, "name": "/b/Gelu_kernel_time", "ts": 7000, "dur": 500, "args": {"op_name": "Gelu"}},
        {**node, "name": "/b/Gelu_kernel_time", "ts": 12000, "dur": 500, "args": {"op_name": "Gelu"}},  # after
    ]


def test_only_the_kernels_inside_the_window_count():
    nodes = parse.ort_nodes(trace(), 1000, 10000)
    assert nodes == [{"name": "/a/MatMul", "op": "MatMul", "self_ms": 4.0, "calls": 2, "flops": 2 * 8 * 64 * 64,
                      "shapes": [[8, 64], [64, 64]]},
                     {"name": "/b/Gelu", "op": "Gelu", "self_ms": 0.5, "calls": 1, "flops": 0.0, "shapes": []}]


def test_a_damaged_trace_is_named_by_its_path(tmp_path):
    bad = tmp_path / "ort-profile.json"
    bad.write_text('[{"cat": "Node"')
    with pytest.raises(parse.ProfileUnreadable, match="ort-profile.json"):
        parse.read_trace(bad)
    bad.write_text('{"traceEvents": []}')
    with pytest.raises(parse.ProfileUnreadable, match="not a list of events"):
        parse.read_trace(bad)


def test_one_run_s_breakdown_adds_torch_s_ops_and_ort_s_nodes_up_to_the_step(tmp_path):
    path = tmp_path / "ort.json"
    path.write_text(json.dumps(trace()))
    origin_ns = 1_000_000_000_000  # the window is 1 ms .. 10 ms after the trace's origin
    recorded = {"steps": 2, "window": {"began_wall": origin_ns / 1e9 + 0.001, "ended_wall": origin_ns / 1e9 + 0.010,
                                       "wall_ms": 20.0, "first_step": 4, "last_step": 5},
                "ort_traces": [{"path": str(path), "origin_ns": origin_ns}],
                "torch_ops": [{"name": "ORTModuleFunction", "self_ms": 9.0, "calls": 2},
                              {"name": "Optimizer.step#AdamW.step/aten::sqrt", "self_ms": 6.0, "calls": 4}],
                "top_ops": [{"name": "Optimizer.step#AdamW.step/aten::sqrt", "self_ms": 6.0, "calls": 4,
                             "shapes": [[4, 4]]}]}
    one = breakdown_of(recorded)
    shares = {row["category"]: (row["ms_per_step"], row["share"]) for row in one["rows"]}
    assert one["step_ms"] == 10.0
    assert shares["matrix products"] == pytest.approx((2.0, 0.2))
    assert shares["activations"] == pytest.approx((0.25, 0.025))
    assert shares["optimizer step"] == pytest.approx((3.0, 0.3))
    assert shares["framework overhead"] == pytest.approx((4.75, 0.475))  # the wrapper's own time is not counted
    assert sum(ms for ms, _ in shares.values()) == pytest.approx(10.0)
    assert [row["op"] for row in one["top"]] == ["Optimizer.step#AdamW.step/aten::sqrt", "MatMul (/a/MatMul)",
                                                 "Gelu (/b/Gelu)"]
    assert one["notes"] == []


def test_ops_that_add_up_to_more_than_the_step_are_said_to_disagree(tmp_path):
    recorded = {"steps": 1, "window": {"began_wall": 0.0, "ended_wall": 0.01, "wall_ms": 10.0},
                "torch_ops": [{"name": "aten::addmm", "self_ms": 11.0, "calls": 1}]}
    one = breakdown_of(recorded)
    assert "more than the 10.0 ms the step took" in one["notes"][0]
    assert {row["category"]: row["ms_per_step"] for row in one["rows"]}["framework overhead"] == 0.0


def test_the_unprofiled_step_time_is_the_median_of_the_steps_after_the_window():
    records = [{"kind": "step", "step": s, "step_time": t} for s, t in [(1, 9.0), (5, 0.5), (6, 0.03), (7, 0.01), (8, 0.02)]]
    assert unprofiled_ms(records, 5) == pytest.approx(20.0)
    assert unprofiled_ms(records, 8) is None


def test_the_profiled_steps_are_kept_as_the_judge_reads_a_run_with_each_step_s_ms():
    from ortnb.profiling.profiles import profiled_steps

    timed = [(1, 2.0, 4, 0.0), (2, 0.125, 64, 0.0), (3, 0.25, 32, 0.5), (4, 0.125, 64, 0.5), (5, 0.5, 16, 0.5),
             (6, 0.25, 32, 0.0), (7, 0.0625, 128, 0.0)]  # step 1: warm-up; step 7: after the window
    records = [{"kind": "step", "step": step, "step_time": time, "samples_per_s": rate, "tokens_per_s": None,
                "other_cpu": other} for step, time, rate, other in timed]
    assert profiled_steps(records, warmup=1, steps=5) == {
        "samples_per_s": 32, "samples_per_s_iqr": 40.0, "tokens_per_s": None, "tokens_per_s_iqr": None,
        "steps_measured": 5, "contended": True, "contended_share": 0.5, "step_ms": [125.0, 250.0, 125.0, 500.0, 250.0]}


@pytest.mark.parametrize("key, shapes, transposed, flops", [
    ("mm", [[16, 384], [384, 1536]], (False, False), 2 * 16 * 384 * 1536),
    ("addmm", [[1536], [16, 384], [384, 1536]], (False, False), 2 * 16 * 384 * 1536),
    ("bmm", [[12, 128, 32], [12, 32, 128]], (False, False), 2 * 12 * 128 * 32 * 128),
    ("matmul", [[16, 12, 128, 32], [16, 12, 32, 128]], (False, False), 2 * 16 * 12 * 128 * 32 * 128),
    ("fusedmatmul", [[16, 12, 128, 32], [16, 12, 128, 32]], (False, True), 2 * 16 * 12 * 128 * 32 * 128),
    ("gemm", [[16, 384], [2, 384], [2]], None, 2 * 16 * 384 * 2),  # a classifier weight [n, k]: only transB fits
    ("gemm", [[2048, 384], [2048, 384]], None, 2 * 384 * 2048 * 384),  # ambiguous: the fewest FLOPs
    ("mm", [[16, 384], [384]], (False, False), 2 * 16 * 384),  # a vector operand
])
def test_a_matrix_product_s_flops_come_from_its_shapes(key, shapes, transposed, flops):
    from ortnb.profiling.matmul import matmul_flops

    assert matmul_flops(key, shapes, transposed) == flops


def test_a_node_s_transpose_attributes_settle_an_ambiguous_product():
    from ortnb.profiling.matmul import matmul_flops

    shapes = [[16, 12, 128, 32], [16, 12, 128, 32]]  # attention scores: Q @ K^T
    assert matmul_flops("fusedmatmul", shapes, (False, True)) == 2 * 192 * 128 * 32 * 128
    assert matmul_flops("fusedmatmul", shapes) == 2 * 192 * 32 * 128 * 32  # without attributes: never overstated
    assert matmul_flops("gemm", [[2048, 384], [2048, 384]], (False, True)) == 2 * 2048 * 384 * 2048
    assert matmul_flops("gemm", [[2048, 384], [2048, 384]], (False, False)) is None  # does not meet


def test_torch_s_composite_products_are_counted_once_in_the_kernels_they_call():
    assert parse.product_flops("aten::matmul", [[4, 8], [8, 2]]) == 0.0
    assert parse.product_flops("aten::linear", [[4, 8], [2, 8], [2]]) == 0.0
    assert parse.product_flops("aten::mm", [[4, 8], [8, 2]]) == 2 * 4 * 8 * 2
    assert parse.product_flops("aten::addmm", [[2], [4, 8], [8, 2]]) == 2 * 4 * 8 * 2
    assert parse.product_flops("aten::add", [[4, 8], [4, 8]]) == 0.0
    assert parse.product_flops("MatMul", [[4, 8], [8, 2]]) == 2 * 4 * 8 * 2  # an ORT node does its own work
    # torch's shapes are the logical ones: never read as transposed, even where a transposed pairing would fit
    assert parse.product_flops("aten::bmm", [[12, 128, 32], [12, 32, 128]]) == 2 * 12 * 128 * 32 * 128


def test_transpose_attributes_are_read_from_the_graph_the_session_ran(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from ortnb.profiling.fusions import transposes

    nodes = [helper.make_node("Gemm", ["x", "w"], ["y"], name="/dense/Gemm", transB=1),
             helper.make_node("MatMul", ["y", "v"], ["z"], name="/out/MatMul"),
             helper.make_node("Relu", ["z"], ["r"], name="/act/Relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                           for n in ("x", "w", "v")],
                              [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(graph), str(tmp_path / "model_execution_model_training.onnx"))
    assert transposes(tmp_path) == {"/dense/Gemm": (False, True), "/out/MatMul": (False, False)}
    assert transposes(tmp_path / "nothing-here") == {}


def test_what_is_not_a_product_or_has_no_shapes_has_no_flops():
    from ortnb.profiling.matmul import achieved, matmul_flops

    assert matmul_flops("add", [[4, 4], [4, 4]]) is None
    assert matmul_flops("mm", [[4, 4]]) is None
    assert matmul_flops("mm", [[4, 3], [5, 6]]) is None  # dimensions that do not meet
    assert achieved(2e9, 100.0, 40e9) == {"gflops": 20.0, "peak_gflops": 40.0, "of_peak": 0.5}
    assert achieved(0.0, 100.0, 40e9)["gflops"] is None and achieved(2e9, 100.0, None)["of_peak"] is None


def test_the_matrix_products_achieved_rate_counts_torch_s_and_ort_s_products(tmp_path):
    path = tmp_path / "ort.json"
    path.write_text(json.dumps(trace()))
    origin_ns = 1_000_000_000_000
    recorded = {"steps": 2, "window": {"began_wall": origin_ns / 1e9 + 0.001, "ended_wall": origin_ns / 1e9 + 0.010,
                                       "wall_ms": 20.0},
                "ort_traces": [{"path": str(path), "origin_ns": origin_ns}],
                "torch_ops": [{"name": "aten::mm", "self_ms": 1.0, "calls": 1, "flops": 2e6},
                              {"name": "aten::add", "self_ms": 5.0, "calls": 1, "flops": 0.0}]}
    one = breakdown_of(recorded, peak_flops=1e9)
    # torch's mm: 2e6 FLOPs in 1 ms; ORT's MatMul node: 4 ms in the window, FLOPs from the call that recorded shapes
    ort_flops = 2 * 8 * 64 * 64
    assert one["matmul"]["gflops"] == pytest.approx((2e6 + ort_flops) / 0.005 / 1e9)
    assert one["matmul"]["of_peak"] == pytest.approx(one["matmul"]["gflops"])


def test_fused_nodes_are_counted_per_stage_with_where_they_first_appear():
    from collections import Counter

    from ortnb.profiling.fusions import fused_rows, removed_rows

    counts = {"torch_exported": Counter({"Erf": 2, "Div": 3, "MatMul": 4, "LayerNormalization": 1}),
              "optimized_pre_grad": Counter({"Gelu": 2, "Div": 1, "MatMul": 4, "LayerNormalization": 1}),
              "execution_model": Counter({"Gelu": 2, "FusedMatMul": 6, "LayerNormalization": 1})}
    rows = {row["op"]: row for row in fused_rows(counts)}
    assert set(rows) == {"Gelu", "FusedMatMul", "LayerNormalization"}
    assert (rows["Gelu"]["exported"], rows["Gelu"]["forward"], rows["Gelu"]["training"]) == (0, 2, 2)
    assert rows["Gelu"]["where"] == "fused in the forward graph" and "Erf" in rows["Gelu"]["replaces"]
    assert rows["FusedMatMul"]["where"] == "fused with the training graph"
    assert rows["LayerNormalization"]["where"] == "already in the export"
    assert removed_rows(counts) == [{"op": "Div", "exported": 3, "forward": 1, "change": -2},
                                    {"op": "Erf", "exported": 2, "forward": 0, "change": -2}]
