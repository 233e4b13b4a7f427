"""The writing side of the run-folder protocol, one for every kind of worker process (a trainer run's ranks,
runner/worker.py; an edge run's one process, edge/worker.py):

- the writing process records itself (pid-writer.json, which stop() and liveness read) and keeps the
  heartbeat fresh; a process that owns the run's status (an edge worker: no supervisor above it) reserves
  status.json first, so the final status has room even when the disk fills up later;
- it appends the metrics stream (records.py builds what goes in);
- every step it looks whether the folder was deleted under it, and stops without writing anything if so
  (carrying on would recreate files in a folder its user removed);
- a failure reaches the places the notebook looks: the rank's error file, the stream's failed event, else
  status.json, with a full disk named as one (full_disk.describe_error).
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Callable

from . import layout, liveness, status_file
from .full_disk import describe_error
from .stream_write import MetricsWriter


class RunFolderDeleted(RuntimeError):
    pass


def folder_gone(run_dir: Path, writes_metrics: bool) -> bool:
    """Whether the run folder (or, on the writing process, its metrics file) was deleted under the run."""
    run_dir = Path(run_dir)
    return not (run_dir / layout.CONFIG).exists() or (writes_metrics and not (run_dir / layout.METRICS).exists())


def deleted_error(run_dir: Path, step: int) -> RunFolderDeleted:
    return RunFolderDeleted(f"The run folder {run_dir} was deleted while the run trained (seen after step {step}); "
                            "training stopped without writing anything. Launch the run again.")


class Recorder:
    """One process's side of its run folder. ``writer`` is None on ranks that write nothing (all but the
    writing rank of a trainer run); they still leave an error file when they fail."""

    def __init__(self, run_dir: Path, rank: int, writer: MetricsWriter | None, heartbeat=None,
                 owns_status: bool = False):
        self.run_dir, self.rank, self.writer = Path(run_dir), rank, writer
        self._heartbeat, self.owns_status = heartbeat, owns_status

    @classmethod
    def open(cls, run_dir: Path, *, rank: int = 0, writes: bool = True, owns_status: bool = False,
             make_writer: Callable[[Path], MetricsWriter] = MetricsWriter) -> "Recorder":
        """Start recording: for the writing process, its pid file, the status reservation (``owns_status``),
        the heartbeat and the metrics writer (``make_writer``: tests give a faulty one)."""
        run_dir = Path(run_dir)
        if not writes:
            return cls(run_dir, rank, None)
        liveness.record_process(run_dir, liveness.WRITER, os.getpid())
        if owns_status:
            status_file.reserve(run_dir)
        writer = make_writer(run_dir / layout.METRICS)
        return cls(run_dir, rank, writer, liveness.start_heartbeat(run_dir), owns_status)

    def folder_gone(self) -> bool:
        return folder_gone(self.run_dir, self.writer is not None)

    def check_folder(self, step: int) -> None:
        """Raise RunFolderDeleted when the folder went away under the run (called after every step)."""
        if self.folder_gone():
            raise deleted_error(self.run_dir, step)

    def finish(self, status: str) -> None:
        """The run ended by itself or by a stop: its final status, when this process owns it."""
        if self.owns_status:
            status_file.write(self.run_dir, status=status)

    def fail(self, error: BaseException) -> None:
        """Put the error where the notebook looks: always the rank's error file; on the writing process the
        stream's failed event, and status.json where this process owns it or the stream could not take it.
        Never writes into a deleted run folder (the error goes to stderr, which run.log or the terminal keeps)."""
        tail = traceback.format_exc()[-4000:]
        if not (self.run_dir / layout.CONFIG).exists():
            print(f"ortnb worker rank {self.rank}: {error}", file=sys.stderr, flush=True)
            return
        try:
            layout.error_file(self.run_dir, self.rank).write_text(tail)
        except OSError:
            pass
        if self.writer is None:
            return
        message = describe_error(error, self.run_dir)
        try:
            self.writer.event("failed", rank=self.rank, error=message, traceback=tail)
        except OSError as write_error:
            status_file.write(self.run_dir, status="failed", rank=self.rank, traceback=tail,
                              error=f"{message} (metrics.jsonl could not take this error either: "
                                    f"{write_error.strerror})")
            return
        if self.owns_status:
            status_file.write(self.run_dir, status="failed", error=message, traceback=tail)

    def close(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.set()
        if self.writer is not None:
            self.writer.close()
