"""``ortnb profile`` on real runs (tiny-bert, both engines, worker processes): every op of the profiled steps
lands in one of the shared categories, the categories add up to the step, ORT's own nodes are counted for the
ORT run, and bad input is refused before any run starts. The pure arithmetic is in test_profiling_parse.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ortnb
from ortnb.cli import main
from ortnb.config import RunConfig
from ortnb.errors import ConfigError
from ortnb.profiling import CATEGORIES
from ortnb.profiling.profiles import _fallback_note, _checked
from ortnb.profiling.views import stacked_bars, text
from .._helpers import rows, write_rows


def base(tmp_path: Path, **changes) -> RunConfig:
    return RunConfig(**{"model": "tiny-bert", "dataset": write_rows(tmp_path, ".jsonl", rows(96)), "batch_size": 8,
                        "seq_len": 32, "output_dir": str(tmp_path / "runs"), **changes})


@pytest.mark.slow
def test_the_profile_command_splits_both_engines_steps_into_the_same_categories(tmp_path, capsys):
    dataset = write_rows(tmp_path, ".jsonl", rows(96))
    code = main(["profile", "--model", "tiny-bert", "--dataset", dataset, "--batch-size", "8", "--seq-len", "32",
                 "--steps", "3", "--warmup", "2", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    data = json.loads((tmp_path / "out" / "profile.json").read_text())
    assert "<h1>Where a training step goes</h1>" in (tmp_path / "out" / "profile.html").read_text()
    assert data["engines"] == {"eager + AdamW": "pytorch", "ort + AdamW": "onnxruntime"}
    for label, step_ms in data["step_ms"].items():
        rows_of = [row for row in data["table"] if row["label"] == label]
        assert [row["category"] for row in rows_of] == list(CATEGORIES)  # the same categories, in the same order
        measured = sum(row["ms_per_step"] for row in rows_of if row["category"] != "framework overhead")
        assert 0 < measured <= step_ms * 1.05, (label, measured, step_ms)
        assert sum(row["ms_per_step"] for row in rows_of) == pytest.approx(step_ms, rel=0.05)
        by_category = {row["category"]: row["ms_per_step"] for row in rows_of}
        assert by_category["matrix products"] > 0 and by_category["optimizer step"] > 0
        assert data["unprofiled_step_ms"][label] > 0
        assert f"{label} [{data['engines'][label]}]: profiled" in printed
    # ORT's own trace was read: its kernels are in the ORT run's ops. Not asked of the 10 longest: on tiny BERT,
    # AdamW's element-wise ops over the 2M-parameter embeddings can outlast every kernel of the model (a CI run
    # under load listed none of ORT's there)
    from ortnb.profiling.profiles import breakdown_of

    [recorded] = [json.loads(path.read_text()) for path in (tmp_path / "runs").glob("*/profile.json")
                  if json.loads(path.read_text()).get("ort_traces")]
    every_op = breakdown_of(recorded, top_n=10_000)["top"]
    assert any(row["engine_of_op"] == "onnxruntime" and row["ms_per_step"] > 0 for row in every_op), every_op
    assert not any(row["op"].startswith("ORTModuleFunction") for row in data["top_ops"])  # split, not one blob
    eager_ops = [row for row in data["top_ops"] if row["label"] == "eager + AdamW"]
    assert all(row["engine_of_op"] == "pytorch" for row in eager_ops) and any(row["shapes"] for row in eager_ops)
    for label in data["step_ms"]:  # both engines' products were counted with their shapes
        assert data["matmul"][label]["gflops"] > 0 and data["matmul"][label]["peak_gflops"] > 0
    fused = {row["op"]: row for row in data["fusions"]["ort + AdamW"]["fused"]}
    assert fused["Gelu"]["exported"] == 0 and fused["Gelu"]["forward"] > 0  # ORT's Gelu fusion, from its graphs
    assert "eager + AdamW" not in data["fusions"]
    assert "Gelu: " in printed and "fused in the forward graph, replacing Div, Erf" in printed
    assert "side by side:" in printed and "in all: " in printed  # 3 profiled steps are too few for the judge:
    assert "not conclusive: eager + AdamW [pytorch] has too few measured steps (3, at least 5 needed)" in printed
    assert [len(data["profiled_steps"][label]["step_ms"]) for label in data["step_ms"]] == [3, 3]
    assert [trace["x"] for trace in stacked_bars(data)][0] == ["eager + AdamW [pytorch]", "ort + AdamW [onnxruntime]"]


@pytest.mark.parametrize("changes, match", [
    ({"steps": 0}, "steps=0: give a whole number of steps >= 1"),
    ({"warmup": 0}, "warmup=0"),
    ({"steps": 2.5}, "steps=2.5"),
])
def test_bad_step_counts_are_refused_before_any_run(tmp_path, changes, match):
    with pytest.raises(ConfigError, match=match):
        ortnb.profile(base(tmp_path), **changes)
    assert not (tmp_path / "runs").exists()


def test_every_bad_configuration_is_named_before_any_run(tmp_path):
    good = base(tmp_path)
    with pytest.raises(ConfigError) as raised:
        ortnb.profile([good, good.replace(batch_size=0), "ort"])
    words = str(raised.value)
    assert "batch_size" in words and "configuration 2: expected a RunConfig, got str" in words
    with pytest.raises(ConfigError, match="two configurations have the same label"):
        ortnb.profile([good, good])
    with pytest.raises(ConfigError, match="no configuration to profile"):
        ortnb.profile([])
    assert not (tmp_path / "runs").exists()


def test_the_cli_refuses_bad_input_with_exit_code_2(tmp_path, capsys):
    assert main(["profile", "--model", "tiny-bert", "--steps", "0", "--runs", str(tmp_path / "runs")]) == 2
    assert "steps=0" in capsys.readouterr().err
    assert main(["profile", "--config", "x.json", "--vary", "backend=ort", "--runs", str(tmp_path / "runs")]) == 2
    assert "use one of them" in capsys.readouterr().err


def test_a_profile_run_trains_warmup_plus_twice_the_profiled_steps_and_nothing_else(tmp_path):
    prepared = _checked([base(tmp_path, eval_every=2, target=0.9)], steps=4, warmup=3)[0]
    assert (prepared.max_steps, prepared.warmup_steps, prepared.evaluate, prepared.target) == (11, 3, False, None)


def test_an_ort_run_that_fell_back_says_whose_profile_it_is(tmp_path):
    assert "ORTModule fell back" in _fallback_note(base(tmp_path, backend="ort"), "pytorch")[0]
    assert _fallback_note(base(tmp_path, backend="ort"), "onnxruntime") == []
    assert _fallback_note(base(tmp_path, backend="eager"), "pytorch") == []


def test_the_text_view_shows_each_category_s_share_and_what_profiling_cost():
    data = {"step_ms": {"a": 10.0}, "unprofiled_step_ms": {"a": 8.0}, "engines": {"a": "onnxruntime"},
            "notes": {"a": ["a note"]}, "runs": {"a": "/r"},
            "table": [{"label": "a", "category": "matrix products", "ms_per_step": 6.0, "share": 0.6},
                      {"label": "a", "category": "framework overhead", "ms_per_step": 4.0, "share": 0.4}],
            "top_ops": [{"label": "a", "op": "MatMul (/m)", "engine_of_op": "onnxruntime", "category": "matrix products",
                         "ms_per_step": 6.0, "calls_per_step": 2.0, "shapes": [[8, 64], [64, 64]]}]}
    assert text(data).splitlines() == [
        "a [onnxruntime]: profiled 10.0 ms a step, 8.0 without the profiler (+25%)",
        "  matrix products          6.00 ms   60%",
        "  framework overhead       4.00 ms   40%",
        "       6.00 ms  MatMul (/m)  (matrix products; [8, 64], [64, 64])",
        "  note: a note"]
    bars = {trace["name"]: trace for trace in stacked_bars(data)}
    assert bars["matrix products"]["y"] == [6.0] and bars["matrix products"]["text"] == ["60%"]
    assert bars["attention"]["y"] == [0.0] and bars["attention"]["text"] == [""]


def test_a_profile_measured_under_load_says_so():
    from ortnb.profiling.profiles import _contention_note

    assert "measured while other processes used the CPU (40% of its steps)" in \
        _contention_note({"contended": True, "contended_share": 0.4})[0]
    assert _contention_note({"contended": False}) == [] and _contention_note({}) == []


def steps_of(step_ms, **changes):
    """A configuration's profiled steps as profiles.profiled_steps keeps them: quiet, uncontended, 5 steps."""
    return {"samples_per_s": 20.0, "samples_per_s_iqr": 2.0, "steps_measured": len(step_ms), "contended": False,
            "step_ms": step_ms, **changes}


