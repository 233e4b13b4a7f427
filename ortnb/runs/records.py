"""The records of a run's metrics stream, built in one place for every writer: the trainer run's callback
(runner/callback.py), the edge training loop (edge/loop.py), the in-kernel LiveCallback (ui/live.py) and
the evaluations of each (runner/evaluation.py). A view reads every kind of run the same way because every
step record has the same fields, computed the same way (throughput is work over the step's wall time).

    {"kind": "step", "step": 12, "step_time": 0.31, "samples_per_s": 51.6, ...}   one per optimizer step
    {"kind": "event", "event": "eval", "time": ..., "step": 12, "eval_loss": 0.41, "metric": "accuracy", ...}
    {"kind": "event", "event": "started" | "phase" | "engine" | "completed" | ..., "time": ..., ...}
"""

from __future__ import annotations

import time

from ..vocabulary import METRICS

# tokens_per_s counts padded tokens (the work the engine did); real_tokens_per_s the text trained on.
STEP_COLUMNS = ["step", "wall_time", "step_time", "samples_per_s", "tokens_per_s", "real_tokens_per_s", "seq_len",
                "loss", "learning_rate", "grad_norm", "peak_rss_mb", "gpu_memory_mb", "optimizer_state_mb", "mfu",
                "other_cpu"]
COMPLETED, STOPPED, FAILED = "completed", "stopped", "failed"
FINAL_EVENTS = (COMPLETED, STOPPED, FAILED)  # how a run ends: its last event, and the status in status.json
# What a run is doing before its first step ends, as its "phase" events name it (in the order a trainer run with
# backend ort goes through them; ORTModule's first forward announces the ONNX export, the graph build and the
# first step itself). A view that shows startup reads these names.
LOADING_MODEL, TOKENIZING, STARTING_TRAINING = "loading model", "tokenizing", "starting training"
ONNX_EXPORT, GRAPH_BUILD, FIRST_STEP = "ONNX export", "graph build", "first step"
PHASES = (LOADING_MODEL, TOKENIZING, STARTING_TRAINING, ONNX_EXPORT, GRAPH_BUILD, FIRST_STEP)
TOKENIZING_CACHED = "tokenizing (cached)"  # tokenizing, when the data event says the rows came from the token cache


def step(step: int, *, step_time: float, samples: int, loss: float, padded_tokens: int | None = None,
         real_tokens: int | None = None, seq_len: int | None = None, learning_rate: float | None = None,
         grad_norm: float | None = None, peak_rss_mb: list[float] | None = None,
         optimizer_state_mb: list[float] | None = None, gpu_memory_mb: list[float] | None = None,
         mfu: float | None = None, other_cpu: float | None = None, wall_time: float | None = None) -> dict:
    """One optimizer step: every STEP_COLUMNS field (None where the writer cannot know it). ``samples``,
    ``padded_tokens`` and ``real_tokens`` are the step's work summed over every rank; per-rank memory
    figures are lists, one value per rank."""
    if not step_time > 0:
        raise ValueError(f"step_time={step_time!r}: a step takes a positive time")

    def rate(amount):
        return None if amount is None else amount / step_time

    return {"kind": "step", "step": int(step), "wall_time": time.time() if wall_time is None else wall_time,
            "step_time": step_time, "samples_per_s": samples / step_time, "tokens_per_s": rate(padded_tokens),
            "real_tokens_per_s": rate(real_tokens), "seq_len": None if seq_len is None else int(seq_len),
            "loss": float(loss), "learning_rate": learning_rate, "grad_norm": grad_norm, "peak_rss_mb": peak_rss_mb,
            "gpu_memory_mb": gpu_memory_mb, "optimizer_state_mb": optimizer_state_mb, "mfu": mfu,
            "other_cpu": other_cpu}


def event(name: str, **data) -> dict:
    """An event of the run: what happened (``name``), when, and its fields."""
    return {"kind": "event", "event": name, "time": time.time(), **data}


def evaluation(step: int, *, eval_loss: float | None, metric: str, **fields) -> dict:
    """An evaluation on held-out rows after ``step`` steps: its loss, the metric the run is judged by, and
    whatever else was measured (accuracy, f1, eval_time_s, samples, per-class figures)."""
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}: an evaluation is judged by one of {', '.join(METRICS)}")
    return event("eval", step=int(step), eval_loss=None if eval_loss is None else float(eval_loss), metric=metric,
                 **fields)
