"""Evaluation while a run trains: Trainer evaluates (before the first step, every ``eval_every`` steps and
after the last); this callback turns each evaluation into an ``eval`` event, keeps the best weights in
``best/`` and stops the run early when told to.

``best/`` is written as a whole: the weights go to ``best.tmp/``, a marker (``ortnb-best.json``: step,
metric, value) is written last, and the folder is renamed into place. A folder without the marker is
never read as the best checkpoint.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from transformers import TrainerCallback

from .. import evaluation, files
from ..runs import records
from ..runs import layout
from ..evaluation import SCREEN


class ClassificationMetrics:
    """Trainer's ``compute_metrics`` for a classifier: accuracy and macro-F1 go to Trainer (numbers only, so
    every tracker in report_to takes them); the confusion matrix and the most confidently wrong rows wait in
    ``details`` for the eval event. ``order``: the held-out rows were evaluated in this order (row ``order[i]``
    i-th: evaluation.length_order); predictions are put back in row order first, so the rows and texts named
    are those of the held-out data as given."""

    def __init__(self, names: list[str] | None, texts: list[str] | None, order=None):
        self.names, self.texts, self.order = names, texts, order
        self.details: dict = {}

    def __call__(self, prediction) -> dict:
        logits = prediction.predictions[0] if isinstance(prediction.predictions, tuple) else prediction.predictions
        logits, labels = (evaluation.in_row_order(values, self.order) for values in (logits, prediction.label_ids))
        result = evaluation.classify(logits, labels, self.names, self.texts)
        self.details = {"confusion": result.confusion, "wrong": result.wrong}
        return {"accuracy": result.accuracy, "f1": result.f1}


class EvalCallback(TrainerCallback):
    """Eval events, the best checkpoint and early stopping, the same on every rank (metrics are gathered)."""

    def __init__(self, run_dir: Path, writer, *, metric: str, patience: int | None, interval: int,
                 samples: int, metrics: ClassificationMetrics | None = None, on_evaluated=None,
                 target: float | None = None, screen=None):
        self.run_dir, self.writer = Path(run_dir), writer
        self.tracker = evaluation.BestTracker(metric, patience)
        self.target = target
        self.screen = screen  # runner.screen.Screen of a screened run
        self.reached: dict | None = None  # the evaluation that first reached the target
        self.interval, self.samples, self.metrics = interval, samples, metrics
        self.on_evaluated = on_evaluated  # RunCallback restarts its step clock: evaluation is no training time
        self.trainer = None
        self.early_stopped = False
        self._started = None

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= state.max_steps:
            control.should_evaluate = True  # always an evaluation of the final weights

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if evaluation.is_screen(metrics):
            self._screened(state, metrics)
        else:
            self._evaluated(state, control, metrics or {})
        if self.on_evaluated:
            self.on_evaluated()

    def _screened(self, state, metrics: dict) -> None:
        """A screen's figures become a ``screen`` event: never best/, a target or an early stop (the full split
        decides those)."""
        if self.writer:
            metric = self.tracker.metric
            value = evaluation.trainer_value(metrics, metric, SCREEN)
            offset = self.screen.offset if self.screen else None
            read_as = evaluation.calibrated(value, offset)
            self.writer.write(records.event(
                SCREEN, step=state.global_step, wall_time=time.time(), metric=metric, value=value,
                calibrated=read_as, offset=offset,
                eval_loss=metrics.get("screen_loss"), eval_time_s=metrics.get("screen_runtime"),
                samples=len(self.screen.rows) if self.screen else None,
                near=evaluation.near(metric, read_as, self.target, evaluation.SCREEN_NEAR)))

    def _evaluated(self, state, control, metrics: dict) -> None:
        record = self._record(state, metrics)
        if self.screen is not None and self.screen.reason:
            record["reason"] = self.screen.reason
        loss = evaluation.metric_value(record, "loss")
        # NaN weights still score an accuracy (argmax of NaN logits is class 0) but never become best/
        value = evaluation.metric_value(record, self.tracker.metric) if _finite(loss) else None
        improved = self.tracker.update(state.global_step, value, loss)
        record.update(best=improved, best_step=self.tracker.best_step, best_value=self.tracker.best_value)
        if improved and self.trainer is not None:
            self._save_best(state.global_step, record)
        # before the first step nothing was trained yet: a run trains at least until its next evaluation
        if self.reached is None and state.global_step > 0 and evaluation.reaches(self.tracker.metric, value,
                                                                                   self.target):
            self.reached = {"step": state.global_step, "value": value, "wall_time": record["wall_time"]}
            record["reached_target"] = True
            control.should_training_stop = True  # train until good: this is good enough
        elif self.tracker.should_stop and state.global_step < state.max_steps:
            self.early_stopped = True
            control.should_training_stop = True
            record["early_stop"] = (f"no better {evaluation.METRIC_NAMES[self.tracker.metric]} in "
                                    f"{self.tracker.since_best} evaluations since step {self.tracker.best_step}")
        if self.writer:
            self.writer.write(records.evaluation(**record))

    def _record(self, state, metrics: dict) -> dict:
        loss = metrics.get("eval_loss")
        record = {"step": state.global_step, "epoch": state.epoch or 0.0, "wall_time": time.time(),
                  "eval_loss": loss, "eval_time_s": metrics.get("eval_runtime"), "samples": self.samples,
                  "metric": self.tracker.metric}
        if self.metrics is not None:
            record.update(accuracy=metrics.get("eval_accuracy"), f1=metrics.get("eval_f1"), **self.metrics.details)
        else:
            record["perplexity"] = evaluation.perplexity(loss)
        return record

    def _save_best(self, step: int, record: dict) -> None:
        """Every rank calls save_model (DeepSpeed gathers through it); the rank that saved (global rank 0, which
        across nodes is the writer of one node's folder only) marks the folder whole and moves it into place."""
        staging = self.run_dir / (layout.BEST + layout.STAGING)
        self.trainer.save_model(str(staging))
        if not self.trainer.args.should_save:
            return
        marker = {"step": step, "metric": self.tracker.metric, "value": self.tracker.best_value,
                  "epoch": record.get("epoch"), "wall_time": record["wall_time"]}
        files.write_atomic(staging / layout.BEST_MARKER, json.dumps(marker), durable=True)  # after the weights
        layout.put_in_place(staging, self.run_dir / layout.BEST)


def _finite(value) -> bool:
    return value is None or math.isfinite(value)


def evaluate_cheaply(trainer, world: int, bf16: bool) -> None:
    """Trainer's evaluation made cheap and kept honest: the held-out rows in the order given (the worker sorts
    them by length: Trainer's length-grouped sampler would shuffle them, and the rows named in "most confidently
    wrong" would no longer be the rows that were wrong), each batch under torch.inference_mode (no autograd
    bookkeeping at all; the ORT dispatcher sees gradients off and runs PyTorch's forward), and under bf16
    autocast when the run trains in bf16 (accelerate's autocast of the prepared forward covers evaluation within
    train() too; this covers an evaluation that runs outside it)."""
    import contextlib

    import torch
    from torch.utils.data import SequentialSampler

    trainer._get_eval_sampler = lambda dataset: SequentialSampler(dataset) if world <= 1 else None  # accelerate shards
    step = trainer.prediction_step
    device = trainer.args.device.type

    def prediction_step(*args, **kwargs):
        autocast = torch.autocast(device, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
        with torch.inference_mode(), autocast:
            return step(*args, **kwargs)

    trainer.prediction_step = prediction_step
