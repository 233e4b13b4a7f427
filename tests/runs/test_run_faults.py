"""Run state that survives faults: a broken metrics line, dead processes, a full disk, a moved working
directory, a forced stop, a deleted run folder. Hand-made run folders where no training is needed; real
worker processes (tiny model, CPU) where it is."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

import ortnb
from ortnb.runs import control, layout, liveness, status_file
from ortnb.runner import supervise
from ortnb.runner.launch import wait_for

from .._helpers import assert_no_workers_within, delete_until_gone, event, step, tiny, workers_under


def run_folder(tmp_path, *records, heartbeat_age: float | None = None):
    """A run folder as launch leaves it, with these metrics lines (no processes recorded yet)."""
    run_dir = tmp_path / "runs" / "20260101-000000-ort-adamw"
    run_dir.mkdir(parents=True)
    tiny(tmp_path).to_json(run_dir / layout.CONFIG)
    (run_dir / layout.METRICS).write_text("".join(json.dumps(r) + "\n" for r in records))
    if heartbeat_age is not None:
        (run_dir / layout.HEARTBEAT).touch()
        then = time.time() - heartbeat_age
        os.utime(run_dir / layout.HEARTBEAT, (then, then))
    return run_dir


@pytest.fixture
def ended_process():
    """A real process that has come and gone: its pid and create time no longer run anything."""
    process = subprocess.Popen(["sleep", "30"])
    yield process
    process.kill()
    process.wait()


def stand_in(run_dir, seconds=60):
    """A process standing in for one of the run's: like every run process it names the run folder."""
    return subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))",
                             str(seconds), str(run_dir)], start_new_session=True)


def end(process):
    process.kill()
    process.wait()


def record_ended(run_dir, role, process):
    liveness.record_process(run_dir, role, process.pid)
    process.kill()
    process.wait()


def zombies() -> list[psutil.Process]:
    return [c for c in psutil.Process().children(recursive=True) if c.status() == psutil.STATUS_ZOMBIE]


# -- liveness from the folder alone (no training) ------------------------------------------------

def test_a_run_whose_processes_all_ended_reads_failed_with_what_happened(tmp_path, ended_process):
    run_dir = run_folder(tmp_path, event("started"), step(1), heartbeat_age=12)
    record_ended(run_dir, "supervisor", ended_process)
    run = ortnb.attach(run_dir)
    started = time.monotonic()
    assert run.wait(30) == "failed" and time.monotonic() - started < 5
    assert not run.alive
    assert f"the supervisor (pid {ended_process.pid}) ended without writing a final event" in run.error
    assert "last heartbeat 12 s ago" in run.error and "launch the run again" in run.error


def test_a_run_with_a_live_process_reads_running_and_wait_blocks(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1), heartbeat_age=60)
    ranks = stand_in(run_dir)
    liveness.record_process(run_dir, "ranks", ranks.pid)
    try:
        run = ortnb.attach(run_dir)
        assert run.status == "running" and run.alive and run.error is None
        started = time.monotonic()
        assert run.wait(1.0) == "running"
        assert time.monotonic() - started >= 1.0  # it waited for the run instead of returning at once
        with open(run_dir / layout.METRICS, "a") as handle:
            handle.write(json.dumps(event("completed", step=1)) + "\n")
        assert run.status == "completed"
    finally:
        end(ranks)


def test_a_planted_pid_file_naming_another_program_is_neither_alive_nor_signalled(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1), step(2))
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)  # someone else's program
    try:
        for role in ("supervisor", "ranks"):  # its real pid and create time, copied into the run folder
            liveness.record_process(run_dir, role, other.pid)
        run = ortnb.attach(run_dir)
        assert run.status == "failed" and not run.alive
        assert run.stop(timeout=0.5) == "failed"
        other_run = ortnb.attach(run_folder(tmp_path / "copy", event("started")))
        other_run._processes = liveness.read_processes(run_dir)  # even handed the entries, it checks them
        other_run._force()
        assert other.poll() is None, "another program received the run's signal"
    finally:
        end(other)


