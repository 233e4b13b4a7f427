"""Moved to ``ortnb.runs.control`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.control`` keeps working:
this name is the same module object as ``ortnb.runs.control`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.control`` instead.
"""

import sys

import ortnb.runs.control as _moved

sys.modules[__name__] = _moved
