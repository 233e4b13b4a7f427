"""One rule for every command that starts a run and waits on it (compare, tune, profile): however the wait ends,
by the run's own end, a stall, a timeout, an exception or a KeyboardInterrupt, the run is ended before the
command goes on. A stalled run never ends by itself, so a command that gave up on it and left would leave its
supervisor and worker training unwatched.

    run = launch(cfg)
    with ended_after(run):
        status = run.wait(timeout)
"""

from __future__ import annotations

from contextlib import contextmanager

from .. import interrupts
from ..runs.control import SETTLE_S

STOP_S = 30.0  # how long a run asked to stop may finish its step (stop()'s default) before it is forced
KILL_S = 5.0  # after the last resort, how long wait() looks for the processes to be gone


@contextmanager
def ended_after(run, stop_timeout: float = STOP_S):
    """Run the block, then end ``run`` (see ``end``) whatever ended the block; a further Ctrl-C or SIGTERM while
    it ends does not cut that short."""
    try:
        yield run
    finally:
        with interrupts.deferred():
            end(run, stop_timeout)


def end(run, stop_timeout: float = STOP_S) -> None:
    """Stop the run if it has not ended (after its step in progress, forced after ``stop_timeout`` s), let its
    processes exit, and SIGKILL any that outlive that."""
    if not run.done:
        run.stop(stop_timeout)
        run.wait(SETTLE_S)
    kill_leftovers(run)


def kill_leftovers(run) -> None:
    """The last resort when a run's processes outlive its end: SIGKILL every one recorded in its folder."""
    if not run.alive:
        return
    from ..runs import control, liveness

    for entry in liveness.read_processes(run.run_dir).values():
        control.kill_tree(entry)
    run.wait(KILL_S)