def test_a_process_names_its_run_folder_through_a_symlink(tmp_path):
    run_dir = run_folder(tmp_path, event("started"))
    link = tmp_path / "link"
    link.symlink_to(run_dir.parent)
    assert liveness.names_folder(["python", "-m", "ortnb.runner.worker", str(run_dir)], link / run_dir.name)
    assert liveness.names_folder(["python", str(link / run_dir.name)], run_dir)
    assert not liveness.names_folder(["sleep", "60"], run_dir)
    assert not liveness.names_folder([str(run_dir)], run_dir)  # the program itself is not an argument
    assert not liveness.names_folder(["python", str(run_dir) + "-other"], run_dir)


def test_pid_files_another_user_wrote_neither_count_nor_aim_stop_at_a_process_of_yours(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1), step(2))
    mine = stand_in(run_dir)  # a process of this user whose command line holds the folder
    try:
        for role in ("supervisor", "ranks"):
            liveness.record_process(run_dir, role, mine.pid)
            os.chown(layout.process_file(run_dir, role), 54321, 54321)  # planted by another user
        run = ortnb.attach(run_dir)
        assert run.status == "failed" and not run.alive
        assert f"pid-ranks.json belongs to uid 54321 but pid {mine.pid} runs as uid {os.getuid()}" in run.error
        assert "neither counted as the run nor signalled" in run.error and "who wrote those pid files" in run.error
        assert run.stop(timeout=0.5) == "failed"
        run._force()  # even the forced stop, handed the entries, checks them
        assert mine.poll() is None, "a process of this user received the signal another user's pid file aimed"
    finally:
        end(mine)


def test_a_pid_file_is_followed_when_its_owner_runs_the_process():
    entry = {"role": "ranks", "pid": 42, "run_dir": "/runs/r", "file_uid": 1000}
    assert liveness.foreign_owner(entry, 1000) is None
    assert liveness.foreign_owner({**entry, "file_uid": None}, 1000) is None  # an entry from launch itself
    assert liveness.foreign_owner(entry, 0) == (
        "pid-ranks.json belongs to uid 1000 but pid 42 runs as uid 0: a pid file another user wrote is not followed, "
        "so that process is neither counted as the run nor signalled (delete the file if it is yours)")


def test_a_folder_is_named_by_any_path_to_it_a_container_s_included(tmp_path):
    runs = tmp_path / "runs"
    (runs / "run-1").mkdir(parents=True)
    container = tmp_path / "container"  # a process in a container sees the runs folder as /workspace
    container.mkdir()
    (container / "workspace").symlink_to(runs)
    command = ["python", "-m", "ortnb.runner.worker", "/workspace/run-1"]
    assert liveness.names_folder(command, runs / "run-1", root=container)
    assert not liveness.names_folder(command, runs / "run-1")  # from outside, /workspace is not the folder
    (runs / "run-2").mkdir()
    assert not liveness.names_folder(command, runs / "run-2", root=container)
    assert liveness.folder_identity(runs / "run-1") == liveness.folder_identity(tmp_path / "container/workspace/run-1")
    assert liveness.folder_identity(tmp_path / "missing") is None


@pytest.fixture
def bind_mount(tmp_path):
    """A second path to tmp_path/runs through a bind mount (what a container volume is)."""
    source, target = tmp_path / "runs", tmp_path / "mounted"
    source.mkdir(exist_ok=True)
    target.mkdir()
    if subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts need root (CAP_SYS_ADMIN)")
    yield target
    subprocess.run(["umount", "-l", str(target)], check=True)


