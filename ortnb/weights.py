"""Moved to ``ortnb.models.weights`` (issue 35: a user's model in one package, ``ortnb/models/``).

Kept for one release so that code importing ``ortnb.weights`` keeps working:
this name is the same module object as ``ortnb.models.weights`` (a monkeypatch on either path reaches both).
Import ``ortnb.models.weights`` instead.
"""

import sys

import ortnb.models.weights as _moved

sys.modules[__name__] = _moved
