"""Numbers as a person reads them, the same on every surface (tested on exact values)."""
from __future__ import annotations

import math

from ..evaluation import METRIC_NAMES


def format_duration(seconds: float | None) -> str:
    """0:07, 1:02, 1:02:03 (what a progress bar shows)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_span(seconds: float | None) -> str:
    """A span that may be short: '0.4 s', '9.6 s' under ten seconds (where m:ss would read 0:00), else as
    format_duration: '0:12', '1:02:03'."""
    if seconds is not None and math.isfinite(seconds) and 0 <= seconds < 9.95:
        return f"{seconds:.1f} s"
    return format_duration(seconds)


def number(value, digits: int = 3) -> str:
    """Plain numbers for people: 1,560 not 1.56e+03, and an en dash where there is no value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}" if abs(value) >= 1 else f"{value:.{digits}f}".rstrip("0").rstrip(".")


def metric_text(metric: str | None, value) -> str:
    """'accuracy 0.812', 'eval loss 2.31', 'perplexity 10.1'."""
    if metric is None or not isinstance(value, (int, float)):
        return "–"
    return f"{METRIC_NAMES.get(metric, metric)} {number(value)}"
