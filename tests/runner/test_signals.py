"""Signals end runs the way stop() does: SIGTERM, SIGHUP and SIGINT to `ortnb run`, `compare` and `tune`, SIGTERM to a
supervisor, a KeyboardInterrupt in a blocking wait() and a supervisor that died all stop the run after the step in
progress, with a checkpoint, leave a final status and leave no process behind (the process table is walked for
the run folder in command lines and environments)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import ortnb
from ortnb import interrupts
from ortnb.runs import layout
from ortnb.runner.launch import wait_for

from .._helpers import assert_none_left, signal_when, steps_in, tiny

SLOW_STEPS = "slow:0.3"  # ORTNB_FAULT: steps long enough to signal a run mid-way


def assert_stopped_with_a_checkpoint(run_dir) -> None:
    run = ortnb.attach(run_dir)
    assert run.wait(60) == "stopped", run.error
    final = run.events[-1]
    assert final["event"] == "stopped" and final["forced"] is False, final
    assert layout.checkpoints(run.run_dir), "a stopped run keeps a checkpoint"
    assert (json.loads((run.run_dir / layout.STATUS).read_text()))["status"] == "stopped"


def slow_environment() -> dict:
    return {**os.environ, "ORTNB_FAULT": SLOW_STEPS}


# -- the pure part ----------------------------------------------------------------------------------

def test_sigterm_and_sighup_raise_keyboard_interrupt_and_exit_with_the_shells_code():
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with pytest.raises(KeyboardInterrupt) as raised:
            with interrupts.as_keyboard_interrupt():
                os.kill(os.getpid(), signum)
                time.sleep(5)  # the handler raises here, long before this ends
        assert isinstance(raised.value, interrupts.Terminated) and raised.value.signum == signum
        assert interrupts.exit_code(raised.value) == 128 + signum
    assert interrupts.exit_code(KeyboardInterrupt()) == 130
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # put back as it was


def test_deferred_notes_signals_instead_of_raising():
    noted = []
    with interrupts.deferred(noted.append):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)
    assert noted == [signal.SIGINT, signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# -- real runs ------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_to_ortnb_run_stops_the_run_with_a_checkpoint_and_leaves_no_process(tmp_path, signum):
    config = tmp_path / "config.json"
    tiny(tmp_path, backend="eager", max_steps=300).to_json(config)
    process = subprocess.Popen([sys.executable, "-m", "ortnb", "run", str(config)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=slow_environment())
    printed = signal_when(process, lambda: steps_in(tmp_path / "runs") >= 2, signum)
    assert process.returncode == 128 + signum, printed
    assert f"ortnb run: {signum.name}: stopping (checkpointing first)..." in printed
    assert "ortnb run: stopped; engine pytorch" in printed and "Traceback" not in printed
    run_dir = printed.split(" in ", 1)[1].splitlines()[0]
    assert_stopped_with_a_checkpoint(run_dir)
    assert_none_left(tmp_path / "runs")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_to_ortnb_compare_writes_an_incomplete_report(tmp_path, signum):
    out, runs = tmp_path / "out", tmp_path / "runs"
    command = [sys.executable, "-m", "ortnb", "compare", "--model", "tiny-bert", "--vary", "batch_size=8,16",
               "--vary", "backend=eager", "--seq-len", "32", "--steps", "300", "--runs", str(runs), "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=slow_environment())
    printed = signal_when(process, lambda: steps_in(runs) >= 2, signum)
    assert process.returncode == 128 + signum, printed
    assert "Traceback" not in printed
    assert f"interrupted by {signum.name} after 1 of 2 runs" in printed, printed
    results = json.loads((out / "results.json").read_text())
    assert results["incomplete"].startswith(f"interrupted by {signum.name} after 1 of 2 runs")
    assert [row["status"] for row in results["table"]] == ["stopped", "not run"]
    assert (out / "table.md").read_text().startswith("**Incomplete**: interrupted by")
    assert "<b>Incomplete</b>: interrupted by" in (out / "report.html").read_text()
    (run_dir,) = runs.iterdir()
    assert_stopped_with_a_checkpoint(run_dir)
    assert_none_left(runs)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_to_ortnb_tune_keeps_what_was_measured_and_leaves_no_run_behind(tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "out"
    command = [sys.executable, "-m", "ortnb", "tune", "--model", "tiny-bert", "--vary", "backend=eager",
               "--vary", "batch_size=8,16", "--seq-len", "32", "--budget", "600", "--wait-for-quiet", "0",
               "--cache-dir", str(cache), "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=slow_environment())
    printed = signal_when(process, lambda: steps_in(cache) >= 2, signal.SIGTERM)
    assert process.returncode == 128 + signal.SIGTERM, printed
    assert "Traceback" not in printed
    (entry,) = [path for path in cache.rglob("*.json")]
    assert json.loads(entry.read_text())["interrupted"] is True  # the next call resumes from it
    assert not list(cache.rglob("runs-*")), "the temporary measurement runs are deleted"
    assert (out / "tune.json").exists()
    assert_none_left(cache)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_to_the_supervisor_stops_the_ranks_after_their_step(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", SLOW_STEPS)
    run = ortnb.launch(tiny(tmp_path, backend="eager", max_steps=300))
    assert wait_for(lambda: len(run.metrics) >= 2, 240), run.error
    supervisor = json.loads(layout.process_file(run.run_dir, "supervisor").read_text())["pid"]
    os.kill(supervisor, signal.SIGTERM)  # not stop(): a shutdown, or someone's kill
    assert run.wait(120) == "stopped", run.error
    assert_stopped_with_a_checkpoint(run.run_dir)
    assert_none_left(run.run_dir)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ctrl_c_in_wait_stops_the_run_it_launched_and_raises_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ORTNB_FAULT", SLOW_STEPS)
    run = ortnb.launch(tiny(tmp_path, backend="eager", max_steps=300))
    interrupt = threading.Thread(target=lambda: wait_for(lambda: len(run.metrics) >= 2, 240)
                                 and os.kill(os.getpid(), signal.SIGINT), daemon=True)
    interrupt.start()
    with pytest.raises(KeyboardInterrupt):
        run.wait()
    assert run.status == "stopped" and not run.alive
    assert f"ortnb.attach({str(run.run_dir)!r}) reads it" in capsys.readouterr().err
    assert_stopped_with_a_checkpoint(run.run_dir)
    assert_none_left(run.run_dir)
