"""Moved to ``ortnb.data.readers`` (issue 35: a user's data in one package, ``ortnb/data/``).

Kept for one release so that code importing ``ortnb.datafiles`` keeps working:
this name is the same module object as ``ortnb.data.readers`` (a monkeypatch on either path reaches both).
Import ``ortnb.data.readers`` instead.
"""

import sys

import ortnb.data.readers as _moved

sys.modules[__name__] = _moved