def test_a_run_attached_through_a_symlink_to_another_mount_of_its_folder_is_running_and_stops(tmp_path, bind_mount):
    run_dir = run_folder(tmp_path, event("started"), step(1), heartbeat_age=1)
    started_as = bind_mount / run_dir.name  # the process was started with the mounted path
    ranks = stand_in(started_as)
    liveness.record_process(started_as, "ranks", ranks.pid)
    link = tmp_path / "link"
    link.symlink_to(run_dir)
    try:
        run = ortnb.attach(link)  # the user's path: a symlink to the folder's other mount
        assert run.status == "running" and run.alive, run.error
        run._force()
        assert wait_for(lambda: ranks.poll() is not None, 10), "stop() did not reach the run's process"
        assert run.status == "stopped"
    finally:
        end(ranks)


def test_a_reused_pid_does_not_count_as_the_run(tmp_path):
    run_dir = run_folder(tmp_path, event("started"))
    liveness.record_process(run_dir, "supervisor", os.getpid())
    entry = json.loads(layout.process_file(run_dir, "supervisor").read_text())
    entry["create_time"] -= 3600  # same pid, another process
    layout.process_file(run_dir, "supervisor").write_text(json.dumps(entry))
    assert ortnb.attach(run_dir).status == "failed"


def test_processes_on_another_host_are_judged_by_the_heartbeat(tmp_path):
    run_dir = run_folder(tmp_path, heartbeat_age=1)
    layout.process_file(run_dir, "supervisor").write_text(json.dumps(
        {"role": "supervisor", "pid": 1, "create_time": 0.0, "host": "another-machine"}))
    assert ortnb.attach(run_dir).status == "starting"
    then = time.time() - 40
    os.utime(run_dir / layout.HEARTBEAT, (then, then))
    run = ortnb.attach(run_dir)
    assert run.status == "failed"
    assert "pid 1 on another-machine) cannot be checked from this host" in run.error and "40 s ago" in run.error


def test_a_folder_without_recorded_processes_or_heartbeat_reads_failed(tmp_path):
    run = ortnb.attach(run_folder(tmp_path, event("started")))
    assert run.status == "failed" and "no process of this run is recorded" in run.error


def test_status_json_carries_the_outcome_when_the_stream_could_not(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1))
    status_file.reserve(run_dir)
    assert status_file.write(run_dir, status="failed", error="The disk holding /x is full", traceback="Tb" * 5000)
    assert (run_dir / layout.STATUS).stat().st_size == status_file.SIZE  # overwritten in place, never grown
    run = ortnb.attach(run_dir)
    assert run.status == "failed" and run.error.startswith("The disk holding /x is full")


def test_attach_takes_a_relative_path_and_keeps_it_absolute(tmp_path, monkeypatch):
    run_dir = run_folder(tmp_path, event("started"), event("completed", step=1))
    monkeypatch.chdir(run_dir.parent)
    run = ortnb.attach(run_dir.name)
    monkeypatch.chdir(tmp_path)
    assert run.run_dir == run_dir and run.run_dir.is_absolute() and run.status == "completed"
    with pytest.raises(FileNotFoundError, match="is not a run folder: it holds no config.json"):
        ortnb.attach(tmp_path)


def test_a_deleted_run_folder_reads_failed_once_its_processes_ended(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1))
    supervisor = stand_in(run_dir)
    liveness.record_process(run_dir, "supervisor", supervisor.pid)  # still running for now
    try:
        run = ortnb.attach(run_dir)
        assert run.status == "running"
        shutil.rmtree(run_dir)
        assert run.status == "running"  # its processes are remembered: it is failed only once they end
    finally:
        end(supervisor)
    assert run.status == "failed" and "the run folder was deleted while the run trained" in run.error


def test_a_forced_stop_without_a_supervisor_ends_the_ranks_and_says_so(tmp_path, ended_process):
    run_dir = run_folder(tmp_path, event("started"), step(1), step(2))
    record_ended(run_dir, "supervisor", ended_process)
    ranks = stand_in(run_dir)  # a step that never ends
    liveness.record_process(run_dir, "ranks", ranks.pid)
    run = ortnb.attach(run_dir)
    assert run.status == "running"
    try:
        assert run.stop(timeout=0.5) == "stopped"
    finally:
        ranks.kill()
        ranks.wait()
    assert ranks.returncode == -signal.SIGTERM  # terminated by stop(), not by the clean-up above
    final = run.events[-1]
    assert final["forced"] is True and final["step"] == 2 and "within 0.5 s of the stop request" in final["reason"]
    assert status_file.read(run_dir)["status"] == "stopped"


