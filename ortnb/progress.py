"""Progress bars of transformers and datasets switched off around steps whose bar says nothing to a user
(loading weights ortnb itself chose, storing a dataset for a worker). Restored afterwards, never forced on."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def without_progress_bars():
    from datasets.utils import logging as datasets_logging
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled(), datasets_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    datasets_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown[0]:
            transformers_logging.enable_progress_bar()
        if shown[1]:
            datasets_logging.enable_progress_bar()
