"""A rank whose supervisor died stops. Without its supervisor nobody records how the run ended, stop()'s
escalation (SIGTERM to the supervisor) reaches nothing, and the rank would train on, re-parented to pid 1.

A daemon thread watches the supervisor recorded in pid-supervisor.json. Once it has gone, ``gone`` is set and
RunCallback treats it like a stop request: every rank stops after the step in progress, with a checkpoint,
and the stream ends with a ``stopped`` event that says why. A rank that is still alive ORPHAN_GRACE_S later
is hung (no step end came to see the request), and the thread ends its process.

Why not prctl(PR_SET_PDEATHSIG): the kernel's signal would end the rank in the middle of a step, without a
checkpoint, and it only follows the direct parent, which for several ranks is torchrun, not the supervisor.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from ..runs import liveness

ORPHAN_GRACE_S = 600.0  # far more than a step and its checkpoint take; a rank alive after that is hung


class SupervisorWatch:
    def __init__(self, run_dir: Path, interval: float = liveness.HEARTBEAT_S, grace: float = ORPHAN_GRACE_S):
        self.run_dir = Path(run_dir)
        self.gone = threading.Event()
        self.reason: str | None = None
        self._entry = _supervisor(self.run_dir)
        self._interval, self._grace = interval, grace

    def start(self) -> "SupervisorWatch":
        if self._entry is not None:  # a rank started by hand (no supervisor) has nothing to watch
            threading.Thread(target=self._watch, name="ortnb-supervisor-watch", daemon=True).start()
        return self

    def _watch(self) -> None:
        while liveness.process_alive(self._entry) is not False:
            time.sleep(self._interval)
        self.reason = (f"its supervisor (pid {self._entry['pid']}) ended, so the ranks stopped after the step in "
                       "progress, with a checkpoint, instead of training on unwatched")
        self.gone.set()
        time.sleep(self._grace)  # a rank that stopped has exited by now, and this thread with it
        print(f"ortnb worker: the supervisor ended {self._grace:.0f} s ago and this rank has not stopped; it is "
              "hung, so it ends now.", file=sys.stderr, flush=True)
        os._exit(1)


def _supervisor(run_dir: Path) -> dict | None:
    """The supervisor's record (it writes it before it starts the ranks); None without one."""
    entry = liveness.read_processes(run_dir).get(liveness.SUPERVISOR)
    return entry if entry is not None and "pid" in entry else None
