"""Moved to ``ortnb.data.checks`` (issue 35: a user's data in one package, ``ortnb/data/``).

Kept for one release so that code importing ``ortnb.data_checks`` keeps working:
this name is the same module object as ``ortnb.data.checks`` (a monkeypatch on either path reaches both).
Import ``ortnb.data.checks`` instead.
"""

import sys

import ortnb.data.checks as _moved

sys.modules[__name__] = _moved
