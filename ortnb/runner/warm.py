"""Warm workers: long-lived processes that train runs one after another, for measurements (tune) that would
otherwise pay a whole run's start-up each: a Python interpreter for the supervisor and one per rank (torchrun's
too), torch, transformers and ONNX Runtime imported again, the ranks' process group formed again. A warm worker
pays that once; each run still loads its model, reads its data from the token cache and, on ORT, exports its
graph. A run trained warm has the same losses as the same run launched cold (tests/runner/test_warm_worker.py).

    python -m ortnb.runner.warm RUNS_DIR QUEUE_DIR                       (one process)
    python -m ortnb.runner.torchrun [loopback node arguments] --nproc_per_node=N -m ortnb.runner.warm RUNS_DIR QUEUE_DIR

QUEUE_DIR (RUNS_DIR/.warm-xN-PID-TOKEN, one per worker started) holds the jobs, ``000001.job``, ``000002.job``...,
each naming a run folder; every rank takes them in order. ``parent.json`` names the process that started the
worker, ``close`` asks it to end.

Every run keeps the run-folder protocol: the worker is recorded as the run's supervisor, ranks and writer, marked
``serves_in_turn`` (it counts as the run's process only until the run's final status is written, see
liveness.process_alive); it beats the heartbeat, writes the stream and its run.log, and ends the stream with a
final event and status.json, as supervise.py and worker.py do for a run of their own. stop() works as for any
run: a stop request ends the run after its step; forcing it ends the worker too (WarmWorker starts a new one for
the next run), as does a run that fails on one of several ranks (the others would wait for it forever). When the
process that started it ends, or ``close`` appears, the run in progress stops after its step and the worker exits.

Runs with DeepSpeed (ZeRO) or across nodes are refused: they go through launch().
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .. import files
from ..config import RunConfig
from ..errors import ConfigError
from ..runs import layout, liveness, status_file
from ..runs.start import start_process
from . import torchrun

POLL_S = 0.1  # how often an idle worker looks for its next job
PARENT = "parent.json"
CLOSE = "close"


def queue_dir(runs_dir: Path, world: int) -> Path:
    """A queue of its own for each worker started here: two WarmWorkers on one runs folder (two searches) must
    never take each other's jobs."""
    return Path(runs_dir) / f".warm-x{world}-{os.getpid()}-{secrets.token_hex(4)}"


# -- the kernel's side -----------------------------------------------------------------------------


class _Server:
    """One warm worker process (one, or torchrun with its ranks) and its queue."""

    def __init__(self, process: subprocess.Popen, queue: Path):
        self.process, self.queue, self.jobs = process, queue, 0


