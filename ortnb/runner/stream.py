"""Moved to ``ortnb.runs.stream_write`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.stream`` keeps working:
this name is the same module object as ``ortnb.runs.stream_write`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.stream_write`` instead.
"""

import sys

import ortnb.runs.stream_write as _moved

sys.modules[__name__] = _moved
