"""One measurement: a fresh run, followed until it ends, is stopped at the budget's end, or Stop is pressed;
then summarised into a plain record (the cache's JSON) and, unless the caller keeps runs, its folder is deleted.
A one-process candidate runs in the search's warm worker (runner/warm.py: no interpreter start or imports per
candidate); one of several processes (DDP, ZeRO) through ortnb.launch, with real worker processes.

Whatever ends the wait (Stop, KeyboardInterrupt, an exception in a progress callback), the run is stopped
and its processes are gone before this returns or raises.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Callable

from .. import metrics
from ..config import RunConfig
from ..runner.ending import end, ended_after
from ..runs.control import SETTLE_S
from .search import Interrupted, Limits
from .space import WARMUP_STEPS, Candidate

POLL_S = 0.25
MIN_MEASURED = 2  # steps after warm-up a run needs for its samples/s to count
STOP_S = 2.0  # how long an interrupted run may finish its step before it is terminated: it is discarded anyway


def measurer(base: RunConfig, runs_dir: Path, keep: bool, stop: threading.Event | None,
             clock: Callable[[], float] = time.monotonic, warm=None):
    """The search's measure(candidate, rung, steps, limits) for real runs under ``runs_dir``; ``warm``: a
    runner.warm.WarmWorker for the candidates it can train (None: every candidate through ortnb.launch)."""
    def measure(candidate: Candidate, rung: int, steps: int, limits: Limits) -> dict:
        config = base.replace(**candidate.axes, name=candidate.label, max_steps=WARMUP_STEPS + steps,
                              warmup_steps=WARMUP_STEPS, epochs=None, evaluate=False, eval_every=None, metric=None,
                              early_stopping_patience=None, target=None, report_to=None, output_dir=str(runs_dir))
        started = clock()
        run = start(config, warm)
        try:
            with ended_after(run, STOP_S):  # an interrupted run is discarded: it gets little time to stop
                limits.on_start(str(run.run_dir))
                ended = follow(run, limits, stop, clock)
                found = record(run, rung, clock() - started, ended)
        finally:
            if not keep:
                shutil.rmtree(run.run_dir, ignore_errors=True)
        return found

    return measure


def start(config: RunConfig, warm=None):
    """The run of one measurement: in the warm worker when it can train it, else in processes of its own."""
    from .. import runner  # looked up at call time: tests replace ortnb.runner.launch

    if warm is not None and warm.serves(config) is None:
        return warm.launch(config)
    return runner.launch(config)


class _Ended(Exception):
    """Raised from run.follow's tick to end the watch early, with why."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def follow(run, limits: Limits, stop: threading.Event | None, clock) -> str | None:
    """Wait for the run to end; None when it ended by itself, else why it was stopped early ("budget", or
    "stalled": its steps stopped advancing, and it may never end by itself)."""
    def tick() -> None:
        if stop is not None and stop.is_set():
            raise Interrupted()
        if clock() >= limits.deadline:
            raise _Ended("budget")
        if run.status == "stalled":
            raise _Ended("stalled")

    try:  # the caller ends an interrupted run its own way (ended_after, deferred), so follow must not
        run.follow(lambda record: None, interval=POLL_S, on_tick=tick, stop_on_interrupt=False)
    except _Ended as ended:
        end(run, STOP_S)  # the budget's end: no time for a long last step
        return ended.why
    run.wait(SETTLE_S)  # the final event is written; let the processes exit
    return None


def record(run, rung: int, cost_s: float, ended: str | None) -> dict:
    """What a finished run measured, as plain data: every measured step's figures (pooled across rungs), the
    engine that ran, the first step's time, what the run cost, and a note when it ended early."""
    records = run.records()
    steps = metrics.steps(records)
    measured = [s for s in steps if s["step"] > WARMUP_STEPS]
    counted = measured if len(measured) >= MIN_MEASURED else []
    summary = metrics.summarize(records, WARMUP_STEPS)
    status = run.status
    return {
        "rung": rung, "status": status, "ended": ended, "steps": len(steps), "measured_steps": len(counted),
        **{key: [s.get(key) for s in counted] for key in ("samples_per_s", "real_tokens_per_s", "tokens_per_s",
                                                          "mfu", "step_time", "other_cpu")},
        "engine": summary["engine"], "first_step_s": summary["first_step_s"], "cost_s": round(cost_s, 2),
        # whether its tokens came from the cache, and whether a warm worker (no process start) trained it
        "data_cached": next((e.get("cached") for e in metrics.events(records, "data")), None),
        "warm": bool(metrics.events(records, "warm")),
        # startup and first step: what every run of this kind pays before the steps that are timed
        "overhead_s": round(cost_s - sum(s["step_time"] for s in steps[1:]), 2) if steps else None,
        "note": note(rung, status, ended, len(measured), run.error),
        "error": (run.error or "")[-2000:] or None,
    }


def note(rung: int, status: str, ended: str | None, measured: int, error: str | None) -> str | None:
    """Why a run's figures are partial or missing, in words (None when it simply completed)."""
    when = f"its rung {rung} run" if rung > 1 else "its run"
    if status == "failed":
        first = (error or "no error recorded").strip().splitlines()[0]
        return f"{when} failed: {first}"
    if ended == "budget" and measured >= MIN_MEASURED:
        return f"{when} was cut at the budget's end after {measured} measured steps"
    if ended == "stalled":
        return (f"{when} stalled (its steps stopped advancing) and was stopped after {measured} measured steps"
                if measured else f"{when} stalled before any step after warm-up was measured, and was stopped")
    if ended == "budget":
        return f"the budget ended during {when}, before {MIN_MEASURED} steps after warm-up were measured"
    return None
