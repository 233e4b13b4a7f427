"""One search at a time per runs folder. Two searches measuring into the same folder at once would measure each
other's load, and their runs would share what the folder holds; the second is refused, naming the first.

The lock is fcntl.flock on RUNS/.tune.lock: the kernel releases it when its holder exits, however it ends (a
killed kernel leaves no stale lock). The file says who holds it (pid, host, when it started), for the message.
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import ConfigError

LOCK = ".tune.lock"


class FolderBusyError(ConfigError):
    """Another search measures into the same runs folder; the message names it and the ways out."""


def busy_message(folder: Path, holder: dict | None) -> str:
    """Why a search cannot use ``folder`` and what to do (pure)."""
    if holder:
        who = (f"`ortnb tune` (pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')})")
    else:
        who = "`ortnb tune` (it is starting: it has not said who it is yet)"
    return (f"output_dir: another search, {who}, measures into {folder}; two searches in one folder would measure "
            "each other's load. Wait for it to end, stop it, or give this search another folder (--runs).")


@contextmanager
def search_lock(folder: Path):
    """Hold the folder's search lock while the block runs; FolderBusyError if another process holds it."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusyError(busy_message(folder, _holder(path))) from None
        _say_who(handle)
        yield
    finally:
        os.close(handle)  # releases the lock


def _say_who(handle: int) -> None:
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    os.ftruncate(handle, 0)
    os.pwrite(handle, json.dumps(me).encode(), 0)


def _holder(path: Path) -> dict | None:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
