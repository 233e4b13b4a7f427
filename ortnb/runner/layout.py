"""Moved to ``ortnb.runs.layout`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.layout`` keeps working:
this name is the same module object as ``ortnb.runs.layout`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.layout`` instead.
"""

import sys

import ortnb.runs.layout as _moved

sys.modules[__name__] = _moved
