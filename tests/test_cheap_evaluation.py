"""Evaluation that costs little and stays honest: a larger batch, rows sorted by length (the figures and the rows
named are those of the rows as given), no evaluation before step 1 when a target is set, and the evaluations'
count and seconds in the summary apart from the steps."""

from __future__ import annotations

import numpy as np
import pytest

from ortnb import evaluation, metrics, validate
from ortnb.config import RunConfig
from ortnb.runner.evaluation import ClassificationMetrics
from ortnb.vocabulary import Task


def test_the_eval_batch_is_4x_the_training_batch_at_most_128_and_the_training_batch_for_a_causal_lm():
    classify = Task.SEQUENCE_CLASSIFICATION
    assert evaluation.eval_batch_size(16, None, classify) == 64
    assert evaluation.eval_batch_size(64, None, classify) == 128
    assert evaluation.eval_batch_size(256, None, classify) == 256  # never below the training batch
    assert evaluation.eval_batch_size(8, None, Task.CAUSAL_LM) == 8
    assert evaluation.eval_batch_size(16, 24, classify) == 24 == evaluation.eval_batch_size(16, 24, Task.CAUSAL_LM)


@pytest.mark.parametrize("value", [0, -1, 2.5, "64", True])
def test_an_eval_batch_below_one_row_is_refused_naming_the_field(value):
    problems = validate(RunConfig(model="tiny-bert", eval_batch_size=value))
    assert [p.field for p in problems] == ["eval_batch_size"]
    assert "whole number of rows >= 1, or None (4 x batch_size, at most 128)" in problems[0].message
    assert validate(RunConfig(model="tiny-bert", eval_batch_size=1)) == []
    assert "4 x batch_size" in RunConfig.help("eval_batch_size")


def test_rows_sorted_by_length_give_the_same_figures_and_name_the_same_rows():
    rng = np.random.default_rng(0)
    rows = 300
    logits = rng.normal(size=(rows, 3))
    labels = rng.integers(0, 3, size=rows)
    texts = [f"row {i}" for i in range(rows)]
    order = evaluation.length_order(rng.integers(3, 60, size=rows))
    assert sorted(order.tolist()) == list(range(rows))
    plain = ClassificationMetrics(["a", "b", "c"], texts)
    sorted_rows = ClassificationMetrics(["a", "b", "c"], texts, order=order)

    class Prediction:
        def __init__(self, predictions, label_ids):
            self.predictions, self.label_ids = predictions, label_ids

    assert plain(Prediction(logits, labels)) == sorted_rows(Prediction(logits[order], labels[order]))
    assert plain.details == sorted_rows.details
    assert all(w["text"] == f"row {w['row']}" for w in sorted_rows.details["wrong"])


def test_length_order_is_longest_first_ties_in_row_order():
    assert evaluation.length_order([3, 9, 3, 9, 1]).tolist() == [1, 3, 0, 2, 4]
    assert evaluation.in_row_order(np.array([10, 30, 0, 20, 40]), [1, 3, 0, 2, 4]).tolist() == [0, 10, 20, 30, 40]


def test_a_run_with_a_target_is_not_evaluated_before_its_first_step(tmp_path):
    from ortnb.runner.worker import training_arguments

    plain = training_arguments(RunConfig(model="tiny-bert"), tmp_path, max_steps=8, eval_every=4, eval_batch_size=64)
    targeted = training_arguments(RunConfig(model="tiny-bert", target=0.8), tmp_path, max_steps=8, eval_every=4)
    assert plain.eval_on_start and not targeted.eval_on_start
    assert (plain.per_device_eval_batch_size, targeted.per_device_eval_batch_size) == (64, 16)


