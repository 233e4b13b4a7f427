"""A run whose steps stop advancing reads "stalled" (ortnb/runner/stall.py): the bound on exact values, and a
real run whose worker is frozen with SIGSTOP."""

from __future__ import annotations

import json
import os
import signal

import pytest

import ortnb
from ortnb.runs import layout, stall
from ortnb.runner.launch import wait_for


def step(n, at, step_time=0.5):
    return {"kind": "step", "step": n, "wall_time": at, "step_time": step_time}


def started(max_steps=100):
    return {"kind": "event", "event": "started", "time": 0.0, "max_steps": max_steps}


def test_the_bound_is_ten_median_step_times_at_least_sixty_seconds_or_the_configured_one():
    quick = [started(), *(step(n, 10.0 + n) for n in range(1, 6))]
    assert stall.bound(quick) == 60.0  # 10 x 0.5 s is under the floor
    slow = [started(), *(step(n, 10.0 + 9 * n, step_time=9.0) for n in range(1, 6))]
    assert stall.bound(slow) == 90.0
    assert stall.bound(quick, configured=5) == 5.0


def test_a_pause_the_run_made_before_raises_the_bound_to_twice_it():
    records = [started(), step(1, 10.0), step(2, 11.0), {"kind": "event", "event": "eval", "time": 51.0},
               step(3, 52.0)]
    assert stall.bound(records) == 80.0  # the 40 s evaluation, twice


def test_stalled_only_between_the_first_and_the_last_step_and_before_a_final_event():
    records = [started(10), step(1, 10.0), step(2, 11.0)]
    assert stall.stalled(records, now=70.0) is None  # 59 s: within the bound
    found = stall.stalled(records, now=80.0, frozen=("rank 1 (pid 42) is stopped",))
    assert found == stall.Stall(69.0, 60.0, 2, ("rank 1 (pid 42) is stopped",))
    assert found.text().startswith("stalled: no new step for 69 s after step 2 (the bound is 60 s); rank 1 (pid "
                                   "42) is stopped. A rank is frozen")
    assert stall.stalled([started(10)], now=1000.0) is None  # before the first step: export, graph build
    assert stall.stalled([started(2), step(1, 10.0), step(2, 11.0)], now=1000.0) is None  # saving the model
    assert stall.stalled([*records, {"kind": "event", "event": "completed", "time": 12.0}], now=1000.0) is None