class WarmWorker:
    """``launch(cfg) -> Run`` for runs under ``runs_dir``: one long-lived worker per number of processes, started
    on the first launch that needs it (and again after one was forced to end). ``close()`` ends them; so does the
    end of the process that started them."""

    def __init__(self, runs_dir: str | Path):
        self.runs_dir = Path(runs_dir).expanduser().resolve()
        self._servers: dict[int, _Server] = {}
        self.started = 0  # worker processes started so far (a forced stop ends one)

    @staticmethod
    def serves(cfg: RunConfig) -> str | None:
        """Why a warm worker cannot train ``cfg`` (None: it can)."""
        if cfg.zero_stage:
            return f"zero_stage={cfg.zero_stage}: DeepSpeed runs start processes of their own"
        if not isinstance(cfg.dataset, str):
            return "an in-memory dataset: launch() stores it in the run folder first"
        return None

    def launch(self, cfg: RunConfig):
        from ..validation import check
        from ..runs.run import Run

        why_not = self.serves(cfg)
        if why_not:
            raise ConfigError(f"WarmWorker.launch: {why_not}; use ortnb.launch for this configuration.")
        check(cfg)
        cfg = cfg.replace(output_dir=str(self.runs_dir))
        run_dir = layout.new_run_dir(self.runs_dir, cfg.label)
        cfg.to_json(run_dir / layout.CONFIG)
        server = self._running(cfg.num_processes)
        # Recorded before the job is handed over, so the run counts as starting (not dead) while it waits.
        for role in (liveness.SUPERVISOR, liveness.RANKS):
            liveness.record_process(run_dir, role, server.process.pid, serves_in_turn=True)
        server.jobs += 1
        files.write_atomic(server.queue / f"{server.jobs:06d}.job", str(run_dir))
        return Run(cfg, run_dir, server.process, serves_in_turn=True)

    def _running(self, world: int) -> _Server:
        server = self._servers.get(world)
        if server is not None and self._usable(server.process):
            return server
        if server is not None:
            shutil.rmtree(server.queue, ignore_errors=True)  # a dead worker's jobs are not for the new one
        from .supervise import worker_environment

        queue = queue_dir(self.runs_dir, world)
        queue.mkdir(parents=True)
        files.write_atomic(queue / PARENT, json.dumps(_me()))
        module = ["-m", "ortnb.runner.warm", str(self.runs_dir), str(queue)]
        command = [sys.executable, *module] if world == 1 else torchrun.command(world, module)
        # Its own log (each run's output goes to its run.log); each run records it as its process when it takes it.
        process = start_process(command, queue / "worker.log", name="ortnb-warm-reaper",
                                env=worker_environment(RunConfig(num_processes=world)))
        self._servers[world] = server = _Server(process, queue)
        self.started += 1
        return server

    def _usable(self, process: subprocess.Popen) -> bool:
        """Whether a worker can take a run: alive, and not on its way out. A killed process is seen as ended by
        its runs (its command line is gone) a moment before it can be reaped: wait for that, not start twice."""
        if process.poll() is not None:
            return False
        entry = {"pid": process.pid, "host": socket.gethostname(), "run_dir": str(self.runs_dir / "next"),
                 "serves_in_turn": True}
        if liveness.process_alive(entry) is False:
            _end(process, 10.0)
            return False
        return True

    @property
    def alive(self) -> bool:
        return any(server.process.poll() is None for server in self._servers.values())

    def close(self, timeout: float = 30.0) -> None:
        """End the workers: each finishes the run in progress (stop it first to be quick), then exits; one still
        running after ``timeout`` seconds is killed. Their queues are deleted."""
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            try:
                (server.queue / CLOSE).touch()
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for server in servers:
            _end(server.process, max(0.0, deadline - time.monotonic()))
            shutil.rmtree(server.queue, ignore_errors=True)

    def __enter__(self) -> "WarmWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- the session's workers: ortnb.launch(cfg, warm=True) and the Dashboard ---------------------

CLOSE_AT_EXIT_S = 5.0  # at the session's end a run in progress gets this long to end before its worker is killed
_session: dict[Path, WarmWorker] = {}
_session_lock = threading.Lock()


def session_worker(runs_dir: str | Path) -> WarmWorker:
    """This process's warm worker for runs under ``runs_dir``, one per folder, kept for the session: the runs that
    follow the first of a kind start without a new interpreter or imports. It ends with this process (the worker
    watches its parent, and close_session runs at exit) or with close_session()."""
    folder = Path(runs_dir).expanduser().resolve()
    with _session_lock:
        if not _session:
            atexit.unregister(close_session)
            atexit.register(close_session, CLOSE_AT_EXIT_S)
        if folder not in _session:
            _session[folder] = WarmWorker(folder)
        return _session[folder]


def close_session(timeout: float = 30.0) -> None:
    """End this session's warm workers (each finishes its run in progress first, killed after ``timeout`` s):
    their memory back, the next warm launch starts a new one."""
    with _session_lock:
        workers = list(_session.values())
        _session.clear()
    for worker in workers:
        worker.close(timeout)


def _end(process: subprocess.Popen, timeout: float) -> None:
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        from ..runs import control

        control.signal_group(process.pid, 9)  # torchrun's ranks with it
        process.wait()


def _me() -> dict:
    import psutil

    return {"pid": os.getpid(), "create_time": psutil.Process().create_time(), "host": socket.gethostname()}


# -- the worker's side -----------------------------------------------------------------------------


