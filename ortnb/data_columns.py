"""Moved to ``ortnb.data.columns`` (issue 35: a user's data in one package, ``ortnb/data/``).

Kept for one release so that code importing ``ortnb.data_columns`` keeps working:
this name is the same module object as ``ortnb.data.columns`` (a monkeypatch on either path reaches both).
Import ``ortnb.data.columns`` instead.
"""

import sys

import ortnb.data.columns as _moved

sys.modules[__name__] = _moved
