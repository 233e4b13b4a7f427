"""The few statistics every view states: the median of what was measured and its interquartile range.

One definition, so that the Dashboard's card, compare's table, the report, tune and the edge timing table
give the same figure for the same steps (statistics.quantiles' default, "exclusive", method throughout).
"""

from __future__ import annotations

import statistics
from typing import Iterable

MIN_FOR_SPREAD = 4  # below 4 values the quartiles say nothing: no spread is stated


def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are there (None ones left out); None when there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def quartiles(values: Iterable[float | None]) -> tuple[float | None, float | None]:
    """(p25, p75) of the values that are there; (None, None) below MIN_FOR_SPREAD of them."""
    present = [v for v in values if v is not None]
    if len(present) < MIN_FOR_SPREAD:
        return None, None
    low, _, high = statistics.quantiles(present, n=4)
    return low, high


def iqr(values: Iterable[float | None]) -> float | None:
    """p75 - p25 (None below MIN_FOR_SPREAD values)."""
    low, high = quartiles(values)
    return None if low is None else high - low
