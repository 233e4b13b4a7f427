"""Where ortnb keeps what it reuses between runs and sessions: ``$ORTNB_CACHE``, else ``$XDG_CACHE_HOME/ortnb``,
else ``~/.cache/ortnb``. Its users each keep a folder or file of their own in it:

    ort-extensions/<torch, ORT and Python versions>/   the built ATen extension (backends/ort_extensions.py)
    tokenized/<key>/                                   tokenized datasets (data/token_cache.py)
    tune/<key>.json                                    tune() searches (tuning/cache.py)
    peak.json                                          this machine's measured peak FLOP/s (flops.py)
    onnxruntime-web/<version>/                         ORT Web's training build (edge/web_runtime.py)

Standard library only, and no ortnb import: every layer may ask for it (data/ without importing a backend).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The cache folder (not created here: each user makes its own part when it first writes)."""
    base = os.environ.get("ORTNB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ortnb")
    return Path(base)
