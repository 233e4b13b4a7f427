"""The metrics stream, write side: one JSON line per step and per event, appended by one writer per run folder.
The read side is ``stream_read.py``; what a record holds, ``records.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import records


def encode(record: dict) -> str:
    """One line. Non-finite floats are written as JSON's NaN/Infinity (Python's json reads them back as
    floats), so a NaN loss stays a number in ``run.metrics``."""
    return json.dumps(record, allow_nan=True, default=_plain) + "\n"


def _plain(value):
    """numpy and torch scalars as Python numbers; anything else as its text (a line must always be written)."""
    return value.item() if hasattr(value, "item") else str(value)


class MetricsWriter:
    def __init__(self, path: Path):
        path = Path(path)
        # Opening with "a" creates the file but never its folder: a deleted run folder stays deleted.
        self._handle = open(path, "a", buffering=1, encoding="utf-8")
        # A writer that died mid-line (a full disk) leaves half a line; start ours on a fresh line so
        # that only the broken one is lost, not ours as well.
        self._newline_first = _ends_mid_line(path)

    def write(self, record: dict) -> None:
        line = encode(record)
        if self._newline_first:
            line, self._newline_first = "\n" + line, False
        self._handle.write(line)
        self._handle.flush()  # a crash right after a step still leaves that step on disk

    def event(self, name: str, **data) -> None:
        self.write(records.event(name, **data))

    def close(self) -> None:
        self._handle.close()


def _ends_mid_line(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except OSError:
        return False


def append_event(path: Path, name: str, **data) -> None:
    """One event from a process that writes nothing else (the supervisor, the kernel after a forced stop)."""
    writer = MetricsWriter(path)
    try:
        writer.event(name, **data)
    finally:
        writer.close()
