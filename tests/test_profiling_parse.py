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
                                                            "self_ms": 3.0, "calls": 2}
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
    assert nodes == [{"name": "/a/MatMul", "op": "MatMul", "self_ms": 4.0, "calls": 2, "shapes": [[8, 64], [64, 64]]},
                     {"name": "/b/Gelu", "op": "Gelu", "self_ms": 0.5, "calls": 1, "shapes": []}]


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
