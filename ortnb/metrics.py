"""Numbers and tables from a run's metrics records: pure functions from records to tables and summaries.

Reading the stream itself (``MetricsReader``, ``parse_lines``, ``steps``, ``events``, ``final_event``,
``current_phase``) is the run-folder protocol's read side, ``runs/stream_read.py``; its names stay readable
through this module.
"""

from __future__ import annotations

from .runs.records import (  # noqa: F401 - FINAL_EVENTS and PHASES: read through metrics too
    FINAL_EVENTS, LOADING_MODEL, PHASES, STEP_COLUMNS, TOKENIZING, TOKENIZING_CACHED)
from .runs.stream_read import (  # noqa: F401 - the read side, read through metrics too
    MetricsReader, current_phase, events, final_event, parse_lines, steps)
from .stats import iqr, median, quartiles

EVAL_BEFORE_STEP_1 = "evaluation before step 1"
BEFORE_TRAINING = (LOADING_MODEL, TOKENIZING, TOKENIZING_CACHED)  # phases that are not the first step's


def startup_phases(records: list[dict]) -> dict[str, float]:
    """Seconds of each phase before the first step ended, in the order the worker began them: from one phase
    event to the next, the last ("first step") ending when the first step was recorded. Empty until then.
    A phase the worker began twice (none does today) adds up. Where the data event says the tokenized
    rows came from the cache, "tokenizing" reads "tokenizing (cached)". The evaluation before step 1 (a run
    that evaluates while training starts with one) is named apart, taken out of the phase it fell in."""
    first = next(iter(steps(records)), None)
    phases = [e for e in events(records, "phase") if e.get("time") is not None]
    if first is None or not phases or first.get("wall_time") is None:
        return {}
    data = next(iter(events(records, "data")), {})
    ends = [e["time"] for e in phases[1:]] + [first["wall_time"]]
    found: dict[str, float] = {}
    for event, end in zip(phases, ends):
        name = event.get("phase")
        if name == TOKENIZING and data.get("cached"):
            name = TOKENIZING_CACHED
        found[name] = found.get(name, 0.0) + max(0.0, end - event["time"])
    return _evaluation_apart(found, phases, ends, records)


def _evaluation_apart(found: dict[str, float], phases: list[dict], ends: list[float], records) -> dict[str, float]:
    """``found`` with the step-0 evaluation's seconds moved out of the phase whose span holds it, to its own entry
    just before that phase."""
    before = next((e for e in evaluations(records) if e.get("step") == 0
                   and isinstance(e.get("eval_time_s"), (int, float)) and isinstance(e.get("wall_time"), (int, float))),
                  None)
    holder = next((event.get("phase") for event, end in zip(phases, ends)
                   if before is not None and event["time"] <= before["wall_time"] <= end), None)
    if holder not in found:
        return found
    seconds = min(float(before["eval_time_s"]), found[holder])
    ordered: dict[str, float] = {}
    for name, value in found.items():
        if name == holder:
            ordered[EVAL_BEFORE_STEP_1] = seconds
            value -= seconds
        ordered[name] = value
    return ordered


def first_step_phases(phases: dict[str, float]) -> dict[str, float]:
    """The phases that make up the first step: from the start of training to the end of step 1 (ONNX export and
    graph build included), the evaluation before step 1 not included."""
    return {name: value for name, value in phases.items() if name not in BEFORE_TRAINING and name != EVAL_BEFORE_STEP_1}


def first_step_seconds(phases: dict[str, float]) -> float | None:
    """The first step, one definition for the card, the tables and the start-up line (first_step_phases)."""
    parts = first_step_phases(phases)
    return sum(parts.values()) if parts else None


def steps_frame(records: list[dict]):
    """Step lines as a pandas DataFrame; per-rank lists become columns like peak_rss_mb_rank1."""
    import pandas as pd

    rows = []
    for record in steps(records):
        row = {key: record.get(key) for key in STEP_COLUMNS}
        for key in ("peak_rss_mb", "optimizer_state_mb", "gpu_memory_mb"):
            values = record.get(key)
            if isinstance(values, list):
                row[key] = max(values) if values else None
                row.update({f"{key}_rank{rank}": value for rank, value in enumerate(values)})
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else STEP_COLUMNS)


