"""status.json: a run's final status in a small file of its own, next to the metrics stream.

The supervisor reserves the file (SIZE bytes) when the run starts. Later writes overwrite those
bytes in place, which needs no new disk blocks on ordinary filesystems, so the reason a run
failed can still be recorded when a full disk stopped the metrics stream.
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import files
from . import layout

SIZE = 4096


def reserve(run_dir: Path) -> None:
    _write_padded(Path(run_dir) / layout.STATUS, json.dumps({"status": None}))


def write(run_dir: Path, **fields) -> bool:
    """Record the final status (and error, traceback, returncode...); False if even this failed."""
    path = Path(run_dir) / layout.STATUS
    try:
        if path.exists() and path.stat().st_size >= SIZE:
            with open(path, "r+b") as handle:  # in place: no truncation, no new blocks
                handle.write(_fit(fields).ljust(SIZE - 1).encode() + b"\n")
            return True
        _write_padded(path, _fit(fields))
        return True
    except OSError:
        return False


def read(run_dir: Path) -> dict | None:
    """The recorded fields, or None (no file yet, or caught half-overwritten: read again later)."""
    return files.read_json_object(Path(run_dir) / layout.STATUS)


def _write_padded(path: Path, text: str) -> None:
    files.write_atomic(path, text.ljust(SIZE - 1) + "\n")


def _fit(fields: dict) -> str:
    """JSON of ``fields`` in under SIZE bytes: the traceback keeps its end, the error its start."""
    text = json.dumps(fields)  # ASCII only, so characters are bytes
    for key, keep_end in (("traceback", True), ("error", False)):
        while len(text) > SIZE - 64 and isinstance(fields.get(key), str) and fields[key]:
            value = fields[key]
            keep = max(0, len(value) - (len(text) - (SIZE - 64)) - 8)  # escapes make JSON longer than the text
            fields = {**fields, key: ("..." + value[len(value) - keep:]) if keep_end else (value[:keep] + "...")}
            if keep == 0:
                fields[key] = ""
            text = json.dumps(fields)
    return text
