"""The machine's peak FLOP/s for a run (peak.json in its folder), what its MFU figures divide by.

The writing rank records it before the ranks do any heavy work: read from the cache (flops.py) nearly always,
measured once per machine, torch version, dtype and thread count. The other ranks wait for the file, so that a
first measurement has the CPU to itself. It used to be the supervisor's job, which then imported torch (about
1 s) before it could start the ranks, and paid torch's teardown again after they ended: every run waited both.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import files
from ..config import RunConfig
from ..runs import layout
from ..runs.run import wait_for

WAIT_S = 120.0  # how long a rank that does not write waits for the writing rank's record
POLL_S = 0.1


def record(cfg: RunConfig, run_dir: Path) -> None:
    from .. import flops

    dtype = "bf16" if cfg.precision == "bf16" else "fp16" if cfg.precision == "fp16" else "fp32"
    peak = flops.machine_peak(dtype)
    files.write_atomic(run_dir / layout.PEAK, json.dumps({"dtype": dtype, "flops": peak}))  # read whole or not at all


def record_or_await(run_dir: Path, writes: bool, timeout: float = WAIT_S) -> None:
    """The writing rank records the peak; every other rank returns once it is there (RuntimeError after
    ``timeout`` s: the writing rank failed before it, and its own error says why)."""
    path = Path(run_dir) / layout.PEAK
    if writes:
        record(RunConfig.from_json(Path(run_dir) / layout.CONFIG), Path(run_dir))
        return
    if not wait_for(path.exists, timeout, interval=POLL_S):
        raise RuntimeError(f"the writing rank did not record the machine's peak ({layout.PEAK}) in {timeout:.0f} s")
