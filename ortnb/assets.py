"""Split by what it serves (issue 35): the built-in datasets moved to ``ortnb.data.builtin``, the built-in models
and ``load_model`` to ``ortnb.models.builtin``.

Kept for one release so that ``assets.load_model(...)``, ``assets.rotten_tomatoes()``, ``assets.MODELS`` and the
other names keep working (the notebooks use them). Not an alias: its names are those of two modules, so a
monkeypatch must go to the module that defines the name. Import from ``ortnb.data.builtin`` or
``ortnb.models.builtin`` instead.
"""

from .data.builtin import (DATASETS, DIGITS_VALIDATION, ROTTEN_TOMATOES_VALIDATION, Asset, digits, hamlet_text,
                           rotten_tomatoes, rotten_tomatoes_frame)
from .models.builtin import ENCODER_ONLY, MODELS, NEW_HEAD_PREFIXES, load_model

__all__ = ["DATASETS", "DIGITS_VALIDATION", "ENCODER_ONLY", "MODELS", "NEW_HEAD_PREFIXES", "ROTTEN_TOMATOES_VALIDATION",
           "Asset", "digits", "hamlet_text", "load_model", "rotten_tomatoes", "rotten_tomatoes_frame"]
