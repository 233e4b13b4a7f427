"""Runs in worker processes: launch, watch, stop, fail, compare (tiny model, real processes, CPU)."""

from __future__ import annotations

import json
import os
import signal
import time

import psutil
import pytest

import ortnb
from ortnb import metrics
from ortnb.runs import layout
from ortnb.runner.launch import wait_for

from .._helpers import assert_no_workers_within, exposed_listeners, reachable_from_outside, tiny, workers_under

pytestmark = pytest.mark.slow


def test_loopback_is_told_apart_from_every_other_address():
    assert [reachable_from_outside(ip) for ip in ("127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1")] == [False] * 4
    assert [reachable_from_outside(ip) for ip in ("::", "0.0.0.0", "10.1.2.3", "fe80::1%eth0")] == [True] * 4


def test_single_process_run_streams_metrics_while_the_kernel_stays_free(tmp_path):
    started = time.monotonic()
    run = ortnb.launch(tiny(tmp_path, max_steps=30))
    assert time.monotonic() - started < 2.0
    assert run.status in ("starting", "running")
    busy_loops = 0
    while run.metrics.empty and not run.done:  # the launching process keeps working meanwhile
        sum(range(10_000))
        busy_loops += 1
        time.sleep(0.05)
    assert busy_loops > 0 and not run.done, "metrics should appear while the run trains"
    assert run.wait(300) == "completed", run.error
    frame = run.metrics
    assert list(frame["step"]) == list(range(1, 31))
    assert (frame["samples_per_s"] > 0).all() and frame["loss"].notna().all() and (frame["mfu"] > 0).all()
    summary = run.summary()
    assert summary["engine"] == "onnxruntime" and summary["steps_measured"] == 28
    model = run.load_model()
    assert type(model).__name__ == "BertForSequenceClassification"
    assert json.loads((run.run_dir / ".ortnb" / "engine_report.json").read_text())["engine"] == "onnxruntime"
    assert repr(run) == "Run('ort + AdamW', status='completed', steps=30)"
    # The phases before the first step, as they began: every one metrics.PHASES names, in its order (ORT's export
    # and graph build come from ORTModule itself).
    phases = [e for e in run.events if e["event"] == "phase"]
    assert [e["phase"] for e in phases] == list(metrics.PHASES)
    assert [e["time"] for e in phases] == sorted(e["time"] for e in phases) and run.phase is None
    assert metrics.events(run.records(), "started")[0]["max_steps"] == 30
    assert_no_workers_within(run)


def test_zero1_halves_optimizer_state_per_rank(tmp_path):
    from ortnb.models.builtin import load_model

    zero = ortnb.launch(tiny(tmp_path, num_processes=2, zero_stage=1, max_steps=4))
    assert zero.wait(600) == "completed", zero.error
    # What one rank holds without ZeRO (DDP, or one process): AdamW's two fp32 moments of every parameter.
    model, _ = load_model("tiny-bert", "sequence-classification")
    whole_mb = 2 * 4 * sum(p.numel() for p in model.parameters()) / 2**20
    zero_state = zero.metrics[["optimizer_state_mb_rank0", "optimizer_state_mb_rank1"]].iloc[-1]
    for rank in range(2):
        assert zero_state.iloc[rank] == pytest.approx(whole_mb / 2, rel=0.02)
    assert zero.summary()["engine"] == "onnxruntime"
    assert_no_workers_within(zero)


def test_exception_in_step_3_fails_with_the_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "raise:3")
    run = ortnb.launch(tiny(tmp_path))
    assert run.wait(300) == "failed"
    assert "injected fault at step 3" in run.error and "Traceback" in run.error
    # Readable up to the fault: steps 1 and 2 were logged; step 3 died before its line.
    assert list(run.metrics["step"]) == [1, 2]
    assert [e["event"] for e in run.events][-1] == "failed"
    assert_no_workers_within(run)


def test_killing_one_of_two_ranks_fails_the_run_without_a_hang(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "slow:0.3")
    run = ortnb.launch(tiny(tmp_path, num_processes=2, max_steps=200))
    assert wait_for(lambda: len(run.metrics) >= 2, 300), run.error
    # While both ranks train: torchrun's stores and gloo's pairs listen on loopback only (no authentication).
    assert exposed_listeners() == []
    ranks = [p for p in workers_under(run.run_dir) if "ortnb.runner.worker" in " ".join(p.cmdline())]
    victim = next(p for p in ranks if p.environ().get("RANK") == "1")
    victim.send_signal(signal.SIGKILL)
    assert run.wait(120) == "failed"
    assert run.error
    steps_seen = len(run.metrics)
    assert 2 <= steps_seen < 200
    assert_no_workers_within(run)


