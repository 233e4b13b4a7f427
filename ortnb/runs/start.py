"""Starting a process of a run out of the kernel's: the one way a run's supervisor, an edge worker and a warm
worker are started, so each gets the same four things."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from . import liveness


def start_process(command: list[str], log: Path, *, name: str, run_dir: Path | None = None, role: str | None = None,
                  env: dict | None = None) -> subprocess.Popen:
    """Start ``command`` with

    - its output appended to ``log`` (a run's run.log: what a failure's error points to);
    - a session of its own: Stop's escalation signals the process group, and must reach nothing else (a Ctrl-C in
      the terminal does not reach it either: stopping goes through the run folder);
    - its pid recorded in ``run_dir`` as ``role`` (pid-<role>.json) when given, for liveness and stop;
    - a reaper thread named ``name``, so it never stays a zombie, whether or not anyone reads the run again.

    Standard input is closed: nothing a run does waits on the kernel's."""
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=os.getcwd(), env=env)
    if run_dir is not None and role is not None:
        liveness.record_process(run_dir, role, process.pid)
    threading.Thread(target=process.wait, name=name, daemon=True).start()
    return process
