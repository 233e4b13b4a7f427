"""Helpers shared by test modules (a test module never imports another test module for these)."""
from __future__ import annotations

import os
import shutil
import time


def delete_until_gone(folder, attempts: int = 50) -> None:
    """Delete a folder a process may still write into, as a user does: again until it is gone (one rmtree can
    meet a file the worker wrote meanwhile: "Directory not empty", which failed a test once on CI)."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.1)
    raise AssertionError(f"{folder} could not be deleted in {attempts} tries")