def side_by_side(first, second, step_ms, cells, profiled_steps, fusions=None):
    rows = [{"label": label, "category": name, "ms_per_step": cells[label].get(name, 0.0)}
            for label in (first, second) for name in CATEGORIES]
    return {"step_ms": step_ms, "engines": {first: "pytorch", second: "onnxruntime"}, "table": rows,
            "fusions": fusions or {}, "profiled_steps": profiled_steps}


def test_two_profiles_are_set_side_by_side_in_words_with_the_fusion_that_explains_a_gap():
    from ortnb.profiling.views import differences

    data = side_by_side("eager", "ort", {"eager": 30.0, "ort": 21.0},
                        {"eager": {"activations": 9.0, "matrix products": 10.0, "optimizer step": 5.0, "attention": 1.2},
                         "ort": {"activations": 2.0, "matrix products": 11.0, "optimizer step": 5.0, "attention": 1.0}},
                        {"eager": steps_of([29.6, 29.8, 30.0, 30.2, 30.4]),  # p25-p75: 29.7-30.3
                         "ort": steps_of([20.8, 20.9, 21.0, 21.1, 21.2])},
                        {"ort": {"fused": [{"op": "Gelu", "exported": 0, "training": 6, "replaces": "Div, Erf"},
                                           {"op": "LayerNormalization", "exported": 13, "training": 13,
                                            "replaces": "ReduceMean"}]}})
    assert differences(data, "eager", "ort") == [
        "ort [onnxruntime] spends 7.0 ms less a step in activations than eager [pytorch] (2.0 against 9.0 ms): "
        "its graph runs 6 Gelu kernels, each from Div, Erf",
        "eager [pytorch] spends 1.0 ms less a step in matrix products than ort [onnxruntime] (10.0 against 11.0 ms)",
        "in all, a step of ort [onnxruntime] takes 9.0 ms less (21.0 against 30.0 ms, profiled)"]


