"""Moved to ``ortnb.runs.recorder`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.recorder`` keeps working:
this name is the same module object as ``ortnb.runs.recorder`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.recorder`` instead.
"""

import sys

import ortnb.runs.recorder as _moved

sys.modules[__name__] = _moved