def test_the_summary_counts_the_evaluations_and_their_seconds_apart():
    records = [{"kind": "event", "event": "started", "time": 100.0},
               {"kind": "event", "event": "eval", "step": 4, "wall_time": 110.0, "metric": "accuracy",
                "accuracy": 0.6, "eval_time_s": 1.25, "best": True},
               {"kind": "event", "event": "eval", "step": 8, "wall_time": 120.0, "metric": "accuracy",
                "accuracy": 0.7, "eval_time_s": 0.75, "best": True}]
    summary = metrics.evaluation_summary(records)
    assert (summary["evaluations"], summary["eval_total_s"]) == (2, 2.0)
    assert metrics.evaluation_summary(records[:2] + [{**records[2], "eval_time_s": None}])["eval_total_s"] == 1.25


@pytest.mark.ort  # evaluates with ORTTrainer in this process
def test_a_cheap_evaluation_reports_what_the_plain_one_does(tmp_path):
    """Trainer's evaluation of the rows as given (training batch, in row order) and the worker's (4x the batch,
    rows sorted by length, inference mode): the same accuracy, F1, confusion matrix and most confidently wrong
    rows; the eval loss the same up to float rounding. (Before, a length-grouped run evaluated through Trainer's
    length-grouped eval sampler, which shuffles the rows: the rows and texts named as wrong were other rows.)"""
    from ortnb import ORTTrainer, assets, data
    from ortnb.runner.evaluation import evaluate_cheaply

    from ._helpers import ort_args

    model, tokenizer = assets.load_model("tiny-bert", "sequence-classification")
    _, held_out = data.build("rotten_tomatoes", "sequence-classification", tokenizer, 64, train_samples=8,
                             padding="longest", eval_samples=200)
    texts = [f"row {i}" for i in range(len(held_out))]

    def evaluate(rows, scores, batch, cheap):
        sampling = "group_by_length" if cheap else "random"  # random: Trainer evaluates the rows in order
        trainer = ORTTrainer(model=model, args=ort_args(tmp_path, backend="eager", per_device_eval_batch_size=batch,
                                                        train_sampling_strategy=sampling),
                             eval_dataset=rows, data_collator=data.collator(tokenizer, "longest"),
                             compute_metrics=scores)
        if cheap:
            evaluate_cheaply(trainer, world=1, bf16=False)
        return trainer.evaluate()

    plain = ClassificationMetrics(["rotten", "fresh"], texts)
    order = evaluation.length_order([len(ids) for ids in held_out["input_ids"]])
    cheap = ClassificationMetrics(["rotten", "fresh"], texts, order=order)
    before = evaluate(held_out, plain, 8, cheap=False)
    after = evaluate(held_out.select(order), cheap, 32, cheap=True)
    assert (before["eval_accuracy"], before["eval_f1"]) == (after["eval_accuracy"], after["eval_f1"])
    assert before["eval_loss"] == pytest.approx(after["eval_loss"], rel=1e-5)
    assert plain.details["confusion"] == cheap.details["confusion"]
    assert [(w["row"], w["label"], w["predicted"], w["text"]) for w in plain.details["wrong"]] == \
        [(w["row"], w["label"], w["predicted"], w["text"]) for w in cheap.details["wrong"]]
    assert [w["confidence"] for w in plain.details["wrong"]] == \
        pytest.approx([w["confidence"] for w in cheap.details["wrong"]], rel=1e-5)


@pytest.mark.ort  # trains tiny BERT with ORTTrainer in this process
def test_a_real_run_with_a_target_evaluates_only_after_training(tmp_path, monkeypatch):
    from ortnb.runner import worker
    from ortnb.runs import layout

    from ._helpers import tiny

    evaluated = []

    class Recording(worker.EvalCallback):
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            evaluated.append((state.global_step, args.per_device_eval_batch_size, self.samples))
            return super().on_evaluate(args, state, control, metrics=metrics, **kwargs)

    monkeypatch.setattr(worker, "EvalCallback", Recording)
    config = tiny(tmp_path, backend="eager", max_steps=4, eval_every=2, eval_samples=64, target=0.99)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config.to_json(run_dir / layout.CONFIG)
    assert worker.run(run_dir, rank=0, world=1) == "completed"
    assert evaluated == [(2, 32, 64), (4, 32, 64)]  # no step 0; 4 x the batch of 8