def the_same_adamw_on_both_engines(eager_steps, ort_steps):
    """The issue's profile: both engines ran PyTorch's AdamW, 12.1 against 40.6 ms a step in it."""
    return side_by_side("eager + AdamW", "ort + AdamW", {"eager + AdamW": 400.0, "ort + AdamW": 410.0},
                        {"eager + AdamW": {"optimizer step": 12.1, "matrix products": 200.0},
                         "ort + AdamW": {"optimizer step": 40.6, "matrix products": 199.0}},
                        {"eager + AdamW": eager_steps, "ort + AdamW": ort_steps})


def test_a_gap_inside_the_profiled_steps_own_spread_is_said_to_be_noise_not_a_finding():
    from ortnb.profiling.views import differences, step_noise_ms

    data = the_same_adamw_on_both_engines(steps_of([360.0, 380.0, 400.0, 420.0, 440.0]),  # p25-p75: 370-430
                                          steps_of([390.0, 400.0, 410.0, 420.0, 430.0]))  # 395-425
    assert step_noise_ms(data, ["eager + AdamW", "ort + AdamW"]) == 60.0
    noise = "within this profile's step-to-step noise (its step times spread 60.0 ms between p25 and p75)"
    assert differences(data, "eager + AdamW", "ort + AdamW") == [
        "optimizer step: 12.1 vs 40.6 ms a step (eager + AdamW [pytorch] vs ort + AdamW [onnxruntime]), " + noise,
        "matrix products: 200.0 vs 199.0 ms a step (eager + AdamW [pytorch] vs ort + AdamW [onnxruntime]), " + noise,
        "in all: 400.0 vs 410.0 ms a step (eager + AdamW [pytorch] vs ort + AdamW [onnxruntime], profiled), " + noise]
    quieter = the_same_adamw_on_both_engines(steps_of([390.0, 395.0, 400.0, 405.0, 410.0]),  # 392.5-407.5
                                             steps_of([400.0, 405.0, 410.0, 415.0, 420.0]))
    assert differences(quieter, "eager + AdamW", "ort + AdamW")[0] == (
        "eager + AdamW [pytorch] spends 28.5 ms less a step in optimizer step than ort + AdamW [onnxruntime] "
        "(12.1 against 40.6 ms)")


@pytest.mark.parametrize("ort_steps, why", [
    (steps_of([400.0] * 5, contended=True, contended_share=0.4),
     "ort + AdamW [onnxruntime] was measured while other processes used the CPU (40% of the CPU)"),
    (steps_of([400.0] * 3), "ort + AdamW [onnxruntime] has too few measured steps (3, at least 5 needed)"),
    (steps_of([400.0] * 5, samples_per_s_iqr=4.0), "ort + AdamW [onnxruntime] is noisy (spread 20% of its median, "
                                                   "over 15%)"),
    (None, "this profile holds no per-step times of ort + AdamW [onnxruntime] (it was made before ortnb kept them): "
           "profile again"),
], ids=["contended", "too few steps", "noisy", "no per-step times"])
def test_profiles_the_judge_doubts_state_their_differences_as_not_conclusive_with_its_reason(ort_steps, why):
    from ortnb.profiling.views import differences

    data = the_same_adamw_on_both_engines(steps_of([400.0] * 5), ort_steps)
    assert differences(data, "eager + AdamW", "ort + AdamW") == [
        "optimizer step: 12.1 vs 40.6 ms a step (eager + AdamW [pytorch] vs ort + AdamW [onnxruntime]), not "
        "conclusive: " + why,
        "matrix products: 200.0 vs 199.0 ms a step (eager + AdamW [pytorch] vs ort + AdamW [onnxruntime]), not "
        "conclusive: " + why,
        "in all: 400.0 vs 410.0 ms a step (eager + AdamW [pytorch] vs ort + AdamW [onnxruntime], profiled), not "
        "conclusive: " + why]