def summarize(records: list[dict], warmup_steps: int) -> dict:
    """Median throughput after warm-up with its spread, memory, final loss, MFU and the engine that ran."""
    measured = [r for r in steps(records) if r["step"] > warmup_steps]
    engine = next((e for e in reversed(events(records, "engine"))), {})
    summary = {
        "steps_measured": len(measured),
        "samples_per_s": median(r["samples_per_s"] for r in measured),
        "samples_per_s_iqr": iqr([r["samples_per_s"] for r in measured]),
        **_quartiles("samples_per_s", [r["samples_per_s"] for r in measured]),
        "tokens_per_s": median(r["tokens_per_s"] for r in measured),
        "tokens_per_s_iqr": iqr([r["tokens_per_s"] for r in measured if r.get("tokens_per_s") is not None]),
        "real_tokens_per_s": median(r.get("real_tokens_per_s") for r in measured),
        "padding_fraction": padding_fraction(measured),
        "step_time_s": median(r["step_time"] for r in measured),
        "peak_rss_mb": max((max(r["peak_rss_mb"]) for r in steps(records) if r.get("peak_rss_mb")), default=None),
        "optimizer_state_mb": max(_last(steps(records), "optimizer_state_mb") or [None], key=lambda v: v or 0),
        "final_loss": _last(steps(records), "loss"),
        **mfu_summary(measured),
        **contention_summary(measured),
        "engine": engine.get("engine"),
        "fallback": engine.get("fallback"),
        # from the phases where the worker wrote them (one definition with the start-up line), else the engine's
        "first_step_s": first_step_seconds(startup_phases(records)) or engine.get("time_to_first_step_s"),
        "startup_s": startup_phases(records) or None,
        "exports": engine.get("exports"),
        "notes": [e.get("text") for e in events(records, "note") if e.get("text")],
        "warm_run": next((e.get("run") for e in events(records, "warm")), None),
    }
    summary.update({f"eval_{key}" if key in ("metric", "evaluations") else key: value
                    for key, value in evaluation_summary(records).items()})
    return summary


EVAL_COLUMNS = ["step", "epoch", "wall_s", "eval_loss", "accuracy", "f1", "perplexity", "eval_time_s", "samples",
                "best"]


def evaluations(records: list[dict]) -> list[dict]:
    """The eval events of a run, in order (evaluation while training)."""
    return events(records, "eval")


def run_start(records: list[dict]) -> float | None:
    """When the run began (its first event): what "reached at 1:12" counts from."""
    first = next((r for r in records if r.get("kind") == "event" and isinstance(r.get("time"), (int, float))), None)
    return first["time"] if first else None


def evaluations_frame(records: list[dict]):
    """One row per evaluation: step, epoch, seconds since the run began, eval loss and the metrics."""
    import pandas as pd

    start = run_start(records)
    rows = [{key: e.get(key) for key in EVAL_COLUMNS} | {"wall_s": _since(e, start)} for e in evaluations(records)]
    return pd.DataFrame(rows, columns=EVAL_COLUMNS)


def _since(event: dict, start: float | None) -> float | None:
    moment = event.get("wall_time", event.get("time"))
    return moment - start if start is not None and isinstance(moment, (int, float)) else None


def best_evaluation(records: list[dict]) -> dict | None:
    """The evaluation that was best by the run's metric (the first to reach the best value), or None."""
    found = [e for e in evaluations(records) if e.get("best")]
    return found[-1] if found else None


def evaluation_summary(records: list[dict]) -> dict:
    """The best evaluation (ties on the metric go to the lower held-out loss: evaluation.BestTracker): its value,
    step, held-out loss and when it was reached (s since the run began); the last evaluation's step and values;
    whether the run stopped early; how many evaluations there were and their seconds together (eval_total_s: time
    the steps' figures leave out), and apart from them the screens of a subset (screens, screen_total_s). Empty
    without evaluations or screens."""
    found = evaluations(records)
    if not found:
        return _screens(records)  # a target run stopped before the screen came near: screens, no evaluation
    best, last = best_evaluation(records), found[-1]
    metric = last.get("metric")
    final = final_event(records) or {}
    value = best.get("eval_loss" if metric == "loss" else metric) if best else None
    return {"metric": metric, "best_value": value, "best_step": best.get("step") if best else None,
            "best_reached_s": _since(best, run_start(records)) if best else None,
            "best_eval_loss": best.get("eval_loss") if best else None, "last_eval_step": last.get("step"),
            "evaluations": len(found), "eval_total_s": _total(e.get("eval_time_s") for e in found),
            **_screens(records),
            "eval_loss": last.get("eval_loss"), "accuracy": last.get("accuracy"),
            "f1": last.get("f1"), "perplexity": last.get("perplexity"),
            "early_stopped": bool(final.get("early_stopped")),
            "early_stop": next((e["early_stop"] for e in reversed(found) if e.get("early_stop")), None),
            **_target(final, run_start(records))}


