"""One judge of a set of speed measurements, for every view (Dashboard, compare's table and "fastest" line,
report.html, tune, notebook tables): which figures are facts and which are not, in the same words.

A run's speed is usable when it has at least MIN_MEASURED_STEPS measured steps. It is noisy when its
interquartile range is wider than NOISE_LIMIT of its median (judged on padded tokens/s where the run has
them: with per-batch padding samples/s follows each batch's length while the work per second stays steady),
and contended when other processes took a meaningful share of the CPU while it measured. The baseline is the
asked one if usable, else the first usable run. A speed-up is a fact only when both it and the baseline are
usable, quiet and uncontended; otherwise the figure is shown with the reason it is not conclusive.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_MEASURED_STEPS = 5
NOISE_LIMIT = 0.15


@dataclass(frozen=True)
class Verdict:
    label: str
    speedup: float | None  # over the baseline; None without usable figures
    baseline: bool
    usable: bool  # enough measured steps
    noisy: bool
    contended: bool
    conclusive: bool  # the speed-up may be stated as a fact
    reason: str | None  # why it is not (None when it is)
    text: str  # what the speed-up cell says


def relative_spread(summary: dict) -> float | None:
    """The interquartile range as a share of the median: padded tokens/s when the run has it, else samples/s."""
    pairs = (("tokens_per_s", "tokens_per_s_iqr"), ("samples_per_s", "samples_per_s_iqr"),
             ("samples_per_s", "spread"))  # a comparison table's row names the samples/s IQR "spread"
    for value, spread in pairs:
        if summary.get(value) and summary.get(spread) is not None:
            return summary[spread] / summary[value]
    return None


def _flags(summary: dict) -> tuple[bool, bool, bool]:
    measured = summary.get("steps_measured") or 0
    usable = summary.get("samples_per_s") is not None and measured >= MIN_MEASURED_STEPS
    noisy = usable and (relative_spread(summary) or 0.0) > NOISE_LIMIT
    return usable, noisy, bool(summary.get("contended"))


def doubt(summary: dict, whose: str = "this run") -> str | None:
    """Why this run's speed is no fact, in words ("the baseline is noisy: ..."), or None."""
    usable, noisy, contended = _flags(summary)
    if not usable:
        measured = summary.get("steps_measured") or 0
        return f"{whose} has too few measured steps ({measured}, at least {MIN_MEASURED_STEPS} needed)"
    if contended:  # said first: other work is the likeliest cause of the noise too
        share = summary.get("contended_share")
        taken = f" ({share:.0%} of the CPU)" if isinstance(share, (int, float)) else ""
        return f"{whose} was measured while other processes used the CPU{taken}"
    if noisy:
        return f"{whose} is noisy (spread {relative_spread(summary):.0%} of its median, over {NOISE_LIMIT:.0%})"
    return None


def judge(summaries: list[dict], baseline: int | None = None) -> list[Verdict]:
    """One verdict per run summary (label, samples_per_s, steps_measured, *_iqr, contended), in order."""
    flags = [_flags(s) for s in summaries]
    base = baseline if baseline is not None and 0 <= baseline < len(summaries) and flags[baseline][0] else \
        next((i for i, f in enumerate(flags) if f[0]), None)
    verdicts = []
    for index, summary in enumerate(summaries):
        usable, noisy, contended = flags[index]
        label = str(summary.get("label"))
        if not usable:
            reason = doubt(summary, "this run")
            verdicts.append(Verdict(label, None, False, False, noisy, contended, False, reason,
                                    f"too few steps ({summary.get('steps_measured') or 0} measured)"))
            continue
        speedup = summary["samples_per_s"] / summaries[base]["samples_per_s"]
        is_base = index == base
        reason = doubt(summary, "this run") or (None if is_base else doubt(summaries[base], "the baseline"))
        shown = "baseline" if is_base else f"{speedup:.2f}x"
        text = shown if reason is None else f"{shown}, not conclusive: {reason}"
        verdicts.append(Verdict(label, speedup, is_base, True, noisy, contended, reason is None, reason, text))
    return verdicts


def fastest_line(summaries: list[dict], verdicts: list[Verdict], engines: list[str | None] | None = None,
                 completed: list[bool] | None = None, extras: list[str] | None = None) -> str:
    """The one sentence on which run is fastest: stated only when the judge allows it; else why not (a run
    with too few steps might be the fastest, so it makes the sentence inconclusive too). ``extras``: text
    added after each run's figures (", MFU 7.8%")."""
    completed = completed or [True] * len(verdicts)
    candidates = [i for i, v in enumerate(verdicts) if v.usable and completed[i]]
    if not candidates:
        return "No run has enough measured steps to name a fastest one."
    top = max(candidates, key=lambda i: summaries[i]["samples_per_s"])
    verdict, summary = verdicts[top], summaries[top]
    engine = f" ({engines[top]})" if engines and engines[top] else ""
    figures = f"{summary['samples_per_s']:.2f} samples/s"
    if verdict.baseline:
        figures += ", the baseline itself"
    else:
        figures += f", {verdict.speedup:.2f}x the baseline"
    figures += extras[top] if extras else ""
    doubts = [v.reason if i in candidates else f"{v.label} {v.reason.removeprefix('this run ')}"
              for i, v in enumerate(verdicts) if completed[i] and v.reason]
    if not verdict.conclusive or doubts:
        why = verdict.reason or doubts[0]
        return f"Fastest measured: {verdict.label}{engine}, {figures}; not conclusive: {why}."
    return f"Fastest here: {verdict.label}{engine}, {figures}."


def spread_text(median: float | None, p25: float | None, p75: float | None) -> str:
    """'16.1 (p25-p75: 9.0-26.8)': the median with its interquartile range as the range it is."""
    if median is None:
        return "–"
    if p25 is None or p75 is None:
        return f"{median:.3g}"
    return f"{median:.3g} (p25–p75: {p25:.3g}–{p75:.3g})"
