"""A cheap screen between full evaluations, for a run with a target.

Trainer evaluates every ``screen_interval`` steps; at each, this module's ``evaluate`` first scores a fixed subset of
the held-out rows (the screen: ``evaluation.screen_rows``) and evaluates the whole split only when
``evaluation.full_evaluation_due`` says so: the screen, corrected by how far it last read from the whole split
(``evaluation.calibrated``), came near the target, or training ended. The screen's figures reach the callbacks with
the prefix ``screen_`` (an ``eval_`` figure is always the full split's): EvalCallback writes them as ``screen``
events and declares a target, keeps best/ or stops early only on the full split; the WSD schedule starts its decay
on either, a screen's calibrated (training/schedule.py).

The screen scores accuracy and F1 without the confusion matrix or the wrong rows (ClassificationMetrics without
texts or order: the screen's rows are its own).
"""

from __future__ import annotations

from .. import evaluation
from ..evaluation import SCREEN


class Screen:
    """Which evaluation runs at each of Trainer's evaluation points (all ranks decide alike: the figures compared
    are gathered over the ranks)."""

    def __init__(self, rows, *, interval: int, max_steps: int, metric: str, target: float | None,
                 scores=None):
        self.rows, self.interval, self.max_steps = rows, interval, max_steps
        self.metric, self.target, self.scores = metric, target, scores
        self.last_full = 0
        self.offset: float | None = None  # whole - screen, when both last ran at one step (evaluation.calibrated)
        self.reason: str | None = None  # why the latest full evaluation ran (its eval event says it)

    def install(self, trainer) -> None:
        """Route Trainer's periodic evaluations through ``evaluate`` (an explicit ``trainer.evaluate(dataset)``
        call, or one with another prefix, is left as it was)."""
        full = trainer.evaluate

        def evaluate(eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
            if eval_dataset is not None or metric_key_prefix != "eval":
                return full(eval_dataset=eval_dataset, ignore_keys=ignore_keys, metric_key_prefix=metric_key_prefix)
            return self.evaluate(trainer, full, ignore_keys)

        trainer.evaluate = evaluate

    def evaluate(self, trainer, full, ignore_keys=None) -> dict:
        step = trainer.state.global_step
        self.reason = self._due(step)
        screened = None
        if self.reason is None:
            figures = self._screen(trainer, full, ignore_keys)
            screened = evaluation.trainer_value(figures, self.metric, SCREEN)
            self.reason = self._due(step, evaluation.calibrated(screened, self.offset))
            if self.reason is None:
                return figures
        self.last_full = step
        whole = full(ignore_keys=ignore_keys)
        value = evaluation.trainer_value(whole, self.metric)
        if screened is not None and value is not None:
            self.offset = value - screened
        return whole

    def _due(self, step: int, screened: float | None = None) -> str | None:
        return evaluation.full_evaluation_due(step, last_full=self.last_full, interval=self.interval,
                                              max_steps=self.max_steps, screened=screened, metric=self.metric,
                                              target=self.target)

    def _screen(self, trainer, full, ignore_keys) -> dict:
        """The screen's figures; the run's own compute_metrics is swapped for the screen's while it runs."""
        own = trainer.compute_metrics
        trainer.compute_metrics = self.scores if own is not None else None
        try:
            return full(eval_dataset=self.rows, ignore_keys=ignore_keys, metric_key_prefix=SCREEN)
        finally:
            trainer.compute_metrics = own
