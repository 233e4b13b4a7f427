"""The metrics stream on exact lines: what the writer puts down and what the reader makes of it (no processes)."""

from __future__ import annotations

import json
import math

import pytest

from ortnb import metrics
from ortnb.runs.stream_write import MetricsWriter, append_event


def step(n: int, loss: float = 0.5) -> dict:
    return {"kind": "step", "step": n, "wall_time": 1.0, "step_time": 0.1, "samples_per_s": 80.0,
            "tokens_per_s": 2560.0, "loss": loss, "learning_rate": 1e-3, "grad_norm": 1.0}


def line(record: dict) -> bytes:
    return (json.dumps(record) + "\n").encode()


def test_a_malformed_line_is_skipped_and_counted_and_every_good_line_kept(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(line(step(1)) + b'{"kind": "step", "ste\n' + line(step(2)) + b"\x00\x00\x00\n" + line(step(3)))
    reader = metrics.MetricsReader(path)
    reader.poll()
    assert [r["step"] for r in metrics.steps(reader.records)] == [1, 2, 3]
    assert reader.bad_lines == 2
    with open(path, "ab") as handle:  # later lines still arrive: the reader did not give up at the bad one
        handle.write(line(step(4)))
    assert [r["step"] for r in reader.poll()] == [4] and reader.bad_lines == 2


def test_a_line_being_written_is_read_whole_once_its_newline_arrives(tmp_path):
    path = tmp_path / "metrics.jsonl"
    whole = line(step(1))
    path.write_bytes(whole[:10])
    reader = metrics.MetricsReader(path)
    assert reader.poll() == [] and reader.bad_lines == 0  # not counted as bad: it is still being written
    with open(path, "ab") as handle:
        handle.write(whole[10:])
    assert [r["step"] for r in reader.poll()] == [1] and reader.bad_lines == 0


def test_a_multibyte_character_split_across_reads_survives(tmp_path):
    path = tmp_path / "metrics.jsonl"
    whole = (json.dumps({"kind": "event", "event": "started", "label": "ort + AdamW \u00e9\u00e9"},
                        ensure_ascii=False) + "\n").encode()
    cut = whole.index("\u00e9".encode()) + 1  # inside the two-byte character
    path.write_bytes(whole[:cut])
    reader = metrics.MetricsReader(path)
    reader.poll()
    with open(path, "ab") as handle:
        handle.write(whole[cut:])
    assert reader.poll()[0]["label"] == "ort + AdamW \u00e9\u00e9" and reader.bad_lines == 0


def test_a_missing_file_reads_as_nothing_yet(tmp_path):
    reader = metrics.MetricsReader(tmp_path / "absent.jsonl")
    assert reader.poll() == [] and reader.bad_lines == 0


def test_a_writer_after_a_broken_line_starts_on_a_fresh_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(line(step(1)) + line(step(2))[:15])  # a full disk cut the last line short
    append_event(path, "failed", error="disk full")
    reader = metrics.MetricsReader(path)
    reader.poll()
    assert [r.get("event") for r in reader.records] == [None, "failed"] and reader.bad_lines == 1


def test_non_finite_numbers_stay_numbers(tmp_path):
    path = tmp_path / "metrics.jsonl"
    writer = MetricsWriter(path)
    for n, loss in ((1, 0.7), (2, float("nan")), (3, float("inf"))):
        writer.write(step(n, loss))
    writer.close()
    assert "NaN" in path.read_text() and "Infinity" in path.read_text()
    reader = metrics.MetricsReader(path)
    reader.poll()
    frame = metrics.steps_frame(reader.records)
    assert frame["loss"].dtype == float and math.isnan(frame["loss"][1]) and frame["loss"][2] == math.inf
    assert frame["loss"].head(2).mean() == 0.7  # pandas skips the NaN instead of raising on a string


def test_streams_of_older_runs_with_nan_strings_read_as_numbers():
    records, bad = metrics.parse_lines(line({**step(1), "loss": "nan", "grad_norm": "inf"}))
    assert bad == 0 and math.isnan(records[0]["loss"]) and records[0]["grad_norm"] == math.inf
    events, _ = metrics.parse_lines(line({"kind": "event", "event": "started", "label": "nan"}))
    assert events[0]["label"] == "nan"  # only step numbers are converted


def test_current_phase_follows_phase_events_until_the_first_step():
    def phase(name):
        return {"kind": "event", "event": "phase", "phase": name, "time": 1.0}

    records = []
    assert metrics.current_phase(records) is None
    for name in metrics.PHASES:  # every phase a run names (test_runner: a real ORT run goes through them in order)
        records.append(phase(name))
        assert metrics.current_phase(records) == name
    assert metrics.current_phase([*records, step(1)]) is None
    failed = {"kind": "event", "event": "failed", "error": "boom"}
    assert metrics.current_phase([phase("tokenizing"), failed]) is None


def test_start_up_phases_last_from_one_phase_event_to_the_next_and_the_first_step():
    def phase(name, at):
        return {"kind": "event", "event": "phase", "phase": name, "time": at}

    records = [phase("loading model", 100.0), phase("tokenizing", 100.5),
               {"kind": "event", "event": "data", "time": 100.6, "cached": True},
               phase("starting training", 100.625), phase("ONNX export", 102.0), phase("graph build", 103.75),
               phase("first step", 104.5)]
    assert metrics.startup_phases(records) == {}  # not before the first step ended
    records += [{**step(1), "wall_time": 106.25}, {**step(2), "wall_time": 107.0}]
    assert metrics.startup_phases(records) == {"loading model": 0.5, "tokenizing (cached)": 0.125,
                                               "starting training": 1.375, "ONNX export": 1.75,
                                               "graph build": 0.75, "first step": 1.75}
    records[2]["cached"] = False
    assert list(metrics.startup_phases(records))[1] == "tokenizing"
    summary = metrics.summarize(records, warmup_steps=0)
    assert sum(summary["startup_s"].values()) == 6.25
    from ortnb.ui import present

    assert present.startup_text(summary["startup_s"]) == (
        "6.2 s to the end of step 1: loading model 0.5 · tokenizing 0.1 · first step 5.6")
    assert summary["first_step_s"] == 5.625  # one definition: the card's first step is the start-up line's
    assert present.first_step_text(summary["startup_s"], summary["first_step_s"]) == (
        "5.6 s (starting training 1.4 · ONNX export 1.8 · graph build 0.8 · step 1 1.8)")
    assert present.startup_text(None) == "–" and present.first_step_text(None, None) == "–"


def test_the_evaluation_before_step_1_is_named_apart_from_the_first_step():
    # the reported card: "first step 27.2 s" beside "start-up 44.3 s: ... first step 41.3" (an evaluation inside)
    def phase(name, at):
        return {"kind": "event", "event": "phase", "phase": name, "time": at}

    records = [phase("loading model", 100.0), phase("tokenizing", 102.0), phase("first step", 103.0),
               {"kind": "event", "event": "eval", "step": 0, "wall_time": 117.0, "eval_time_s": 14.0},
               {**step(1), "wall_time": 144.3}]
    phases = metrics.startup_phases(records)
    assert phases == pytest.approx({"loading model": 2.0, "tokenizing": 1.0, "evaluation before step 1": 14.0,
                                    "first step": 27.3})
    assert list(phases) == ["loading model", "tokenizing", "evaluation before step 1", "first step"]
    summary = metrics.summarize(records, warmup_steps=0)
    assert summary["first_step_s"] == pytest.approx(27.3)
    from ortnb.ui import present

    assert present.startup_text(phases) == ("44.3 s to the end of step 1: loading model 2.0 · tokenizing 1.0 · "
                                            "evaluation before step 1 14.0 · first step 27.3")
    assert present.first_step_text(phases, summary["first_step_s"]) == "27.3 s"


def test_final_event_is_the_last_completed_stopped_or_failed():
    started = {"kind": "event", "event": "started"}
    stopped = {"kind": "event", "event": "stopped", "forced": True}
    assert metrics.final_event([started]) is None
    assert metrics.final_event([started, step(1), stopped, {"kind": "event", "event": "engine"}]) is stopped


def test_an_mfu_above_100_percent_is_an_error_of_the_peak_never_a_value():
    from ortnb.metrics import mfu_summary

    steps = [{"mfu": value} for value in (0.40, 0.42, 1.014, 0.41)]
    assert mfu_summary(steps) == {"mfu": None, "mfu_error": "MFU not shown: 1 step reached 101% of the measured "
                                  "peak, so that peak was measured too low; it is measured again for the next runs"}
    assert mfu_summary(steps[:2] + steps[3:]) == {"mfu": 0.41, "mfu_error": None}


def test_a_damaged_peak_cache_is_rebuilt_and_a_higher_achieved_rate_raises_the_peak(tmp_path, monkeypatch, capsys):
    from ortnb import flops

    monkeypatch.setenv("ORTNB_CACHE", str(tmp_path))
    monkeypatch.setattr(flops, "measure_peak", lambda dtype, threads, repeats=5: 100e9)
    (tmp_path / "peak.json").write_text('{"cpu|torch')  # a write cut short
    assert flops.machine_peak("fp32", 2) == 100e9
    assert "was damaged; measuring the peak again" in capsys.readouterr().err
    assert flops.raise_peak("fp32", 130e9, 2) == (100e9, 130e9)  # the run reached more than the new measure
    assert flops.machine_peak("fp32", 2) == 130e9
    assert not list(tmp_path.glob("*.tmp"))


def test_the_summary_says_which_run_of_a_warm_worker_a_run_was_and_none_for_a_cold_start():
    warm = {"kind": "event", "event": "warm", "time": 1.0, "pid": 4242, "run": 2}
    assert metrics.summarize([warm, step(1), step(2)], warmup_steps=0)["warm_run"] == 2
    assert metrics.summarize([step(1), step(2)], warmup_steps=0)["warm_run"] is None
