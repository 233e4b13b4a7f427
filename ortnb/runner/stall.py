"""Moved to ``ortnb.runs.stall`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.stall`` keeps working:
this name is the same module object as ``ortnb.runs.stall`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.stall`` instead.
"""

import sys

import ortnb.runs.stall as _moved

sys.modules[__name__] = _moved
