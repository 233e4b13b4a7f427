"""A run whose steps stop advancing reads "stalled".

The heartbeat only says that a process of the run lives: the supervisor keeps it fresh while a rank is
frozen (SIGSTOP, a deadlock in a collective, a hung data loader), and the other DDP rank waits in its
all-reduce for ever. What says that training advances is the metrics stream itself: a step line (or an
evaluation) at least every few step times. A run with no new record for longer than its bound reads
``stalled``: ``wait()`` returns on it, the Dashboard and the CLI say so, and ``stop()`` still ends it.

The bound is the run's ``stall_timeout_s`` when set; otherwise STALL_STEPS median step times, never under
STALL_FLOOR_S, and never under twice the longest pause already seen between records (an evaluation or a
checkpoint the run made before, which it will make again). Before the first step (model load, ONNX export,
graph build: minutes on a big model) and after the last one (saving the model) nothing is judged.

Past the bound, the ranks' processes decide (``still_working``, on two looks at /proc/PID/stat): one that is
runnable and still gains CPU time is slow (a loaded machine), not stalled; a stopped one (state T) or ranks that
all sleep without gaining CPU time (a hung collective) are stalled.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .stream_read import events, final_event, steps

STALL_FLOOR_S = 60.0
STALL_STEPS = 10
# A run past its bound is slow, not stalled, while a rank is runnable and still gains CPU time: on a machine with
# about 7 runnable processes per core a tiny run's step outlasted the bound while its worker computed. CPU_SHARE of
# a core is far above what an idle rank's threads use (a heartbeat every 2 s) and far below a seventh of a core.
CPU_SHARE = 0.05
LOOK_S = 0.5  # the shortest time between the two looks at the ranks' CPU time
STOPPED = ("T", "t")  # /proc/PID/stat's states of a stopped process (SIGSTOP, a debugger)


@dataclass(frozen=True)
class Stall:
    idle_s: float  # seconds since the last record
    bound_s: float
    last_step: int
    frozen: tuple[str, ...] = field(default=())  # "rank 1 (pid 4242) is stopped", where the process table says

    def text(self) -> str:
        who = f"; {', '.join(self.frozen)}" if self.frozen else ""
        return (f"stalled: no new step for {self.idle_s:.0f} s after step {self.last_step} (the bound is "
                f"{self.bound_s:.0f} s){who}. A rank is frozen or waits for one that is; run.stop() ends the run "
                f"(a stalled rank cannot checkpoint, so it is ended by force), and stall_timeout_s sets the bound.")


def _moments(records: list[dict]) -> list[float]:
    """When each record after the first step was written (steps: wall_time; events: time), in order."""
    first = next((i for i, r in enumerate(records) if r.get("kind") == "step"), None)
    if first is None:
        return []
    found = [r.get("wall_time", r.get("time")) for r in records[first:]]
    return [t for t in found if isinstance(t, (int, float))]


def bound(records: list[dict], configured: float | None = None) -> float:
    """Seconds without a record that make the run stalled (see the module docstring)."""
    if configured:
        return float(configured)
    times = [s["step_time"] for s in steps(records)[1:] if isinstance(s.get("step_time"), (int, float))]
    moments = _moments(records)
    longest = max((b - a for a, b in zip(moments, moments[1:])), default=0.0)
    return max(STALL_FLOOR_S, STALL_STEPS * (statistics.median(times) if times else 0.0), 2.0 * longest)


def stalled(records: list[dict], now: float, configured: float | None = None,
            frozen: tuple[str, ...] = ()) -> Stall | None:
    """The stall of a running run at wall-clock ``now`` (time.time()), or None while it advances (pure)."""
    found = steps(records)
    if not found or final_event(records) is not None:
        return None
    started = events(records, "started")
    planned = started[-1].get("max_steps") if started else None
    if isinstance(planned, int) and found[-1].get("step", 0) >= planned:
        return None  # saving the model, writing the final files
    idle = now - max(_moments(records))
    limit = bound(records, configured)
    if idle <= limit:
        return None
    return Stall(round(idle, 1), round(limit, 1), int(found[-1].get("step", 0)), tuple(frozen))


@dataclass(frozen=True)
class CpuSample:
    """One look at a process in /proc/PID/stat."""
    state: str  # R runnable, S sleeping, D waiting for the disk, T stopped, ...
    ticks: int  # user + system CPU time so far, in clock ticks


def parse_proc_stat(text: str) -> CpuSample:
    """A CpuSample from /proc/PID/stat's line (its command name, in parentheses, may hold spaces and ')')."""
    fields = text[text.rindex(")") + 2:].split()  # fields 3 onwards: state, ppid, ..., utime (14), stime (15)
    return CpuSample(fields[0], int(fields[11]) + int(fields[12]))


def still_working(before: dict[int, CpuSample], after: dict[int, CpuSample], seconds: float,
                  ticks_per_s: float) -> bool:
    """Whether the ranks (pid -> sample, looked at ``seconds`` apart) are slow rather than stalled: none is
    stopped, and one was runnable and gained at least CPU_SHARE of a core in between (pure)."""
    if any(sample.state in STOPPED for sample in after.values()):
        return False
    needed = max(1.0, CPU_SHARE * seconds * ticks_per_s)
    return any(pid in before and "R" in (before[pid].state, sample.state)
               and sample.ticks - before[pid].ticks >= needed for pid, sample in after.items())
