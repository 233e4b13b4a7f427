"""Stopping a run: the request the ranks read at each step end, and the forced end when they do not
answer in time (SIGTERM through the supervisor, then SIGKILL to every process of the run)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from .. import files
from . import layout, liveness

SETTLE_S = 30.0  # after a run's final event, how long its processes get to exit (torchrun tears down)


def request_stop(run_dir: Path, timeout: float) -> None:
    """Create RUN_DIR/STOP (the ranks only test that it exists); it also says how long stop() waits,
    for the forced stop's reason."""
    (Path(run_dir) / layout.STOP).write_text(json.dumps({"requested": time.time(), "timeout": timeout}))


def stop_requested(run_dir: Path) -> bool:
    return (Path(run_dir) / layout.STOP).exists()


def forced_stop_reason(run_dir: Path) -> str:
    """What a forced stop did and what it kept, for the ``stopped`` event's ``reason``."""
    timeout = (files.read_json_object(Path(run_dir) / layout.STOP) or {}).get("timeout")
    waited = f"within {timeout:g} s of the stop request" if isinstance(timeout, (int, float)) else "in time"
    return (f"the step in progress did not end {waited}, so the ranks were terminated; kept: "
            f"{layout.kept_text(run_dir)}.")


def signal_group(pid: int, signum: int) -> bool:
    """Signal the process group led by ``pid`` (each run process starts its own session)."""
    try:
        os.killpg(pid, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_tree(entry: dict, signum: int = signal.SIGKILL) -> None:
    """Signal a recorded process and all its descendants (torchrun starts each rank in a session of its
    own, so a process group does not reach them). Skipped if the pid now belongs to another process."""
    import psutil

    if not liveness.process_alive(entry):
        return
    try:
        root = psutil.Process(entry["pid"])
        family = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    for process in family:
        try:
            process.send_signal(signum)
        except psutil.NoSuchProcess:
            pass
