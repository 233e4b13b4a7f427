"""``RunSummary``: what ``Run.summary()`` returns, typed, key by key.

The summary stays a plain dict (it is JSON in every report, the comparison's rows and the tune cache), but every
key it may hold is declared here with what it means, so a reader's ``summary["..."]`` names a declared field and a
new figure is added here first (tests/runs/test_runs_layer.py checks ``metrics.summarize``'s keys against this list).
"""

from __future__ import annotations

from typing import TypedDict


class RunSummary(TypedDict, total=False):
    # which run
    label: str  # the configuration's label ("ort + fused AdamW")
    status: str  # starting, running, stalled, completed, stopped or failed
    run_dir: str
    kept: str  # a stopped run: the weights it kept (best/ first), in words (the Dashboard adds it)
    # speed, over the steps after warm-up
    steps_measured: int
    samples_per_s: float | None  # median
    samples_per_s_iqr: float | None
    samples_per_s_p25: float | None
    samples_per_s_p75: float | None
    tokens_per_s: float | None  # padded tokens, median
    tokens_per_s_iqr: float | None
    real_tokens_per_s: float | None  # tokens that are not padding, median
    padding_fraction: float | None
    step_time_s: float | None  # median
    mfu: float | None  # model FLOPs utilisation against the measured peak, median
    mfu_error: str | None  # why MFU is not shown, when it is not
    contended_share: float | None  # median share of the CPU other processes took while it trained
    contended: bool  # that share was over metrics.CONTENDED_SHARE: its speed is not this machine's alone
    # memory and loss
    peak_rss_mb: float | None  # the largest rank's peak resident memory
    optimizer_state_mb: float | None
    final_loss: float | None
    # the engine that ran (ORTModule can fall back to PyTorch: this says which really ran)
    engine: str | None
    fallback: str | None  # why ORT fell back, when it did
    exports: int | None  # ONNX exports ORTModule made
    first_step_s: float | None  # from the start to the end of the first step
    startup_s: dict | None  # seconds per start-up phase
    warm_run: int | None  # the run's number in a warm worker (1: the worker was started for it); None: started cold
    notes: list  # the run's notes, in words
    # evaluation (present when the run evaluated)
    eval_metric: str | None  # accuracy, f1, perplexity or loss
    best_value: float | None
    best_step: int | None
    best_reached_s: float | None  # since the run began
    best_eval_loss: float | None
    last_eval_step: int | None
    eval_evaluations: int  # how many evaluations
    eval_total_s: float | None  # seconds spent evaluating, all evaluations together (no step's time holds them)
    screens: int | None  # screens of a held-out subset between full evaluations (runner/screen.py); None: none
    screen_total_s: float | None  # their seconds together, apart from eval_total_s
    screen_samples: int | None  # rows in each screen
    eval_loss: float | None  # the last evaluation's
    accuracy: float | None
    f1: float | None
    perplexity: float | None
    early_stopped: bool
    early_stop: dict | None
    # a target (present when the run had one)
    target: float
    reached_target: bool
    target_step: int | None
    target_reached_s: float | None


FIELDS = frozenset(RunSummary.__annotations__)