def _screens(records: list[dict]) -> dict:
    """How many screens of held-out rows a run made and their seconds together (runner/screen.py); empty when it
    made none."""
    found = events(records, "screen")
    if not found:
        return {}
    return {"screens": len(found), "screen_total_s": _total(e.get("eval_time_s") for e in found),
            "screen_samples": found[-1].get("samples")}


def _total(seconds) -> float | None:
    """The sum of the numbers among ``seconds`` (None when none is one)."""
    numbers = [float(s) for s in seconds if isinstance(s, (int, float)) and not isinstance(s, bool)]
    return round(sum(numbers), 4) if numbers else None


def _target(final: dict, start: float | None) -> dict:
    """target, reached_target, target_step and target_reached_s (since the run began) of a run with a target."""
    if final.get("target") is None:
        return {}
    reached = bool(final.get("reached_target"))
    moment = final.get("target_wall_time")
    return {"target": final["target"], "reached_target": reached, "target_step": final.get("target_step"),
            "target_reached_s": moment - start if reached and start is not None and moment is not None else None}


def planned_steps(records: list[dict], max_steps: int | None, epochs: float | None = None) -> int | None:
    """The steps a run trains: what its worker planned (started event: from epochs, or max_steps), else the
    config's max_steps, else the default; None while a run sized by ``epochs`` has not said how many (a
    4-epoch run of 76 steps read "step 0/60" until then)."""
    from .config import DEFAULT_STEPS

    started = next((e for e in events(records, "started") if isinstance(e.get("max_steps"), int)), None)
    if started:
        return started["max_steps"]
    if max_steps:
        return max_steps
    return None if epochs else DEFAULT_STEPS


def steps_of(total: int | None) -> str:
    """How a total of steps reads after "step i/": the number, or "?" before an epoch-sized run has counted."""
    return "?" if total is None else str(total)


def contention_summary(measured: list[dict]) -> dict:
    """The median share of the cores other work took while the run measured, and whether that flags it."""
    from .contention import CONTENDED_SHARE

    share = median(r.get("other_cpu") for r in measured)
    return {"contended_share": share, "contended": share is not None and share > CONTENDED_SHARE}


def mfu_summary(measured: list[dict]) -> dict:
    """The median MFU; or, when a step exceeded 100%, no MFU and why: a measured peak below what a run reaches
    is a wrong peak, not a fast run (the worker then measures the peak again for later runs)."""
    values = [r["mfu"] for r in measured if isinstance(r.get("mfu"), (int, float))]
    over = [v for v in values if v > 1.0]
    if over:
        return {"mfu": None, "mfu_error": (f"MFU not shown: {len(over)} step{'s' if len(over) > 1 else ''} reached "
                                           f"{max(over):.0%} of the measured peak, so that peak was measured too "
                                           "low; it is measured again for the next runs")}
    return {"mfu": median(values), "mfu_error": None}


def padding_fraction(step_records: list[dict]) -> float | None:
    """Share of the computed tokens that were padding, over these steps (None without token counts)."""
    timed = [r for r in step_records if r.get("real_tokens_per_s") is not None and r.get("tokens_per_s")]
    padded = sum(r["tokens_per_s"] * r["step_time"] for r in timed)
    real = sum(r["real_tokens_per_s"] * r["step_time"] for r in timed)
    return 1.0 - real / padded if padded else None


def _quartiles(name: str, values: list[float]) -> dict:
    """p25 and p75 (the interquartile range as the range it is; None below 4 values, as the IQR)."""
    low, high = quartiles(values)
    return {f"{name}_p25": low, f"{name}_p75": high}


def _last(records: list[dict], key: str):
    return next((r[key] for r in reversed(records) if r.get(key) is not None), None)
