"""tune()'s cache: one JSON file per search, ``<cache>/tune/<sha256 of the key>.json``.

The key is everything that decides the measurements: this machine (CPU signature, GPU, torch and ONNX
Runtime versions), the ortnb version, the model and the data (a path with its files' sizes and modification
times, an in-memory Dataset by its fingerprint, and the columns read when they are not text/label), the base
settings the runs share, the grid and the budget. Fields that no measurement run uses (max_steps, epochs,
warmup_steps, the evaluation fields, output_dir, name) are left out, so changing the winner's length does not
measure again.

An entry is read only when every field the result and a resumed search read has the type they expect; one that
does not (edited by hand, written by a buggy version) is a miss, said in one line naming the file, and the
search measures again and rewrites it, instead of a TypeError on every later call.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import files
from ..config import RunConfig, fields

NOT_MEASURED = ("model", "dataset", "text_column", "label_column", "max_steps", "epochs", "warmup_steps", "evaluate", "eval_dataset", "eval_fraction",
                "eval_samples", "eval_screen", "eval_every", "metric", "early_stopping_patience", "target", "report_to", "output_dir",
                "name")


def directory(given: str | os.PathLike | None) -> Path:
    """``given``, else ``$ORTNB_CACHE/tune`` (``~/.cache/ortnb/tune``)."""
    from ..cache_folder import cache_root

    return Path(given).expanduser() if given is not None else cache_root() / "tune"


def machine() -> dict:
    """What names this machine in a key: CPU signature, GPU, torch and ONNX Runtime versions."""
    import torch

    from .. import _imports
    from ..hardware import cpu_info

    return {"cpu": cpu_info().signature,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "torch": torch.__version__, "onnxruntime": _imports.ort_version()}


def key(base: RunConfig, grid: dict, budget_s: float) -> dict:
    from .. import __version__

    return {**machine(), "ortnb": __version__,
            "model": identify(base.model), "dataset": data_identity(base),
            "base": {name: getattr(base, name) for name in fields() if name not in NOT_MEASURED},
            "grid": grid, "budget_s": float(budget_s)}


def data_identity(base: RunConfig) -> object:
    """The data the runs read: the dataset's identity, with the columns when they are not the defaults (so keys
    written before column mapping still match)."""
    from ..data.columns import Columns

    columns = Columns.of(base)
    found = identify(base.dataset)
    return {"data": found, "columns": [columns.text, columns.label]} if columns.mapped else found


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
    problem = damage(data, key_data.get("grid"))
    if problem:  # the right key with a broken body: measure again instead of failing every later call
        import sys

        print(f"ortnb tune: the cache entry {path} is damaged ({problem}); measuring again and rewriting it",
              file=sys.stderr)
        _remove(path)
        return None
    return data


def _remove(path: Path) -> None:
    """A damaged entry goes at once: the search rewrites it, and until then no call reads it again."""
    try:
        path.unlink()
    except OSError:
        pass


NUMBER = (int, float)
TEXT = (str, type(None))
ENTRY_FIELDS = {"budget_s": NUMBER, "elapsed_s": NUMBER, "complete": bool, "interrupted": bool,
                "ended": str, "grid": dict, "candidates": list}
CANDIDATE_FIELDS = {"index": int, "label": str, "axes": dict, "problems": list, "runs": list}
# What a run record (measure.record) holds, where present: the result's table, notes and resume read them.
RUN_FIELDS = {"rung": int, "status": TEXT, "ended": TEXT, "steps": int, "measured_steps": int, "engine": TEXT,
              "first_step_s": (*NUMBER, type(None)), "cost_s": (*NUMBER, type(None)), "data_cached": (bool, type(None)),
              "warm": bool, "overhead_s": (*NUMBER, type(None)), "note": TEXT, "error": TEXT}
RUN_SERIES = ("samples_per_s", "real_tokens_per_s", "tokens_per_s", "mfu", "step_time", "other_cpu")


def damage(data: dict, grid: dict | None = None) -> str | None:
    """What is wrong with an entry's body (a missing or mistyped field), or None: everything TuneResult.from_dict,
    its table and the resume read, checked before they read it. ``grid``: the key's grid, whose values are
    the only ones a candidate's axes may hold."""
    for name, kind in ENTRY_FIELDS.items():
        if not _is(data.get(name), kind):
            return f"{name} is missing or not a {_kind_name(kind)}"
    if not isinstance(data.get("created", ""), str):
        return "created is not a string"
    for position, candidate in enumerate(data["candidates"]):
        problem = _candidate_damage(candidate, grid)
        if problem:
            return f"candidate {position} {problem}"
    return None


def _candidate_damage(candidate, grid: dict | None) -> str | None:
    if not isinstance(candidate, dict):
        return "is not an object"
    for name, kind in CANDIDATE_FIELDS.items():
        if not _is(candidate.get(name), kind):
            return f"has no valid {name}"
    if not all(isinstance(problem, str) for problem in candidate["problems"]):
        return "has a problem that is not text"
    if not isinstance(candidate.get("unreached"), TEXT):
        return "has an unreached reason that is not text"
    for name, value in candidate["axes"].items():
        if isinstance(grid, dict) and not any(_same(value, allowed) for allowed in grid.get(name) or []):
            return f"has {name}={value!r}, not one of the grid's values"
    for run in candidate["runs"]:
        problem = _run_damage(run)
        if problem:
            return problem
    return None


def _run_damage(run) -> str | None:
    if not isinstance(run, dict) or not isinstance(run.get("rung"), int) or isinstance(run.get("rung"), bool):
        return "has a run without its rung"
    for name, kind in RUN_FIELDS.items():
        if name in run and not _is(run[name], kind):
            return f"has a run whose {name} is {run[name]!r:.40}, not a {_kind_name(kind)}"
    for name in RUN_SERIES:
        series = run.get(name)
        if series is not None and not (isinstance(series, list) and all(
                v is None or _is(v, NUMBER) for v in series)):
            return f"has a run whose {name} is {series!r:.40}, not a list of numbers"
    return None


def _is(value, kind) -> bool:
    """isinstance, except that True is not a number here (JSON true where a count belongs is damage)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _same(value, allowed) -> bool:
    """The same value of the same kind (True is not 1, nor 1 1.0); text is text, a vocabulary's member
    (Backend.ORT) included, as JSON stores it."""
    kinds = [str if isinstance(v, str) else type(v) for v in (value, allowed)]
    return kinds[0] is kinds[1] and value == allowed


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if set(kinds) >= {int, float}:
        return "number"
    names = {str: "string", bool: "boolean", dict: "object", list: "list", int: "whole number"}
    return " or ".join(names.get(k, "null") for k in kinds if k is not type(None)) or "null"


def write(path: Path, data: dict, key_data: dict) -> None:
    """Write atomically (a new file, then a rename), so a crash mid-write never leaves half an entry."""
    from ..report import strict_json

    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(strict_json({**data, "key": key_data}), indent=1, allow_nan=False, default=str)
    files.write_atomic(path, text)
