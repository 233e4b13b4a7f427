"""tune()'s cache: one JSON file per search, ``<cache>/tune/<sha256 of the key>.json``.

The key is everything that decides the measurements: this machine (CPU signature, GPU, torch and ONNX
Runtime versions), the ortnb version, the model and the data (a path with its files' sizes and modification
times, an in-memory Dataset by its fingerprint), the base settings the runs share, the grid and the budget.
Fields that no measurement run uses (max_steps, epochs, warmup_steps, the evaluation fields, output_dir, name) are left out, so
changing the winner's length does not measure again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import files
from ..config import RunConfig, fields

NOT_MEASURED = ("model", "dataset", "max_steps", "epochs", "warmup_steps", "evaluate", "eval_dataset", "eval_fraction",
                "eval_samples", "eval_every", "metric", "early_stopping_patience", "target", "report_to", "output_dir",
                "name")


def directory(given: str | os.PathLike | None) -> Path:
    """``given``, else ``$ORTNB_CACHE/tune`` (``~/.cache/ortnb/tune``)."""
    from ..backends.ort_extensions import cache_root

    return Path(given).expanduser() if given is not None else cache_root() / "tune"


def key(base: RunConfig, grid: dict, budget_s: float) -> dict:
    import torch

    from .. import __version__, _imports
    from ..hardware import cpu_info

    return {"cpu": cpu_info().signature,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "torch": torch.__version__, "onnxruntime": _imports.ort_version(), "ortnb": __version__,
            "model": identify(base.model), "dataset": identify(base.dataset),
            "base": {name: getattr(base, name) for name in fields() if name not in NOT_MEASURED},
            "grid": grid, "budget_s": float(budget_s)}


def identify(source) -> object:
    """What names a model or dataset's content: a built-in or Hub name as is; a path with its files' sizes and
    modification times (an edited file is other data); an in-memory Dataset by its fingerprint."""
    from .. import assets

    if not isinstance(source, str):
        return {"fingerprint": getattr(source, "_fingerprint", None) or repr(source)}
    if source in assets.MODELS or source in assets.DATASETS:  # built-in names win over a folder of that name
        return source
    path = Path(source).expanduser()
    if not path.exists():
        return source
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {"path": str(path.resolve()),
            "files": [[str(p.relative_to(path)) if path.is_dir() else p.name, p.stat().st_size, p.stat().st_mtime_ns]
                      for p in files]}


def path_for(root: Path, key_data: dict) -> Path:
    text = json.dumps(key_data, sort_keys=True, default=str)
    return root / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"


def read(path: Path, key_data: dict) -> dict | None:
    """The entry at ``path`` if it is one of this format for this key; None otherwise (absent, unreadable, cut
    short by a crash, another version): the search then measures anew and overwrites it."""
    from .result import FORMAT

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    if json.dumps(data.get("key"), sort_keys=True, default=str) != json.dumps(key_data, sort_keys=True, default=str):
        return None
    problem = damage(data)
    if problem:  # the right key with a broken body: measure again instead of failing every later call
        import sys

        print(f"ortnb tune: the cache entry {path} is damaged ({problem}); measuring again", file=sys.stderr)
        return None
    return data


ENTRY_FIELDS = {"budget_s": (int, float), "elapsed_s": (int, float), "complete": bool, "interrupted": bool,
                "ended": str, "grid": dict, "candidates": list}
CANDIDATE_FIELDS = {"index": int, "label": str, "axes": dict, "problems": list, "runs": list}


def damage(data: dict) -> str | None:
    """What is wrong with an entry's body (a missing or mistyped field), or None: what TuneResult.from_dict
    and the resume read, checked before they read it."""
    for name, kind in ENTRY_FIELDS.items():
        if not isinstance(data.get(name), kind):
            return f"{name} is missing or not a {getattr(kind, '__name__', 'number')}"
    for position, candidate in enumerate(data["candidates"]):
        if not isinstance(candidate, dict):
            return f"candidate {position} is not an object"
        for name, kind in CANDIDATE_FIELDS.items():
            if not isinstance(candidate.get(name), kind):
                return f"candidate {position} has no valid {name}"
        if not all(isinstance(run, dict) and isinstance(run.get("rung"), int) for run in candidate["runs"]):
            return f"candidate {position} has a run without its rung"
    return None


def write(path: Path, data: dict, key_data: dict) -> None:
    """Write atomically (a new file, then a rename), so a crash mid-write never leaves half an entry."""
    from ..report import strict_json

    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(strict_json({**data, "key": key_data}), indent=1, allow_nan=False, default=str)
    files.write_atomic(path, text)