def test_stop_mid_run_checkpoints_within_30_s(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "slow:0.3")
    run = ortnb.launch(tiny(tmp_path, max_steps=500))
    assert wait_for(lambda: len(run.metrics) >= 3, 300), run.error
    asked = time.monotonic()
    assert run.stop(timeout=30) == "stopped"
    assert time.monotonic() - asked < 30
    checkpoints = list(run.run_dir.glob("checkpoint-*"))
    assert len(checkpoints) == 1 and (checkpoints[0] / "model.safetensors").exists()
    assert layout.checkpoints(run.run_dir) == checkpoints  # marked whole once every file was written
    listed = json.loads((checkpoints[0] / layout.CHECKPOINT_MARKER).read_text())["files"]
    assert listed["model.safetensors"] == (checkpoints[0] / "model.safetensors").stat().st_size
    assert {"optimizer.pt", "trainer_state.json", "config.json"} <= set(listed)
    assert type(run.load_model()).__name__ == "BertForSequenceClassification"
    assert len(run.metrics) < 500
    assert_no_workers_within(run)


def test_nan_loss_stops_with_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "nan:3")
    run = ortnb.launch(tiny(tmp_path))
    assert run.wait(300) == "failed"
    assert "The loss became nan at step 4" in run.error and "lower learning_rate" in run.error
    frame = run.metrics
    assert list(frame["step"]) == [1, 2, 3, 4]
    # Numbers stay numbers: the NaN step is a NaN, and the column's statistics still work.
    assert frame["loss"].dtype == float and frame["loss"].isna().tolist() == [False, False, False, True]
    assert frame["loss"].mean() == pytest.approx(frame["loss"].head(3).mean())
    assert_no_workers_within(run)


def test_a_new_run_never_overwrites_an_earlier_one(tmp_path):
    first = ortnb.launch(tiny(tmp_path, max_steps=2, warmup_steps=0))
    assert first.wait(300) == "completed"
    before = {p: p.stat().st_mtime_ns for p in first.run_dir.rglob("*") if p.is_file()}
    second = ortnb.launch(tiny(tmp_path, max_steps=2, warmup_steps=0))
    assert second.run_dir != first.run_dir and second.run_dir.parent == first.run_dir.parent
    assert second.wait(300) == "completed"
    assert {p: p.stat().st_mtime_ns for p in first.run_dir.rglob("*") if p.is_file()} == before


def test_compare_shows_the_engine_that_ran(tmp_path):
    table = ortnb.compare([tiny(tmp_path, backend="eager", max_steps=6, warmup_steps=1),
                           tiny(tmp_path, max_steps=6, warmup_steps=1)])  # 5 measured steps: the judge's minimum
    assert list(table["label"]) == ["eager + AdamW", "ort + AdamW"]
    assert list(table["engine"]) == ["pytorch", "onnxruntime"]
    assert table["speedup"].iloc[0] == pytest.approx(1.0)
    assert (table["samples_per_s"] > 0).all() and list(table["status"]) == ["completed", "completed"]


def test_bad_configuration_starts_no_process(tmp_path):
    before = {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}
    with pytest.raises(ortnb.ConfigError, match="precision: bf16 with backend='ort' needs the CUDA"):
        ortnb.launch(tiny(tmp_path, precision="bf16"))
    assert {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)} == before
    assert not (tmp_path / "runs").exists()


def test_the_shell_runs_the_same_worker(tmp_path):
    import subprocess
    import sys

    config = tmp_path / "config.json"
    tiny(tmp_path, max_steps=3, warmup_steps=0).to_json(config)
    # A malformed line in the stream (after step 1) is skipped: it neither hides later steps nor crashes the follower.
    done = subprocess.run([sys.executable, "-m", "ortnb", "run", str(config)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "ORTNB_FAULT": "badline:1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("samples/s") == 3 and "completed; engine onnxruntime" in done.stdout
    run = ortnb.attach(done.stdout.split(" in ", 1)[1].splitlines()[0])
    assert run.bad_lines == 1 and list(run.metrics["step"]) == [1, 2, 3] and run.status == "completed"
    bad = tmp_path / "bad.json"
    tiny(tmp_path, precision="bf16").to_json(bad)
    refused = subprocess.run([sys.executable, "-m", "ortnb", "run", str(bad)], capture_output=True, text=True)
    assert refused.returncode == 2 and "precision: bf16 with backend='ort'" in refused.stderr


def test_a_stop_asked_for_during_an_evaluation_ends_the_run_after_it_not_a_step_later(tmp_path):
    # on a busy machine one more step after the evaluation outlasted stop()'s grace: every such stop was forced
    from transformers import TrainerControl

    from ortnb.runs import control as run_control
    from ortnb.runner.callback import RunCallback

    callback = RunCallback(tmp_path, None, samples_per_step=8, token_flops=None, peak_flops=None)
    carry_on = TrainerControl()
    callback.on_evaluate(None, None, carry_on)
    assert not carry_on.should_training_stop and not callback.stopped
    run_control.request_stop(tmp_path, timeout=30)
    stop = TrainerControl()
    callback.on_evaluate(None, None, stop)
    assert stop.should_training_stop and stop.should_save and callback.stopped
