"""The metrics stream, write side: rank 0 appends one JSON line per step and per event."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path


def _clean(value):
    """JSON has no NaN/inf: write them as strings so every line stays parseable."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class MetricsWriter:
    def __init__(self, path: Path):
        self._handle = open(path, "a", buffering=1, encoding="utf-8")

    def write(self, record: dict) -> None:
        self._handle.write(json.dumps({k: _clean(v) for k, v in record.items()}) + "\n")
        self._handle.flush()  # a crash right after a step still leaves that step on disk

    def event(self, name: str, **data) -> None:
        self.write({"kind": "event", "event": name, "time": time.time(), **data})

    def close(self) -> None:
        self._handle.close()
