"""Moved to ``ortnb.models.predict`` (issue 35: a user's model in one package, ``ortnb/models/``).

Kept for one release so that code importing ``ortnb.predict`` keeps working:
this name is the same module object as ``ortnb.models.predict`` (a monkeypatch on either path reaches both).
Import ``ortnb.models.predict`` instead.
"""

import sys

import ortnb.models.predict as _moved

sys.modules[__name__] = _moved
