"""Moved to ``ortnb.runs.status_file`` (issue 35: the run-folder protocol in one package, ``ortnb/runs/``).

Kept for one release so that code importing ``ortnb.runner.status_file`` keeps working:
this name is the same module object as ``ortnb.runs.status_file`` (a monkeypatch on either path reaches both).
Import ``ortnb.runs.status_file`` instead.
"""

import sys

import ortnb.runs.status_file as _moved

sys.modules[__name__] = _moved
