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
from dataclasses import dataclass
from typing import Callable

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


# -- waiting for a quiet machine before measuring (compare, tune) ---------------------------------------------

QUIET_SAMPLE_S = 1.0  # one look at the machine: long enough to see a busy process, short beside any run


@dataclass(frozen=True)
class Quiet:
    """What a wait for a quiet machine found: whether it got quiet, the last share of the cores other work
    took (None off Linux: nothing can be measured, so nothing is waited for) and how long it waited."""

    quiet: bool
    share: float | None
    waited_s: float

    def text(self, before: str) -> str | None:
        """A sentence for a machine that stayed busy ("before ORT + fused Adam: ..."); None when it was quiet."""
        if self.quiet or self.share is None:
            return None
        return (f"the machine was not quiet {before}: other processes used {self.share:.0%} of the CPU after "
                f"waiting {self.waited_s:.0f} s; its figures are flagged where they were measured under load")


def machine_share(seconds: float = QUIET_SAMPLE_S, sleep: Callable[[float], None] = time.sleep) -> float | None:
    """Share of the cores busy with work other than this process over the next ``seconds`` (None off Linux).
    Called while no run of ours is going, so all of it is someone else's."""
    busy, own, started = busy_seconds(), own_seconds(), time.monotonic()
    if busy is None:
        return None
    sleep(seconds)
    after = busy_seconds()
    return other_share(None if after is None else after - busy, own_seconds() - own, time.monotonic() - started,
                       os.cpu_count() or 1)


def wait_for_quiet(timeout_s: float, limit: float = CONTENDED_SHARE, sample: Callable[[], float | None] = machine_share,
                   clock: Callable[[], float] = time.monotonic, on_wait: Callable[[float], None] | None = None) -> Quiet:
    """Look at the machine until other work takes at most ``limit`` of the cores, for up to ``timeout_s``.
    ``on_wait(share)`` is called once, when the first look finds it busy (to say why nothing starts yet).
    Each look takes a sample's time, so the wait ends within a sample of ``timeout_s``."""
    started = clock()
    share = sample()
    told = False
    while share is not None and share > limit and clock() - started < timeout_s:
        if on_wait and not told:
            on_wait(share)
            told = True
        share = sample()
    return Quiet(share is None or share <= limit, share, round(clock() - started, 1))
