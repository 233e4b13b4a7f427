"""Moved to ``ortnb.data.token_cache`` (issue 35: a user's data in one package, ``ortnb/data/``).

Kept for one release so that code importing ``ortnb.token_cache`` keeps working:
this name is the same module object as ``ortnb.data.token_cache`` (a monkeypatch on either path reaches both).
Import ``ortnb.data.token_cache`` instead.
"""

import sys

import ortnb.data.token_cache as _moved

sys.modules[__name__] = _moved
