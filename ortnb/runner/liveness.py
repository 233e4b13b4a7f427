"""Moved to ``ortnb.runs.liveness`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.liveness`` keeps working:
this name is the same module object as ``ortnb.runs.liveness`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.liveness`` instead.
"""

import sys

import ortnb.runs.liveness as _moved

sys.modules[__name__] = _moved
