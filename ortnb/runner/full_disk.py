"""Moved to ``ortnb.runs.full_disk`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.full_disk`` keeps working:
this name is the same module object as ``ortnb.runs.full_disk`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.full_disk`` instead.
"""

import sys

import ortnb.runs.full_disk as _moved

sys.modules[__name__] = _moved
