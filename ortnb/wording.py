"""How ortnb words a ratio of two measurements: one way, in the notebooks, the READMEs and benchmarks/.

A ratio is always a **speed** ratio, as the judge's speed-up column has it: how many times as fast one thing
ran as another (samples a second over samples a second; for two times, the other's time over this one's).
Above 1.00x is faster, below is slower. A sentence names the direction first, so nobody has to guess which
way the number reads:

    >>> speed_sentence("ORT", "eager", times=(1284, 1502), unit="ms", per="a step")
    'ORT was faster: 1.17x the speed of eager (1284 against 1502 ms a step)'

Never "ORT's step was 1.17x eager's" (a time that reads as 1.17 times longer) nor "0.90x faster".
"""

from __future__ import annotations

__all__ = ["speedup_from_times", "speed_words", "speed_sentence"]


def speedup_from_times(time: float, other_time: float) -> float:
    """How many times as fast something that took ``time`` ran as something that took ``other_time``."""
    if time <= 0 or other_time <= 0:
        raise ValueError(f"times must be positive, got {time} and {other_time}")
    return other_time / time


def speed_words(speedup: float, other: str, digits: int = 2) -> str:
    """'faster: 1.17x the speed of eager', 'slower: 0.90x ...', 'as fast: 1.00x ...' (rounded as shown)."""
    shown = f"{speedup:.{digits}f}"
    direction = "as fast" if float(shown) == 1 else "faster" if speedup > 1 else "slower"
    return f"{direction}: {shown}x the speed of {other}"


def _figure(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def speed_sentence(subject: str, other: str, speedup: float | None = None, *,
                   times: tuple[float, float] | None = None, unit: str = "s", per: str = "",
                   digits: int = 2) -> str:
    """'<subject> was faster: 1.17x the speed of <other>', from a speed-up or from two times
    (``times=(subject's, other's)``, then quoted after the ratio: '(1284 against 1502 ms a step)')."""
    if (speedup is None) == (times is None):
        raise ValueError("give either speedup or times=(subject's time, other's time)")
    if times is not None:
        speedup = speedup_from_times(*times)
    sentence = f"{subject} was {speed_words(speedup, other, digits)}"
    if times is not None:
        tail = f" {per}" if per else ""
        sentence += f" ({_figure(times[0])} against {_figure(times[1])} {unit}{tail})"
    return sentence
