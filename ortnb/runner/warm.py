"""A warm worker: one process that trains one-process runs one after another, for measurements (tune) that
would otherwise pay a whole run's start-up each: a Python interpreter for the supervisor and one for the rank,
torch, transformers and ONNX Runtime imported twice, the machine's peak measured again. Started once, it pays
that once; each run still loads its model, looks its data up in the token cache and, on ORT, exports its graph.

    python -m ortnb.runner.warm RUNS_DIR      (run folders to train come on stdin, one path per line)

Every run it serves keeps the run-folder protocol: it records itself as the run's supervisor, ranks and
writer (marked ``serves_in_turn``: it counts as the run's process only until the run's final status is
written, see liveness.process_alive), beats the heartbeat, writes the stream and ends it with a final event
and status.json, exactly as supervise.py and worker.py do for a run of their own. stop() works as for any
run: a stop request ends the run after its step; forcing it ends the warm worker too (WarmWorker starts a
new one for the next run). When the process that started it goes (stdin closes), the run in progress stops
after its step, as a rank whose supervisor died does, and the worker exits.

Runs of several processes (DDP, ZeRO) or across nodes are refused: they go through launch().
"""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from ..config import RunConfig
from ..errors import ConfigError
from . import layout, liveness, status_file

ROLES = ("supervisor", "ranks", "writer")


# -- the kernel's side -----------------------------------------------------------------------------


class WarmWorker:
    """``launch(cfg) -> Run`` for one-process runs under ``runs_dir``, all trained by one long-lived process
    (started on the first launch, and again after one was forced to end). ``close()`` ends it; so does the
    end of the process that started it."""

    def __init__(self, runs_dir: str | Path):
        self.runs_dir = Path(runs_dir).expanduser().resolve()
        self._process: subprocess.Popen | None = None
        self.started = 0  # worker processes started so far (a forced stop ends one)

    @staticmethod
    def serves(cfg: RunConfig) -> str | None:
        """Why this worker cannot train ``cfg`` (None: it can)."""
        if cfg.num_processes != 1:
            return f"num_processes={cfg.num_processes}: a warm worker trains one-process runs only"
        if cfg.zero_stage:
            return f"zero_stage={cfg.zero_stage}: DeepSpeed runs start their own processes"
        if not isinstance(cfg.dataset, str):
            return "an in-memory dataset: launch() stores it in the run folder first"
        return None

    def launch(self, cfg: RunConfig):
        from ..validation import check
        from .launch import Run

        why_not = self.serves(cfg)
        if why_not:
            raise ConfigError(f"WarmWorker.launch: {why_not}; use ortnb.launch for this configuration.")
        check(cfg)
        cfg = cfg.replace(output_dir=str(self.runs_dir))
        run_dir = layout.new_run_dir(self.runs_dir, cfg.label)
        cfg.to_json(run_dir / layout.CONFIG)
        process = self._running()
        # Recorded before the job is handed over, so the run counts as starting (not dead) while it waits.
        record(run_dir, process.pid)
        process.stdin.write(f"{run_dir}\n")
        process.stdin.flush()
        return Run(cfg, run_dir, process)

    def _running(self) -> subprocess.Popen:
        if self._process is not None and self._usable(self._process):
            return self._process
        from .supervise import worker_environment

        self.runs_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.runs_dir / "warm-worker.log", "ab")
        # A session of its own: stop()'s escalation signals this group, and must reach nothing else.
        self._process = subprocess.Popen([sys.executable, "-m", "ortnb.runner.warm", str(self.runs_dir)],
                                         stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, text=True,
                                         env=worker_environment(RunConfig()), start_new_session=True)
        log.close()
        self.started += 1
        return self._process

    def _usable(self, process: subprocess.Popen) -> bool:
        """Whether the worker can take a run: alive, and not on its way out. A killed process is seen as ended by
        its runs (its command line is gone) a moment before it can be reaped: wait for that, not start twice."""
        if process.poll() is not None:
            return False
        entry = {"pid": process.pid, "host": socket.gethostname(), "run_dir": str(self.runs_dir / "next")}
        if liveness.process_alive({**entry, "serves_in_turn": True}) is False:
            try:
                process.wait(10.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            return False
        return True

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def close(self, timeout: float = 30.0) -> None:
        """End the worker: it finishes the run in progress (stop it first to be quick), then exits."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> "WarmWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def record(run_dir: Path, pid: int) -> None:
    """The worker is each of the run's roles while it serves it."""
    for role in ROLES:
        liveness.record_process(run_dir, role, pid, serves_in_turn=True)


# -- the worker's side -----------------------------------------------------------------------------


class _Parent:
    """Reads run folders from stdin; ``gone`` (what RunCallback watches, like orphan.SupervisorWatch) is set
    when stdin closes: the process that started this worker ended or closed it."""

    def __init__(self, stream):
        self.gone = threading.Event()
        self.reason = ("the process that started this warm worker ended, so the run stopped after the step in "
                       "progress instead of training on unwatched")
        self._jobs: list[str] = []
        self._ready = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), name="ortnb-warm-jobs", daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            if line.strip():
                with self._ready:
                    self._jobs.append(line.strip())
                    self._ready.notify()
        with self._ready:
            self.gone.set()
            self._ready.notify()

    def next_job(self) -> str | None:
        """The next run folder; None once stdin has closed and no job is left."""
        with self._ready:
            while not self._jobs and not self.gone.is_set():
                self._ready.wait()
            return self._jobs.pop(0) if self._jobs else None


def serve(runs_dir: Path, stream=None) -> int:
    parent = _Parent(stream or sys.stdin)
    served = 0
    while (job := parent.next_job()) is not None:
        run_dir = Path(job).resolve()
        if run_dir.parent != runs_dir or not (run_dir / layout.CONFIG).exists():
            print(f"ortnb warm worker: skipped {run_dir}: not a run folder under {runs_dir}", flush=True)
            continue
        train_one(run_dir, parent, served)
        served += 1
    return 0


def train_one(run_dir: Path, parent: _Parent, served: int) -> str:
    """One run, as supervise.py and worker.py would train it, in this process; returns its final status."""
    from . import worker
    from .recorder import Recorder
    from .supervise import finish, record_peak

    record(run_dir, os.getpid())
    status_file.reserve(run_dir)
    heartbeat = liveness.start_heartbeat(run_dir)
    recorder = Recorder(run_dir, 0, None)
    returncode = 1
    try:
        record_peak(RunConfig.from_json(run_dir / layout.CONFIG), run_dir)  # flops caches the machine's peak
        recorder = Recorder.open(run_dir)
        recorder.writer.event("warm", pid=os.getpid(), run=served + 1)  # no process start or imports in its start-up
        worker.run(run_dir, 0, 1, recorder.writer, None, parent)
        returncode = 0
    except BaseException as error:  # noqa: BLE001 - a failed run must not end the worker serving the next
        recorder.fail(error)
    finally:
        recorder.close()
        status = finish(run_dir, returncode)
        heartbeat.set()
        _forget_run()
    return status


def _forget_run() -> None:
    """What a finished run leaves in the process goes before the next one starts: its model, optimizer and
    ORT sessions (whose thread pools would otherwise compete with the next run's), compiled graphs."""
    import torch

    gc.collect()
    if hasattr(torch, "_dynamo"):
        torch._dynamo.reset()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    return serve(Path(args[0]).resolve())


if __name__ == "__main__":
    sys.exit(main())
