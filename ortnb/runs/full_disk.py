"""A full disk, named as one. The libraries that write checkpoints do not all say so, and a save the disk cut
short must go before the failure can be recorded (and must never be loaded)."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from . import layout


def describe_error(error: BaseException, run_dir: Path) -> str:
    if disk_full(error, run_dir):
        cut = remove_cut_short_saves(run_dir)
        removed = (f" What it was saving ({', '.join(cut)}) was cut short and is removed: it could not be loaded."
                   if cut else "")
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return (f"The disk holding {run_dir} is full ({first}).{removed} Free space (earlier runs in "
                f"{run_dir.parent}, checkpoints) and launch the run again.")
    return f"{type(error).__name__}: {error}"


DISK_FULL_TEXT = ("No space left on device", "os error 28")  # OSError's words; safetensors' (Rust) words
LOW_SPACE_BYTES = 16 * 2**20


def disk_full(error: BaseException, run_dir: Path) -> bool:
    """Whether ``error`` came from a full disk. The libraries that write checkpoints do not all say so:
    safetensors raises "I/O error: No space left on device (os error 28)", but torch.save's zip writer says
    "unexpected pos 576 vs 534" with no errno. So an error also counts when the run folder's disk has under
    16 MiB free as it is reported."""
    seen = set()
    while error is not None and id(error) not in seen:  # the exception and what caused it
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        if any(text in str(error) for text in DISK_FULL_TEXT):
            return True
        error = error.__cause__ or error.__context__
    try:
        return shutil.disk_usage(run_dir).free < LOW_SPACE_BYTES
    except OSError:
        return False


def remove_cut_short_saves(run_dir: Path) -> list[str]:
    """Delete the saves a full disk cut short, freeing the space the failure needs to be recorded: the staging
    folders of the best weights and of the final model (best.tmp, model.tmp: renamed into place only once whole)
    and checkpoint folders never marked whole. Whole checkpoints and best/ stay. Checkpoints only in a run whose saves are marked (an edge run
    keeps its checkpoints as files under checkpoints/, written under a temporary name: none is cut)."""
    cut = [p for p in (Path(run_dir) / (name + layout.STAGING) for name in (layout.BEST, layout.MODEL)) if p.is_dir()]
    if layout.marks_checkpoints(run_dir):  # else a folder from before markers: which save is whole is unknown
        whole = set(layout.checkpoints(run_dir))
        cut += [p for p in Path(run_dir).glob("checkpoint-*") if p.is_dir() and p not in whole]
    for folder in cut:
        shutil.rmtree(folder, ignore_errors=True)
    return sorted(p.name for p in cut)
