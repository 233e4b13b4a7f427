"""Moved to ``ortnb.models.checks`` (issue 35: a user's model in one package, ``ortnb/models/``).

Kept for one release so that code importing ``ortnb.model_checks`` keeps working:
this name is the same module object as ``ortnb.models.checks`` (a monkeypatch on either path reaches both).
Import ``ortnb.models.checks`` instead.
"""

import sys

import ortnb.models.checks as _moved

sys.modules[__name__] = _moved
