"""LiveCallback: the dashboard's live charts for a Trainer or ORTTrainer running in this process."""

from __future__ import annotations

import time

from transformers import TrainerCallback

from .. import charts
from ..runs import records
from ..display import Throttle, show_static, warn_text_mode, widget_frontend
from ..memory import peak_rss_mb
from .redraw import redraw


def engine_of(model) -> str:
    """What executes the model's training steps right now (ORT's dispatcher, or plain PyTorch)."""
    from ..backends.ortmodule import engine_for

    engine = engine_for(model)
    if engine is None:
        return "pytorch"
    return "onnxruntime" if engine.stats.ort_steps and not engine.stats.fallback else "pytorch"


def eval_record(step: int, logs: dict, metric_for_best_model: str | None = None) -> dict:
    """A Trainer evaluation's logs as the eval event the Dashboard's runs write (the same chart draws both):
    eval_loss and, where compute_metrics gave them, accuracy and f1. The metric is Trainer's
    metric_for_best_model when set, else accuracy when there is one, else the loss."""
    measured = {name: float(logs[f"eval_{name}"]) for name in ("accuracy", "f1")
                if isinstance(logs.get(f"eval_{name}"), (int, float))}
    chosen = (metric_for_best_model or "").removeprefix("eval_")
    metric = chosen if chosen == "loss" or chosen in measured else ("accuracy" if "accuracy" in measured else "loss")
    return records.evaluation(step, eval_loss=logs["eval_loss"], metric=metric, **measured)


class LiveCallback(TrainerCallback):
    """``trainer.add_callback(ortnb.LiveCallback())``: samples/s, loss, memory and MFU while it trains, and each
    evaluation's held-out loss and metric (set eval_strategy in the TrainingArguments to get them)."""

    def __init__(self, label: str | None = None, throttle: Throttle | None = None):
        self.label = label
        self.throttle = throttle or Throttle(0.5)
        self.records: list[dict] = []
        self.chart = charts.LiveChart()
        self.figure = None
        self.widgets = widget_frontend()
        self._engine = None
        self._last = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.chart.add_run("live", self.label or type(model).__name__)
        self._last = time.perf_counter()
        self._samples_per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * max(
            1, args.world_size)
        if self.widgets:
            from IPython.display import display

            from .fit import responsive

            self.figure = responsive(charts.live_figure(widget=True))
            display(self.figure)
        else:
            warn_text_mode("ortnb.LiveCallback")

    def on_step_end(self, args, state, control, model=None, **kwargs):
        now = time.perf_counter()
        self._step_time, self._last = now - self._last, now
        self._engine = engine_of(model)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "eval_loss" in logs and state.is_world_process_zero:
            self.records.append(eval_record(state.global_step, logs, args.metric_for_best_model))
            if self.widgets and self.throttle.ready():
                self._draw()
            return
        if not logs or "loss" not in logs or not state.is_world_process_zero:
            return
        record = records.step(state.global_step, step_time=self._step_time, samples=self._samples_per_step,
                              loss=float(logs["loss"]), learning_rate=logs.get("learning_rate"),
                              grad_norm=logs.get("grad_norm"), peak_rss_mb=[peak_rss_mb()])
        self.records.append(record)
        if not self.widgets:
            from ..terminal import format_step

            print(format_step(record), flush=True)
        elif self.throttle.ready():
            self._draw()

    def on_train_end(self, args, state, control, **kwargs):
        if self.widgets:
            self._draw()
            return
        figure = charts.live_figure()
        new, _ = self.chart.updates("live", self.records, self._engine)
        charts.apply_updates(figure, new, [])
        charts.set_live_layout(figure, 0, empty=not self.records, eval_hint=self._eval_hint(),
                               metric=charts.eval_metric_of(self.records))
        show_static(figure)

    def _eval_hint(self) -> str | None:
        if charts.eval_series(self.records):
            return None
        return "No evaluation yet: set eval_strategy='steps' (and eval_steps) in the TrainingArguments to see one"

    def _draw(self) -> None:
        new, changed = self.chart.updates("live", self.records, self._engine)
        with redraw(self.figure):
            charts.apply_updates(self.figure, new, changed)
            if new:
                charts.set_live_layout(self.figure, 0, empty=False, eval_hint=self._eval_hint(),
                                       metric=charts.eval_metric_of(self.records))

    def __repr__(self) -> str:
        return f"LiveCallback(steps={len(self.records)})"
