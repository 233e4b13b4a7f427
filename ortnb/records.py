"""Moved to ``ortnb.runs.records`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.records`` keeps working:
this name is the same module object as ``ortnb.runs.records`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.records`` instead.
"""

import sys

import ortnb.runs.records as _moved

sys.modules[__name__] = _moved
