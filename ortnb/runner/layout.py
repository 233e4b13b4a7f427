"""Where a run keeps its files. One directory per run, never reused."""

from __future__ import annotations

import re
import time
from pathlib import Path

CONFIG = "config.json"
METRICS = "metrics.jsonl"
STOP = "STOP"
STATUS = "status.json"
LOG = "run.log"
PEAK = "peak.json"
MODEL = "model"


def error_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / f"error-rank{rank}.txt"


def new_run_dir(output_dir: str | Path, label: str) -> Path:
    """A fresh directory under output_dir: <time>-<label>, with -2, -3 ... if that exists already."""
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "run"
    base = Path(output_dir).expanduser() / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}"
    for attempt in range(1, 1000):
        candidate = base if attempt == 1 else base.with_name(f"{base.name}-{attempt}")
        try:
            candidate.mkdir(parents=True, exist_ok=False)
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError(f"Could not create a new run directory under {output_dir}")
