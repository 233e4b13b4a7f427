"""The warm worker (runner/warm.py): one process trains one-process runs one after another, each run keeping
the run-folder protocol (pid files, heartbeat, final event, status.json); a run stopped, a worker killed
mid-run or a parent gone all end the way they end for a run of its own; tune measures through it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
import pytest

import ortnb
from ortnb.errors import ConfigError
from ortnb.runs import layout, liveness, status_file
from ortnb.runner.launch import wait_for
from ortnb.runner.warm import WarmWorker

from .._helpers import exposed_listeners


def tiny(tmp_path, **overrides) -> ortnb.RunConfig:
    settings = dict(model="tiny-bert", backend="eager", batch_size=8, seq_len=32, max_steps=4, warmup_steps=1,
                    evaluate=False, output_dir=str(tmp_path / "ignored"))
    return ortnb.RunConfig(**{**settings, **overrides})


def test_a_process_serving_runs_in_turn_counts_as_a_run_s_only_until_its_final_status(tmp_path):
    runs = tmp_path / "runs"
    run_dir = runs / "one"
    run_dir.mkdir(parents=True)
    # a stand-in worker: its command line names the folder its runs lie in, as warm.py's does
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(runs)])
    try:
        assert wait_for(lambda: psutil.Process(stand_in.pid).cmdline()[-1:] == [str(runs)], 10)
        liveness.record_process(run_dir, "ranks", stand_in.pid, serves_in_turn=True)
        entry = liveness.read_processes(run_dir)["ranks"]
        assert entry["serves_in_turn"] is True and liveness.process_alive(entry) is True
        status_file.write(run_dir, status="completed")
        assert liveness.process_alive(entry) is False  # it lives on, serving the next run
        liveness.record_process(run_dir, "supervisor", stand_in.pid)  # not marked: it must name the run itself
        assert liveness.process_alive(liveness.read_processes(run_dir)["supervisor"]) is False
    finally:
        stand_in.kill()
        stand_in.wait()


def test_deepspeed_runs_are_refused_with_the_field_named(tmp_path):
    worker = WarmWorker(tmp_path / "runs")
    assert WarmWorker.serves(tiny(tmp_path)) is None and WarmWorker.serves(tiny(tmp_path, num_processes=2)) is None
    with pytest.raises(ConfigError, match=r"zero_stage=1: DeepSpeed runs start processes of their own; use "
                                          r"ortnb\.launch"):
        worker.launch(tiny(tmp_path, num_processes=2, zero_stage=1))
    assert worker.started == 0 and not worker.alive  # refused before any process started


@pytest.mark.slow
def test_one_worker_trains_runs_in_turn_each_with_its_own_folder_and_ending(tmp_path):
    with WarmWorker(tmp_path / "runs") as worker:
        first = worker.launch(tiny(tmp_path))
        assert first.wait(180) == "completed", first.error
        assert not first.alive and worker.alive  # the run has ended; the worker waits for the next
        second = worker.launch(tiny(tmp_path, batch_size=4))  # another batch size: the same tokenized rows
        assert second.wait(180) == "completed", second.error
        pid = worker._servers[1].process.pid
    for run in (first, second):
        assert run.run_dir.parent == tmp_path / "runs" and run.config.output_dir == str(tmp_path / "runs")
        assert {e["pid"] for e in liveness.read_processes(run.run_dir).values()} == {pid}
        assert json.loads((run.run_dir / layout.STATUS).read_text())["status"] == "completed"
        assert [e["run"] for e in run.events if e["event"] == "warm"] == [[first, second].index(run) + 1]
        assert len(run.metrics) == 4 and (run.run_dir / layout.MODEL / "config.json").exists()
    # the second run read its tokens from the cache the first stored, and trained with its own batch size
    assert [e["cached"] for e in second.events if e["event"] == "data"] == [True]
    assert [e["train_rows"] for e in second.events if e["event"] == "data"] == [16]
    assert worker.started == 1 and not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
def test_a_warm_run_trains_exactly_as_the_same_run_launched_cold_in_any_order_of_settings(tmp_path):
    """Nothing of one run (mixed precision state, seeds, compiled graphs) leaks into the next."""
    base = tiny(tmp_path, output_dir=str(tmp_path / "cold"), seq_len=16)

    def losses(run) -> list[float]:
        assert run.wait(180) == "completed", run.error
        return list(run.metrics["loss"])

    cold = {precision: losses(ortnb.launch(base.replace(precision=precision))) for precision in ("no", "bf16")}
    assert cold["no"] != cold["bf16"]  # bf16 changes the losses: the comparison below can tell them apart
    with WarmWorker(tmp_path / "runs") as worker:
        warm = [losses(worker.launch(base.replace(precision=p))) for p in ("bf16", "no", "bf16", "no")]
    assert warm == [cold["bf16"], cold["no"], cold["bf16"], cold["no"]]


@pytest.mark.slow
def test_two_rank_runs_share_one_warm_torchrun_and_agree_with_a_cold_one(tmp_path):
    base = tiny(tmp_path, output_dir=str(tmp_path / "cold"), num_processes=2)
    cold = ortnb.launch(base)
    assert cold.wait(300) == "completed", cold.error
    with WarmWorker(tmp_path / "runs") as worker:
        runs = [worker.launch(base), worker.launch(base.replace(batch_size=4))]  # queued: the second waits
        assert wait_for(lambda: len(runs[0].metrics) >= 1, 300), runs[0].error
        assert exposed_listeners() == []  # the warm torchrun's stores and the ranks' gloo pairs: loopback only
        assert [run.wait(300) for run in runs] == ["completed", "completed"], [run.error for run in runs]
        assert worker.started == 1
    assert list(runs[0].metrics["loss"]) == list(cold.metrics["loss"])
    for run in runs:
        assert [e["world_size"] for e in run.events if e["event"] == "started"] == [2]
        assert (run.run_dir / layout.LOG).stat().st_size > 0  # its ranks' output, as a launched run's
    assert not any(p.name.startswith(".warm") for p in (tmp_path / "runs").iterdir())  # close removed the queue


@pytest.mark.slow
def test_a_stopped_run_stops_a_killed_worker_fails_its_run_and_the_next_run_gets_a_new_worker(tmp_path):
    worker = WarmWorker(tmp_path / "runs")
    try:
        long = tiny(tmp_path, max_steps=100_000)
        stopped = worker.launch(long)
        assert wait_for(lambda: len(stopped.metrics) >= 2, 180), stopped.error
        assert stopped.stop(60) == "stopped" and worker.alive and worker.started == 1
        killed = worker.launch(long)
        assert wait_for(lambda: len(killed.metrics) >= 2, 180), killed.error
        worker._servers[1].process.kill()
        assert wait_for(lambda: killed.status == "failed", 30), killed.status
        assert "ended without writing a final event" in killed.error
        after = worker.launch(tiny(tmp_path))
        assert after.wait(180) == "completed" and worker.started == 2, after.error
    finally:
        worker.close()


@pytest.mark.slow
def test_when_its_parent_closes_it_the_run_in_progress_stops_after_its_step_and_the_worker_exits(tmp_path):
    worker = WarmWorker(tmp_path / "runs")
    run = worker.launch(tiny(tmp_path, max_steps=100_000))
    assert wait_for(lambda: len(run.metrics) >= 2, 180), run.error
    process = worker._servers[1].process
    started = time.monotonic()
    worker.close(timeout=60)
    assert process.poll() is not None and time.monotonic() - started < 60
    assert run.status == "stopped" and not run.alive
    final = [e for e in run.events if e["event"] == "stopped"][-1]
    assert "the process that started this warm worker ended" in final["reason"]


def test_every_warm_worker_started_has_a_queue_of_its_own(tmp_path):
    from ortnb.runner.warm import queue_dir

    # two searches on one runs folder each start a worker: one queue would hand a candidate to both
    assert queue_dir(tmp_path, 1) != queue_dir(tmp_path, 1)
    assert queue_dir(tmp_path, 2).parent == tmp_path and queue_dir(tmp_path, 2).name.startswith(".warm-x2-")


@pytest.mark.slow
def test_launch_warm_trains_in_the_sessions_worker_from_the_second_run_and_the_summary_says_how_each_started(
        tmp_path):
    from ortnb.runner import warm
    from ortnb.ui import present

    runs = tmp_path / "runs"
    try:
        first = ortnb.launch(tiny(tmp_path, output_dir=str(runs)), warm=True)
        assert first.wait(180) == "completed", first.error
        second = ortnb.launch(tiny(tmp_path, output_dir=str(runs), batch_size=4), warm=True)
        assert second.wait(180) == "completed", second.error
        worker = warm.session_worker(runs)
        assert warm.session_worker(str(runs) + "/") is worker and worker.started == 1  # one per folder
        pid = worker._servers[1].process.pid
        assert {e["pid"] for r in (first, second) for e in liveness.read_processes(r.run_dir).values()} == {pid}
        assert (first.summary()["warm_run"], second.summary()["warm_run"]) == (1, 2)
        assert present.started_text(second.summary()["warm_run"]) == (
            "warm: the session's worker, its run 2 (no interpreter start or imports)")
        # A run the worker does not take starts cold, as launch() always started it.
        cold = ortnb.launch(tiny(tmp_path, output_dir=str(runs)), warm=True, requests={"note.json": {}})
        assert cold.wait(180) == "completed", cold.error
        assert cold.summary()["warm_run"] is None and pid not in {
            e["pid"] for e in liveness.read_processes(cold.run_dir).values()}
    finally:
        warm.close_session(30)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
