"""Evaluation while training, as pure functions: the metrics, which one is "best", when to evaluate, when
to stop early. The worker's callback (runner/evaluation.py) feeds them Trainer's evaluations; the
Dashboard, ``compare`` and the report read the eval events they produce.

Classification: accuracy, macro-F1 (the mean F1 of the classes that occur among labels or predictions,
as scikit-learn's ``f1_score(average="macro")``), the confusion matrix (rows: true class, columns:
predicted) and the most confidently wrong rows. Causal LM: perplexity, exp(eval loss per token).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .vocabulary import Task

CLASSIFICATION_METRICS = ("accuracy", "f1", "loss")
CAUSAL_METRICS = ("perplexity", "loss")
HIGHER_IS_BETTER = {"accuracy": True, "f1": True, "loss": False, "perplexity": False}
METRIC_NAMES = {"accuracy": "accuracy", "f1": "macro-F1", "loss": "eval loss", "perplexity": "perplexity"}
EVALUATIONS_PER_RUN = 5  # eval_every=None spreads this many over the run (plus one before the first step
# unless the run has a target)
WRONG_SHOWN = 5
EVAL_BATCH_FACTOR, EVAL_BATCH_CAP = 4, 128  # eval_batch_size=None: 4 x the training batch, at most 128 rows


def default_metric(task: str) -> str:
    return "perplexity" if task == Task.CAUSAL_LM else "accuracy"


def metrics_for(task: str) -> tuple[str, ...]:
    return CAUSAL_METRICS if task == Task.CAUSAL_LM else CLASSIFICATION_METRICS


def eval_interval(max_steps: int, eval_every: int | None) -> int:
    """Steps between evaluations: as asked, or about EVALUATIONS_PER_RUN spread over ``max_steps``."""
    if eval_every:
        return int(eval_every)
    return max(1, math.ceil(max_steps / EVALUATIONS_PER_RUN))


def planned_evaluations(max_steps: int, interval: int, target: float | None = None) -> list[int]:
    """The steps a run evaluates at: 0 (before training; not with a target: untrained weights reach none), every
    ``interval`` steps, and the last step."""
    steps = [*([0] if target is None else []), *range(interval, max_steps + 1, interval)]
    return steps if steps and steps[-1] == max_steps else [*steps, max_steps]


def eval_batch_size(batch_size: int, asked: int | None, task: str) -> int:
    """Rows per evaluation batch: as asked; else 4 x the training batch, at most EVAL_BATCH_CAP (never below the
    training batch) for a classifier, and the training batch for a causal LM, whose logits over the whole
    vocabulary for every token are what fills memory."""
    if asked:
        return int(asked)
    if task == Task.CAUSAL_LM:
        return batch_size
    return max(batch_size, min(EVAL_BATCH_FACTOR * batch_size, EVAL_BATCH_CAP))


SCREEN_ROWS = 200  # eval_screen=None with a target: this many held-out rows screened instead of the full split
SCREEN_MIN_SPLIT = 4 * SCREEN_ROWS  # eval_screen=None screens only a split this large (a smaller one costs little)
SCREEN_SHARE = 2  # screens per eval_every steps
NEAR = 0.02  # within this of the target (in the metric's units) a WSD run starts its decay (training/schedule.py)
SCREEN_NEAR = 0.01  # a screen (calibrated) within this of the target asks for the whole split. Measured on MiniLM /
# Rotten Tomatoes: 200 rows read 0.02-0.03 above the whole split, and at NEAR a run hovering below its target
# evaluated the whole split at every screen (5 whole evaluations where 2 decided); a whole evaluation costs about a
# third of the training between two screens, so asking for it once it is about 1 in 3 to reach the target pays


def screen_size(held_out: int, asked: int | None, target: float | None) -> int:
    """Rows of the held-out split screened in place of full evaluations (0: no screen). Only a run with a target
    screens: the screen decides when the full split is worth evaluating, and nothing else. ``asked`` None: SCREEN_ROWS
    when the split holds at least SCREEN_MIN_SPLIT rows; 0: none; a screen as large as the split is none."""
    if target is None or asked == 0:
        return 0
    if asked is None:
        return SCREEN_ROWS if held_out >= SCREEN_MIN_SPLIT else 0
    return int(asked) if int(asked) < held_out else 0


def screen_interval(interval: int) -> int:
    """Steps between screens: SCREEN_SHARE screens per ``interval`` (eval_every), a divisor of it, so that every
    ``interval`` steps falls on a screen (a race compares its trials there: at equal samples)."""
    most = max(1, interval // SCREEN_SHARE)
    return next(every for every in range(most, 0, -1) if interval % every == 0)


def screen_rows(held_out: int, size: int, seed: int = 0) -> np.ndarray:
    """Which rows the screen takes: ``size`` of ``held_out`` drawn at random (seeded), in row order: the same rows
    at every screen, so two screens differ only by the weights, and not the first rows of a file, which may be
    sorted by class or length."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(held_out, size=size, replace=False))