def test_stall_timeout_s_is_checked_before_any_run():
    problems = [p.message for p in ortnb.validate(ortnb.RunConfig(model="tiny-bert", stall_timeout_s=0))
                if p.field == "stall_timeout_s"]
    assert problems == ["must be None (10 median step times, at least 60 s) or a number of seconds > 0, got 0."]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_frozen_worker_reads_stalled_wait_returns_and_stop_ends_it(tmp_path, monkeypatch):
    from .._helpers import assert_none_left, tiny

    monkeypatch.setenv("ORTNB_FAULT", "slow:0.2")
    run = ortnb.launch(tiny(tmp_path, backend="eager", max_steps=500, stall_timeout_s=4))
    assert wait_for(lambda: len(run.metrics) >= 3, 240), run.error
    ranks = json.loads(layout.process_file(run.run_dir, "ranks").read_text())["pid"]
    os.kill(ranks, signal.SIGSTOP)
    try:
        assert run.wait(60) == "stalled"
        found = run.stall
        assert found.bound_s == 4.0 and found.idle_s > 4.0 and found.last_step >= 3
        assert found.frozen == (f"rank 0 (pid {ranks}) is stopped",), found
        assert not run.done and run.alive
        assert run.stop(timeout=5) == "stopped"  # a frozen rank cannot checkpoint: ended by force
    finally:
        try:
            os.kill(ranks, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert run.events[-1]["event"] == "stopped" and run.events[-1]["forced"] is True
    assert_none_left(run.run_dir)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_one_frozen_ddp_rank_is_named_and_stop_ends_both(tmp_path, monkeypatch):
    """Rank 1 of two frozen: rank 0 waits in its all-reduce, steps stop for both, and the stall names rank 1."""
    import psutil

    from .._helpers import assert_none_left, tiny

    monkeypatch.setenv("ORTNB_FAULT", "slow:0.2")
    run = ortnb.launch(tiny(tmp_path, backend="eager", max_steps=500, num_processes=2, stall_timeout_s=4))
    assert wait_for(lambda: len(run.metrics) >= 3, 300), run.error
    torchrun = psutil.Process(json.loads(layout.process_file(run.run_dir, "ranks").read_text())["pid"])
    (rank1,) = [p for p in torchrun.children(recursive=True) if p.environ().get("RANK") == "1"]
    rank1.suspend()
    try:
        assert run.wait(90) == "stalled"
        assert run.stall.frozen == (f"rank 1 (pid {rank1.pid}) is stopped",), run.stall
        assert run.status == "stalled" and run.alive
        assert run.stop(timeout=5) == "stopped"
    finally:
        try:
            rank1.resume()
        except psutil.NoSuchProcess:
            pass
    assert run.events[-1]["event"] == "stopped" and run.events[-1]["forced"] is True
    assert_none_left(run.run_dir)


# -- slow or stalled: the ranks' processes decide once the bound has passed -------------------------------------

def stat_line(pid: int, state: str, utime: int, stime: int, comm: str = "python") -> str:
    """/proc/PID/stat as Linux writes it (52 fields; utime and stime are fields 14 and 15)."""
    return (f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194560 51234 0 12 0 {utime} {stime} 0 0 20 0 5 0 "
            f"8123456 2400000000 120000 18446744073709551615 1 1 0 0 0 0 0 16781312 16386 0 0 0 17 1 0 0 0 0 0 "
            "0 0 0 0 0 0 0 0\n")


def sample(state, ticks):
    return stall.CpuSample(state, ticks)


def test_a_proc_stat_line_gives_the_state_and_the_cpu_time_even_with_a_strange_command_name():
    assert stall.parse_proc_stat(stat_line(4242, "R", 1500, 230)) == sample("R", 1730)
    assert stall.parse_proc_stat(stat_line(7, "T", 3, 4, comm="pt_main_thread) S 9")) == sample("T", 7)


def test_a_runnable_rank_gaining_cpu_time_is_slow_and_a_stopped_or_idle_one_stalled():
    hz, half_second = 100, 0.5  # between the looks a rank that works gets at least 5% of a core: 2.5 ticks
    # ~7 runnable processes per core: the worker still gets a seventh of one, 7 ticks in half a second
    assert stall.still_working({10: sample("R", 1000)}, {10: sample("R", 1007)}, half_second, hz)
    assert stall.still_working({10: sample("S", 1000)}, {10: sample("R", 1003)}, half_second, hz)
    # a hung collective: both ranks sleep; the heartbeat thread's tick is no work
    assert not stall.still_working({10: sample("S", 1000), 11: sample("S", 900)},
                                   {10: sample("S", 1001), 11: sample("S", 900)}, half_second, hz)
    # SIGSTOP: one rank stopped stalls the run, however busy the other spins
    assert not stall.still_working({10: sample("R", 1000), 11: sample("T", 900)},
                                   {10: sample("R", 1050), 11: sample("T", 900)}, half_second, hz)
    assert not stall.still_working({10: sample("R", 1000)}, {10: sample("R", 1002)}, half_second, hz)
    assert not stall.still_working({}, {10: sample("R", 1000)}, half_second, hz)  # no earlier look: no gain known


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_under_a_cpu_hog_a_computing_worker_is_slow_and_a_stopped_or_sleeping_one_stalled(tmp_path):
    import subprocess
    import sys
    import time

    from ortnb.runs import liveness

    from .._helpers import tiny

    def folder(name):
        run_dir = tmp_path / name
        run_dir.mkdir()
        tiny(tmp_path, stall_timeout_s=2).to_json(run_dir / layout.CONFIG)
        long_ago = time.time() - 30  # no step for 30 s: past the 2 s bound
        records = [{**started(), "time": long_ago}, *(step(n, long_ago + n / 10) for n in range(1, 4))]
        (run_dir / layout.METRICS).write_text("".join(json.dumps(r) + "\n" for r in records))
        return run_dir

    def worker(run_dir, code):
        process = subprocess.Popen([sys.executable, "-c", code, str(run_dir)])
        liveness.record_process(run_dir, "ranks", process.pid)
        return process

    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    computing = worker(folder("computing"), "while True: pass")
    sleeping = worker(folder("sleeping"), "import time; time.sleep(60)")
    try:
        time.sleep(1.0)
        run = ortnb.attach(tmp_path / "computing")
        assert [run.status for _ in range(3)] == ["running"] * 3  # slow under the hog, not stalled
        assert ortnb.attach(tmp_path / "sleeping").status == "stalled"
        computing.send_signal(signal.SIGSTOP)
        time.sleep(0.2)
        assert run.status == "stalled"
        assert run.stall.frozen == (f"rank 0 (pid {computing.pid}) is stopped",)
    finally:
        for process in [*hogs, computing, sleeping]:
            process.kill()
            process.wait()
