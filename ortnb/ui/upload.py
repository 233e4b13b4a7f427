"""A data file uploaded through the form: checked, then stored under the runs folder so runs can read it.

``store`` never overwrites a different file: the same bytes under the same name are the same upload (kept),
other bytes get ``name-2.csv``, ``name-3.csv`` ... Every refusal says what to do, in the form's words.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..data.readers import SUFFIXES, decode

MAX_UPLOAD_MB = 50
ACCEPT = ",".join(SUFFIXES)  # the file picker's filter: .csv,.json,.jsonl,.txt
UPLOADS = "uploads"


@dataclass(frozen=True)
class Stored:
    path: str | None  # where the file is (None when refused)
    problem: str | None = None
    kept: bool = False  # the same file was uploaded before: nothing new written


def safe_name(name: str) -> str:
    """A file name that is safe in any folder: letters, digits, '.', '-' and '_' (others become '_'), no path."""
    base = re.split(r"[\\/]", str(name))[-1]
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._") or "upload"
    stem, dot, suffix = cleaned.rpartition(".")
    return f"{stem[:120]}.{suffix.lower()}" if dot and stem else cleaned[:120]


def check(name: str, content: bytes, limit_mb: float = MAX_UPLOAD_MB) -> str | None:
    """Why an upload cannot be training data (wrong kind, too big, empty, not UTF-8), or None."""
    suffix = Path(safe_name(name)).suffix.lower()
    if suffix not in SUFFIXES:
        kind = f"a {suffix} file" if suffix else "a file without an extension"
        return f"{name} is {kind}; upload a .csv, .json, .jsonl or .txt file."
    size_mb = len(content) / 1e6
    if size_mb > limit_mb:
        return (f"{name} is {size_mb:.1f} MB and uploads take at most {limit_mb:g} MB; put the file next to the "
                "notebook and type its path in dataset.")
    _, problem = decode(content, name)
    return problem


def store(name: str, content: bytes, output_dir: str | os.PathLike, limit_mb: float = MAX_UPLOAD_MB) -> Stored:
    """Check ``content`` and write it to ``output_dir/uploads/<safe name>`` (atomically), or say why not."""
    problem = check(name, content, limit_mb)
    if problem:
        return Stored(None, problem)
    folder = Path(output_dir).expanduser() / UPLOADS
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target, kept = free_path(folder, safe_name(name), content)
        if not kept:
            partial = target.with_name(f".{target.name}.part")
            partial.write_bytes(content)
            os.replace(partial, target)
    except OSError as error:
        return Stored(None, f"{name} could not be stored in {folder} ({error.strerror or error}); choose another "
                            "output folder under more settings.")
    return Stored(str(target), None, kept)


def free_path(folder: Path, name: str, content: bytes) -> tuple[Path, bool]:
    """(path, kept): ``folder/name`` if free or already holding these bytes, else name-2, name-3 ..."""
    stem, suffix = Path(name).stem, Path(name).suffix
    candidate, number = folder / name, 2
    while candidate.exists():
        if candidate.is_file() and candidate.stat().st_size == len(content) and candidate.read_bytes() == content:
            return candidate, True
        candidate = folder / f"{stem}-{number}{suffix}"
        number += 1
    return candidate, False
