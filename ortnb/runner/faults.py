"""Deliberate faults for testing how runs fail (set ORTNB_FAULT in the worker's environment).

    raise:3      an exception at the end of step 3
    nan:3        a weight set to NaN after step 3, so the next loss is NaN
    slow:0.5     every step takes at least 0.5 s longer (to stop a run mid-way in tests)
    stall:2      step 2 never ends (to force a stop whose step outlasts its timeout)
    diskfull:3   the disk fills up while step 3's metrics line is written: half the line reaches the
                 file, the write fails with ENOSPC, and so does every later write to the metrics stream
                 (status.json, reserved when the run started, can still be overwritten, as on a real disk)
    badline:2    a malformed line follows step 2's line in the metrics stream; training goes on
Several faults are separated by commas. Read only at the worker's entry point.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import torch
from transformers import TrainerCallback

from ..runs.stream_write import MetricsWriter, encode


class InjectedFault(RuntimeError):
    pass


def parse(spec: str | None) -> list[tuple[str, float]]:
    if not spec:
        return []
    return [(kind, float(value)) for kind, _, value in (item.partition(":") for item in spec.split(","))]


class FaultCallback(TrainerCallback):
    def __init__(self, spec: str):
        self.faults = [(kind, value) for kind, value in parse(spec) if kind not in ("diskfull", "badline")]

    def on_step_end(self, args, state, control, model=None, **kwargs):
        for kind, value in self.faults:
            if kind == "slow":
                time.sleep(value)
            elif kind == "stall" and state.global_step == int(value):
                time.sleep(24 * 3600)
            elif kind == "raise" and state.global_step == int(value):
                raise InjectedFault(f"injected fault at step {state.global_step}")
            elif kind == "nan" and state.global_step == int(value):
                with torch.no_grad():
                    next(model.parameters()).fill_(float("nan"))


class FaultyWriter(MetricsWriter):
    """A MetricsWriter on a disk that fills up during the line of step ``full_at``, and/or that leaves a
    malformed line after the line of step ``broken_after``."""

    def __init__(self, path: Path, full_at: int | None = None, broken_after: int | None = None):
        super().__init__(path)
        self.full_at, self.broken_after = full_at, broken_after
        self.full = False

    def write(self, record: dict) -> None:
        step = record.get("step", 0) if record.get("kind") == "step" else None
        if not self.full and step is not None and self.full_at is not None and step >= self.full_at:
            self.full = True
            line = encode(record)
            self._handle.write(line[: len(line) // 2])  # what a full disk leaves: half a line, no newline
            self._handle.flush()
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self._handle.name))
        super().write(record)
        if step is not None and step == self.broken_after:
            self._handle.write('{"kind": "step", "step": \x00\x00 this line is broken\n')
            self._handle.flush()


def metrics_writer(path: Path, spec: str | None) -> MetricsWriter:
    """The worker's writer: a plain MetricsWriter unless ORTNB_FAULT asks for a full disk or a broken line."""
    faults = dict(parse(spec))
    if "diskfull" not in faults and "badline" not in faults:
        return MetricsWriter(path)
    return FaultyWriter(path, _int(faults.get("diskfull")), _int(faults.get("badline")))


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
