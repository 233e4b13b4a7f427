"""The metrics stream, read side: a run folder's ``metrics.jsonl`` as records, for every reader (a Run, the
supervisor, the Dashboard, the CLI). The write side is ``stream_write.py``; what a record holds, ``records.py``.

The file holds one JSON object per line. Step lines have ``"kind": "step"``; events have ``"kind": "event"`` and
an ``"event"`` name (started, phase, engine, eval, stopped, failed, completed). Non-finite numbers are written as
JSON's ``NaN`` / ``Infinity``, which Python's json reads back as floats. A line being written may be incomplete:
readers leave it for the next read. A complete line that does not parse (a full disk leaves half a line) is
skipped and counted; every good line around it is kept.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .records import FINAL_EVENTS, STEP_COLUMNS

# Older streams wrote non-finite floats as these strings; they are numbers again on read.
_NON_FINITE = {"nan": math.nan, "NaN": math.nan, "inf": math.inf, "Infinity": math.inf, "-inf": -math.inf,
               "-Infinity": -math.inf}


@dataclass
class MetricsReader:
    """Reads new complete lines of a growing metrics.jsonl on each ``poll()``.

    The offset only ever moves past complete lines (ending in a newline), so a line still being
    written is read whole on a later poll. Malformed complete lines are counted in ``bad_lines``.
    """

    path: Path
    records: list[dict] = field(default_factory=list)
    bad_lines: int = 0
    _offset: int = 0
    # A notebook polls from its display thread while stop() waits in another: one poll at a time,
    # or both would append the same lines.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def poll(self) -> list[dict]:
        """Parse what was appended since the last call; returns the new records."""
        with self._lock:
            try:
                with open(self.path, "rb") as handle:
                    handle.seek(self._offset)
                    chunk = handle.read()
            except FileNotFoundError:
                return []
            complete = chunk[:chunk.rfind(b"\n") + 1]  # empty when no newline arrived yet
            new, bad = parse_lines(complete)
            self._offset += len(complete)
            self.bad_lines += bad
            self.records.extend(new)
            return new


def parse_lines(data: bytes) -> tuple[list[dict], int]:
    """Records of complete JSON lines, and how many lines were not a JSON object (pure)."""
    records, bad = [], 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except ValueError:  # also UnicodeDecodeError: half a multi-byte character, or zeros after a crash
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(_numbers(record))
        else:
            bad += 1
    return records, bad


def _numbers(record: dict) -> dict:
    """Step values that older streams wrote as "nan"/"inf" strings become floats again."""
    if record.get("kind") != "step":
        return record
    return {key: _NON_FINITE.get(value, value) if isinstance(value, str) and key in STEP_COLUMNS else value
            for key, value in record.items()}


def steps(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "step"]


def events(records: list[dict], name: str | None = None) -> list[dict]:
    found = [r for r in records if r.get("kind") == "event"]
    return [r for r in found if r.get("event") == name] if name else found


def final_event(records: list[dict]) -> dict | None:
    """The event that ended the run (completed, stopped or failed), if one was written."""
    return next((e for e in reversed(events(records)) if e.get("event") in FINAL_EVENTS), None)


def current_phase(records: list[dict]) -> str | None:
    """What the run is doing before its first step ("loading model", "tokenizing", "ONNX export",
    "graph build", "first step"); None before any phase, once a step was recorded, or once the run ended."""
    if steps(records) or final_event(records):
        return None
    phases = events(records, "phase")
    return phases[-1].get("phase") if phases else None
