"""How much of the CPU other work took while a run measured (Linux /proc/stat).

On 2 cores one busy process beside a run can slow eager PyTorch up to 10x (OpenMP threads wait for a
descheduled peer), so a step time measured then is no fact about the configuration. Each step, the writing
rank reads the machine's busy CPU time; every rank adds its own process's CPU time; what is left was other
work. Its share of the cores over the step is the step's ``other_cpu``; a run whose measured steps had a
median share above CONTENDED_SHARE is flagged contended in every view (see judge.py).
"""

from __future__ import annotations

import os
import time

CONTENDED_SHARE = 0.10  # a tenth of the cores busy with other work
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def busy_seconds(stat_text: str | None = None) -> float | None:
    """CPU seconds all cores spent busy since boot (user, nice, system, irq, softirq, steal); None off Linux."""
    if stat_text is None:
        try:
            with open("/proc/stat") as handle:
                stat_text = handle.readline()
        except OSError:
            return None
    fields = stat_text.split()
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (values + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / _TICKS


def own_seconds() -> float:
    """CPU seconds of this process, all its threads (user and system)."""
    return time.process_time()


def other_share(busy_delta: float | None, own_delta: float, wall: float, cores: int) -> float | None:
    """Share of the cores that work other than the run's processes took over ``wall`` seconds (0..1)."""
    if busy_delta is None or wall <= 0 or cores <= 0:
        return None
    return min(1.0, max(0.0, (busy_delta - own_delta) / (wall * cores)))
