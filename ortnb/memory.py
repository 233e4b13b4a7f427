"""This process's peak resident memory, as the metrics stream records it."""

from __future__ import annotations

import resource
import sys


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB.

    On Linux this is VmHWM from /proc/self/status, not getrusage's ru_maxrss: Linux carries ru_maxrss over
    fork and exec, so every run started from a notebook kernel holding 4 GB would report at least 4 GB."""
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024  # kB
        except (OSError, ValueError, IndexError):
            pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)  # bytes on macOS, KiB elsewhere