def near(metric: str, value: float | None, target: float | None, margin: float = NEAR) -> bool:
    """Whether ``value`` is within ``margin`` of ``target`` or beyond it (at or above target - margin; for loss
    and perplexity at or below target + margin)."""
    return within(value, target, HIGHER_IS_BETTER[metric], margin)


def within(value: float | None, target: float | None, rising: bool, margin: float) -> bool:
    """``near`` for a metric that rises or falls (training/schedule.py asks it so)."""
    if target is None or value is None or not math.isfinite(value):
        return False
    return value >= target - margin if rising else value <= target + margin


SCREEN = "screen"  # the prefix of a screen's figures among Trainer's metrics (an "eval" figure is the whole split's)


def is_screen(metrics: dict | None) -> bool:
    """Whether Trainer's figures of one evaluation are a screen's (runner/screen.py)."""
    return any(key.startswith(SCREEN + "_") for key in metrics or {})


def calibrated(screened: float | None, offset: float | None) -> float | None:
    """The screen's value corrected by ``offset``, how far the whole split read from the screen when both last
    ran at one step (whole - screen; None before: as screened). A fixed subset sits above or below the whole split
    by about the same amount while the weights change little."""
    if screened is None or offset is None:
        return screened
    return screened + offset


def full_evaluation_due(step: int, *, last_full: int, interval: int, max_steps: int, screened: float | None = None,
                        metric: str = "accuracy", target: float | None = None) -> str | None:
    """Why the full held-out split is evaluated at ``step`` in a screened run, or None (the screen alone): after
    the last step, or when the screen's value ``screened`` (calibrated) is within SCREEN_NEAR of the target (the
    whole split decides whether it is reached) and half an interval has passed since the last full evaluation (a
    run hovering just under its target does not evaluate the whole split at every screen). A screen far from the
    target costs a fifth of the whole split and says what the whole split would: not yet."""
    if step >= max_steps:
        return "the last step"
    if near(metric, screened, target, SCREEN_NEAR) and step - last_full >= max(1, interval // 2):
        return "the screen came within %g of the target" % SCREEN_NEAR
    return None


def length_order(lengths) -> np.ndarray:
    """Row indices, longest first (ties in row order): batches of rows of similar length pad little, and the
    largest batch comes first, so one that does not fit memory fails at once. Every metric is an aggregate over
    rows and ``in_row_order`` puts predictions back, so the order changes no reported figure."""
    return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")


def in_row_order(values, order) -> np.ndarray:
    """``values`` computed on the rows taken in ``order`` (row ``order[i]`` at position ``i``), back in row
    order; ``order`` None: as they are."""
    values = np.asarray(values)
    if order is None:
        return values
    restored = np.empty_like(values)
    restored[np.asarray(order)] = values
    return restored


def is_better(metric: str, value: float | None, best: float | None) -> bool:
    """Whether ``value`` improves on ``best`` (a NaN never does; anything beats no value)."""
    if value is None or not math.isfinite(value):
        return False
    if best is None:
        return True
    return value > best if HIGHER_IS_BETTER[metric] else value < best


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class ClassificationResult:
    accuracy: float
    f1: float
    confusion: list[list[int]]
    wrong: list[dict]  # the most confidently wrong rows: row, label, predicted, confidence (and text)


def classify(logits, labels, names: list[str] | None = None, texts: list[str] | None = None,
             top_wrong: int = WRONG_SHOWN) -> ClassificationResult:
    """Accuracy, macro-F1, confusion matrix and the most confidently wrong rows of one evaluation."""
    logits, labels = np.asarray(logits, dtype=np.float64), np.asarray(labels, dtype=np.int64)
    count = logits.shape[-1]
    probabilities = softmax(logits)
    predicted = probabilities.argmax(axis=-1)
    confusion = np.zeros((count, count), dtype=np.int64)
    np.add.at(confusion, (labels, predicted), 1)
    accuracy = float((predicted == labels).mean()) if len(labels) else math.nan
    return ClassificationResult(accuracy, macro_f1(confusion), confusion.tolist(),
                                confidently_wrong(probabilities, labels, names, texts, top_wrong))


def macro_f1(confusion: np.ndarray) -> float:
    """Mean F1 over the classes that occur as a label or a prediction (scikit-learn's macro average)."""
    confusion = np.asarray(confusion)
    true_positive = np.diag(confusion).astype(np.float64)
    labelled, predicted = confusion.sum(axis=1), confusion.sum(axis=0)
    present = (labelled + predicted) > 0
    if not present.any():
        return math.nan
    f1 = 2 * true_positive[present] / (labelled[present] + predicted[present])
    return float(f1.mean())


def confidently_wrong(probabilities: np.ndarray, labels: np.ndarray, names=None, texts=None,
                      top: int = WRONG_SHOWN) -> list[dict]:
    """The wrong predictions made with the highest probability, most confident first."""
    predicted = probabilities.argmax(axis=-1)
    wrong = np.flatnonzero(predicted != labels)
    confidence = probabilities[wrong, predicted[wrong]]
    order = wrong[np.argsort(-confidence, kind="stable")][:top]

    def name(index: int) -> str:
        return names[index] if names else str(index)

    rows = []
    for row in order:
        entry = {"row": int(row), "label": name(int(labels[row])), "predicted": name(int(predicted[row])),
                 "confidence": float(probabilities[row, predicted[row]])}
        if texts is not None:
            entry["text"] = texts[row][:300]
        rows.append(entry)
    return rows


def perplexity(eval_loss: float | None) -> float | None:
    """exp(mean token loss); infinite when the loss overflows, None without a loss."""
    if eval_loss is None or not math.isfinite(eval_loss):
        return None
    return math.exp(eval_loss) if eval_loss < 700 else math.inf


def metric_value(record: dict, metric: str) -> float | None:
    """The value of ``metric`` in an eval event (``loss`` is the eval loss)."""
    value = record.get("eval_loss" if metric == "loss" else metric)
    return float(value) if isinstance(value, (int, float)) else None


def trainer_value(metrics: dict, metric: str, prefix: str = "eval") -> float | None:
    """The value of ``metric`` among Trainer's figures of one evaluation (``{prefix}_loss``, ``{prefix}_accuracy``,
    ...); perplexity from the loss, which is all Trainer has of it."""
    value = metrics.get(f"{prefix}_loss" if metric in ("loss", "perplexity") else f"{prefix}_{metric}")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return perplexity(value) if metric == "perplexity" else float(value)


def reaches(metric: str, value: float | None, target: float | None) -> bool:
    """Whether ``value`` reaches ``target`` (at or above it; at or below for loss and perplexity)."""
    if target is None or value is None or not math.isfinite(value):
        return False
    return value >= target if HIGHER_IS_BETTER[metric] else value <= target


def target_problem(metric: str, target) -> str | None:
    """Why ``target`` cannot be reached by ``metric`` (None when it can)."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
        return f"must be a number, got {target!r}."
    if metric in ("accuracy", "f1") and not 0 < target <= 1:
        return (f"{METRIC_NAMES[metric]} runs from 0 to 1, so target={target!r} can never be reached; give a share "
                "such as 0.83.")
    if metric == "perplexity" and target < 1:
        return f"perplexity is at least 1, so target={target!r} can never be reached."
    if metric == "loss" and target <= 0:
        return f"the eval loss stays above 0, so target={target!r} can never be reached."
    return None


@dataclass
class BestTracker:
    """The best evaluation so far and how many evaluations since have not improved on it.

    Ties on the metric are broken by the held-out loss: accuracy 0.900 at steps 16, 24, 32 and 40 while the
    loss fell 0.744 -> 0.405 makes step 40 the best (the same predictions, held with more confidence), so the
    weights kept in best/ are those whose loss the card shows."""

    metric: str
    patience: int | None = None
    best_value: float | None = None
    best_step: int | None = None
    best_loss: float | None = None
    since_best: int = 0

    def update(self, step: int, value: float | None, loss: float | None = None) -> bool:
        """Record one evaluation (its metric's value and its held-out loss); returns whether it is a new best."""
        if is_better(self.metric, value, self.best_value) or self._ties_with_lower_loss(value, loss):
            self.best_value, self.best_step, self.best_loss, self.since_best = value, step, loss, 0
            return True
        self.since_best += 1
        return False

    def _ties_with_lower_loss(self, value: float | None, loss: float | None) -> bool:
        return (self.metric != "loss" and value is not None and value == self.best_value
                and is_better("loss", loss, self.best_loss))

    @property
    def should_stop(self) -> bool:
        return bool(self.patience) and self.since_best >= self.patience