# -- the supervisor's last word (no training) ------------------------------------------------

def test_the_supervisor_ends_a_stream_broken_by_a_full_disk_with_the_workers_error(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1))
    with open(run_dir / layout.METRICS, "a") as handle:
        handle.write('{"kind": "step", "step": 2, "wall')  # what the full disk left
    status_file.reserve(run_dir)
    status_file.write(run_dir, status="failed", error="The disk holding it is full", traceback="Traceback ...")
    assert supervise.finish(run_dir, returncode=1) == "failed"
    run = ortnb.attach(run_dir)
    assert run.status == "failed" and run.error.startswith("The disk holding it is full") and run.bad_lines == 1
    assert list(run.metrics["step"]) == [1]
    assert json.loads((run_dir / layout.STATUS).read_text())["returncode"] == 1


def test_the_supervisor_names_a_killed_rank(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1))
    assert supervise.finish(run_dir, returncode=-signal.SIGKILL) == "failed"
    assert "the ranks were killed by SIGKILL (the system's out-of-memory killer" in ortnb.attach(run_dir).error


def test_the_supervisor_records_a_forced_stop(tmp_path):
    run_dir = run_folder(tmp_path, event("started"), step(1), step(2))
    control.request_stop(run_dir, timeout=5)
    assert supervise.finish(run_dir, returncode=-signal.SIGTERM, terminated=True) == "stopped"
    final = ortnb.attach(run_dir).events[-1]
    assert final["event"] == "stopped" and final["forced"] is True and final["step"] == 2
    assert final["reason"] == ("the step in progress did not end within 5 s of the stop request, so the ranks "
                               "were terminated; kept: nothing to load: the run wrote no evaluation's weights, no final "
                               "model and no whole checkpoint.")


def test_a_forced_stop_names_the_last_whole_checkpoint(tmp_path):
    run_dir = run_folder(tmp_path)
    control.request_stop(run_dir, timeout=2.5)
    for n, whole in ((4, True), (8, True), (12, False)):  # checkpoint-12 was cut short by the kill
        folder = run_dir / f"checkpoint-{n}"
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(b"weights")  # written, perhaps in part: only the marker tells
        if whole:
            layout.mark_whole(folder)
    assert control.forced_stop_reason(run_dir).endswith(
        "within 2.5 s of the stop request, so the ranks were terminated; kept: checkpoint-8 (the last whole "
        "checkpoint): load_model(), Try it and export use it; resume from checkpoint-8.")
    # the reported case: stopped at step 12 with best/ (step 12) there: it is what is loaded, not "nothing"
    (run_dir / layout.BEST).mkdir()
    (run_dir / layout.BEST / layout.BEST_MARKER).write_text('{"step": 12, "metric": "accuracy", "value": 0.9}')
    assert layout.kept_text(run_dir) == ("best/ (step 12, accuracy 0.9): load_model(), Try it and export use it; "
                                         "resume from checkpoint-8")
    assert layout.kept_text(tmp_path / "empty") == ("nothing to load: the run wrote no evaluation's weights, no final "
                                                    "model and no whole checkpoint")


def test_the_supervisor_writes_nothing_into_a_deleted_folder(tmp_path):
    run_dir = run_folder(tmp_path, event("started"))
    shutil.rmtree(run_dir)
    assert supervise.finish(run_dir, returncode=1) == "failed"
    assert not run_dir.exists()


# -- real runs ----------------------------------------------------------------------------------

def eager(tmp_path, **overrides):
    return tiny(tmp_path, backend="eager", **overrides)


