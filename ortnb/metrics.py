"""The metrics stream, read side: pure functions from JSON lines to tables and summaries.

A run directory's ``metrics.jsonl`` holds one JSON object per line. Step lines have
``"kind": "step"``; events have ``"kind": "event"`` and an ``"event"`` name (started,
engine, eval, stopped, failed, completed). A line being written may be incomplete: readers
keep the partial tail and parse it once its newline arrives.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

STEP_COLUMNS = ["step", "wall_time", "step_time", "samples_per_s", "tokens_per_s", "loss", "learning_rate",
                "grad_norm", "peak_rss_mb", "gpu_memory_mb", "optimizer_state_mb", "mfu"]


@dataclass
class MetricsReader:
    """Reads new complete lines of a growing metrics.jsonl on each ``poll()``."""

    path: Path
    records: list[dict] = field(default_factory=list)
    _offset: int = 0
    _partial: str = ""

    def poll(self) -> list[dict]:
        """Parse what was appended since the last call; returns the new records."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self._offset += len(chunk)
        text = self._partial + chunk.decode("utf-8", errors="replace")
        *lines, self._partial = text.split("\n")
        new = [json.loads(line) for line in lines if line.strip()]
        self.records.extend(new)
        return new


def steps(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("kind") == "step"]


def events(records: list[dict], name: str | None = None) -> list[dict]:
    found = [r for r in records if r.get("kind") == "event"]
    return [r for r in found if r.get("event") == name] if name else found


def steps_frame(records: list[dict]):
    """Step lines as a pandas DataFrame; per-rank lists become columns like peak_rss_mb_rank1."""
    import pandas as pd

    rows = []
    for record in steps(records):
        row = {key: record.get(key) for key in STEP_COLUMNS}
        for key in ("peak_rss_mb", "optimizer_state_mb", "gpu_memory_mb"):
            values = record.get(key)
            if isinstance(values, list):
                row[key] = max(values) if values else None
                row.update({f"{key}_rank{rank}": value for rank, value in enumerate(values)})
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else STEP_COLUMNS)


def summarize(records: list[dict], warmup_steps: int) -> dict:
    """Median throughput after warm-up with its spread, memory, final loss, MFU and the engine that ran."""
    measured = [r for r in steps(records) if r["step"] > warmup_steps]
    engine = next((e for e in reversed(events(records, "engine"))), {})
    summary = {
        "steps_measured": len(measured),
        "samples_per_s": _median(r["samples_per_s"] for r in measured),
        "samples_per_s_iqr": _iqr([r["samples_per_s"] for r in measured]),
        "tokens_per_s": _median(r["tokens_per_s"] for r in measured),
        "step_time_s": _median(r["step_time"] for r in measured),
        "peak_rss_mb": max((max(r["peak_rss_mb"]) for r in steps(records) if r.get("peak_rss_mb")), default=None),
        "optimizer_state_mb": max(_last(steps(records), "optimizer_state_mb") or [None], key=lambda v: v or 0),
        "final_loss": _last(steps(records), "loss"),
        "mfu": _median(r["mfu"] for r in measured if r.get("mfu") is not None),
        "engine": engine.get("engine"),
        "fallback": engine.get("fallback"),
        "first_step_s": engine.get("time_to_first_step_s"),
    }
    return summary


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _iqr(values: list[float]):
    if len(values) < 4:
        return None
    quartiles = statistics.quantiles(values, n=4)
    return quartiles[2] - quartiles[0]


def _last(records: list[dict], key: str):
    return next((r[key] for r in reversed(records) if r.get(key) is not None), None)
