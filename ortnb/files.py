"""Writing a file so that readers see the old content or the new, never half of it.

Every small state file ortnb shares between processes (pid files, status.json, peak.json, the tune cache,
checkpoint markers, stored rows) goes through here: a crash, a kill or a full disk mid-write leaves the
previous file, or none, and a leftover temporary name that no reader looks at.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_atomic(path: str | Path, content: str | bytes, *, durable: bool = False) -> None:
    """Write ``content`` to a temporary file beside ``path`` (named for this process, so two writers never
    share one), then rename it over ``path``. ``durable``: flushed to the disk before the rename, for files
    that certify other files (a checkpoint's marker must not reach the disk before what it lists)."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)  # a full disk: the partial temporary must not take what space is left
        raise


def sha256_of(path: str | Path) -> str:
    """A file's sha256 (hex), read a megabyte at a time: bundles and artifacts can be hundreds of MB."""
    import hashlib

    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


def read_json_object(path: str | Path) -> dict | None:
    """The JSON object in ``path``, or None when the file is missing, unreadable, cut short, not JSON or not an
    object: for the state files a reader may catch half-written or absent, and treats as not there (every
    reader says what that means for it; the files whose damage must be named use their own reader)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
