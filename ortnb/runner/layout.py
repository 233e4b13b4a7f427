"""Where a run keeps its files. One directory per run, never reused."""

from __future__ import annotations

import json
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
BEST = "best"  # the weights of the best evaluation (runner/evaluation.py)
BEST_MARKER = "ortnb-best.json"  # written last into best/: step, metric, value
HEARTBEAT = "heartbeat"  # touched every few seconds by the supervisor and the writing rank


def error_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / f"error-rank{rank}.txt"


def process_file(run_dir: Path, role: str) -> Path:
    """pid-supervisor.json, pid-ranks.json, pid-writer.json: which processes run this run (see liveness.py)."""
    return Path(run_dir) / f"pid-{role}.json"


def checkpoints(run_dir: Path) -> list[Path]:
    """Trainer's checkpoint-N folders that hold a whole model (a save cut short holds no config.json
    or weights), oldest first."""
    found = [p for p in Path(run_dir).glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    complete = [p for p in found if (p / "config.json").exists() and any(p.glob("model*.safetensors"))]
    return sorted(complete, key=lambda p: int(p.name.split("-")[-1]))


def best(run_dir: Path) -> dict | None:
    """The best evaluation's marker ({step, metric, value, ...}, with ``folder``) when best/ is whole; else None."""
    folder = Path(run_dir) / BEST
    try:
        marker = json.loads((folder / BEST_MARKER).read_text())
    except (OSError, ValueError):
        return None
    return {**marker, "folder": str(folder)} if isinstance(marker, dict) else None


def new_run_dir(output_dir: str | Path, label: str) -> Path:
    """A fresh directory under output_dir: <time>-<label>, with -2, -3 ... if that exists already."""
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-") or "run"
    base = Path(output_dir).expanduser().resolve() / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}"
    for attempt in range(1, 1000):
        candidate = base if attempt == 1 else base.with_name(f"{base.name}-{attempt}")
        try:
            candidate.mkdir(parents=True, exist_ok=False)
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError(f"Could not create a new run directory under {output_dir}")