@pytest.mark.slow
def test_a_full_disk_fails_the_run_with_the_reason_and_ortnb_run_survives_the_broken_line(tmp_path):
    config = tmp_path / "config.json"
    eager(tmp_path, max_steps=6, warmup_steps=0).to_json(config)
    env = {**os.environ, "ORTNB_FAULT": "diskfull:3"}
    done = subprocess.run([sys.executable, "-m", "ortnb", "run", str(config)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.count("samples/s") == 2 and "ortnb run: failed" in done.stdout
    assert "The disk holding" in done.stderr and "is full" in done.stderr and "Traceback" not in done.stdout
    run = ortnb.attach(done.stdout.split(" in ", 1)[1].splitlines()[0])
    assert run.wait(60) == "failed"  # and the supervisor has had its last word
    assert "No space left on device" in run.error and "Free space" in run.error
    assert run.bad_lines == 1 and list(run.metrics["step"]) == [1, 2]
    assert json.loads((run.run_dir / layout.STATUS).read_text())["status"] == "failed"


@pytest.mark.slow
def test_a_killed_supervisor_stops_the_ranks_with_a_checkpoint_and_says_why(tmp_path, monkeypatch):
    # Nobody is left to record how the run ends, so the ranks stop after their step instead of training on
    # re-parented to pid 1 (runner/orphan.py); the rank itself writes the final status.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ORTNB_FAULT", "slow:0.3")
    run = ortnb.launch(eager(tmp_path, max_steps=200, output_dir="runs"))  # relative: stored absolute
    assert run.run_dir.is_absolute()
    assert ortnb.attach(run.run_dir).config.output_dir == str((tmp_path / "runs").resolve())
    assert wait_for(lambda: len(run.metrics) >= 2, 300), run.error
    supervisor = json.loads(layout.process_file(run.run_dir, "supervisor").read_text())["pid"]
    os.kill(supervisor, signal.SIGKILL)
    assert wait_for(lambda: not psutil.pid_exists(supervisor), 10)  # the kernel reaped it: no zombie
    monkeypatch.chdir("/")  # the kernel's working directory moves on
    assert run.wait(300) == "stopped", run.error
    final = run.events[-1]
    assert final["event"] == "stopped" and f"its supervisor (pid {supervisor}) ended" in final["reason"], final
    assert layout.checkpoints(run.run_dir), "the stopped run keeps a checkpoint"
    steps = list(run.metrics["step"])
    assert steps == list(range(1, len(steps) + 1)) and len(steps) < 200
    assert type(run.load_model()).__name__ == "BertForSequenceClassification"
    assert_no_workers_within(run)
    assert not zombies()


@pytest.mark.slow
def test_a_stop_whose_step_outlasts_the_timeout_is_a_forced_stop(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "stall:2")
    run = ortnb.launch(eager(tmp_path, max_steps=50))
    assert wait_for(lambda: len(run.metrics) >= 1, 300), run.error
    asked = time.monotonic()
    assert run.stop(timeout=2) == "stopped"
    assert time.monotonic() - asked < 2 + 10
    final = run.events[-1]
    assert final["event"] == "stopped" and final["forced"] is True and run.error is None
    assert final["reason"].startswith("the step in progress did not end within 2 s of the stop request")
    # the evaluation before the first step saved best/: the stop says it is what loads, and that nothing resumes
    assert "kept: best/ (step 0, accuracy" in final["reason"] and "no whole checkpoint to resume from" in final["reason"]
    assert_no_workers_within(run, 30)
    assert not zombies()


@pytest.mark.slow
def test_deleting_the_run_folder_mid_run_stops_it_and_it_stays_deleted(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "slow:0.3")
    run = ortnb.launch(eager(tmp_path, max_steps=200))
    assert wait_for(lambda: len(run.metrics) >= 2, 300), run.error
    delete_until_gone(run.run_dir)  # its worker still writes: one rmtree can meet a file written meanwhile
    assert run.wait(120) == "failed"
    assert "the run folder was deleted while the run trained" in run.error
    assert_no_workers_within(run)
    assert not run.run_dir.exists() and not workers_under(run.run_dir)