class Parent:
    """``gone`` (what RunCallback watches, like orphan.SupervisorWatch) is set once the process that started this
    worker has ended, or asked it to end (``close`` in the queue)."""

    def __init__(self, queue: Path, interval: float = 0.5):
        self.queue = queue
        self.gone = threading.Event()
        self.reason = ("the process that started this warm worker ended or closed it, so the run stopped after the "
                       "step in progress instead of training on unwatched")
        self._entry = files.read_json_object(queue / PARENT)
        threading.Thread(target=self._watch, args=(interval,), name="ortnb-warm-parent", daemon=True).start()

    def _watch(self, interval: float) -> None:
        while not self.gone.is_set():
            if (self.queue / CLOSE).exists() or self._entry is None or liveness.process_alive(self._entry) is False:
                self.gone.set()
            time.sleep(interval)

    def next_job(self, number: int) -> Path | None:
        """The run folder of job ``number``; None once the worker is to end."""
        path = self.queue / f"{number:06d}.job"
        while not self.gone.is_set():
            if path.exists():
                text = path.read_text().strip()  # written atomically: whole or absent
                if text:
                    return Path(text)
            time.sleep(POLL_S)
        return None


def serve(runs_dir: Path, queue: Path) -> int:
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    parent = Parent(queue)
    number = 0
    while (run_dir := parent.next_job(number + 1)) is not None:
        number += 1
        run_dir = run_dir.resolve()
        if run_dir.parent != runs_dir or not (run_dir / layout.CONFIG).exists():
            print(f"ortnb warm worker: skipped {run_dir}: not a run folder under {runs_dir}", flush=True)
            continue
        if train_one(run_dir, rank, world, parent, number) == "failed" and world > 1:
            # A rank that failed leaves the others waiting in a collective: end them all (torchrun does).
            print("ortnb warm worker: a run failed on this rank; ending the worker", flush=True)
            os._exit(1)
    return 0


def train_one(run_dir: Path, rank: int, world: int, parent: Parent, number: int) -> str:
    """One run, trained in this process as supervise.py and worker.py would train it; returns how it ended."""
    from . import worker
    from ..runs.recorder import Recorder
    from . import machine_peak
    from .supervise import finish

    writes = int(os.environ.get("LOCAL_RANK", "0")) == 0
    heartbeat = None
    recorder = Recorder(run_dir, rank, None)
    status = "failed"
    with _output_to(run_dir / layout.LOG):
        try:
            if writes:
                status_file.reserve(run_dir)
                heartbeat = liveness.start_heartbeat(run_dir)
            machine_peak.record_or_await(run_dir, writes)
            # The same test faults as a launched run's (faults.py), from the worker's environment at its start
            fault = os.environ.get("ORTNB_FAULT")
            recorder = Recorder.open(run_dir, rank=rank, writes=writes, make_writer=worker.writer_for(fault))
            if writes:
                liveness.record_process(run_dir, liveness.WRITER, os.getpid(), serves_in_turn=True)
                recorder.writer.event("warm", pid=os.getpid(), run=number)  # no process start in its start-up
            status = worker.run(run_dir, rank, world, recorder.writer, fault, parent)
        except BaseException as error:  # noqa: BLE001 - a failed run must not end a worker serving the next
            recorder.fail(error)
        finally:
            recorder.close()
            if writes:
                status = finish(run_dir, 0 if status != "failed" else 1)
            if heartbeat is not None:
                heartbeat.set()
            _forget_run()
    return status


@contextmanager
def _output_to(log: Path):
    """This process's stdout and stderr go to the run's run.log while it trains (as a launched run's do)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:  # the folder went away: the output stays in the worker's log
        handle = None
    try:
        if handle is not None:
            os.dup2(handle, 1)
            os.dup2(handle, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in [*saved, handle]:
            if fd is not None:
                os.close(fd)


def _forget_run() -> None:
    """What a finished run leaves in the process goes before the next one starts: its model, optimizer and
    ORT sessions (whose thread pools would otherwise compete with the next run's), compiled graphs."""
    import torch

    gc.collect()
    if hasattr(torch, "_dynamo"):
        torch._dynamo.reset()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    return serve(Path(args[0]).resolve(), Path(args[1]).resolve())


if __name__ == "__main__":
    sys.exit(main())
