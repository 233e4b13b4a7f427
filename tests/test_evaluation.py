"""Evaluation while training, the pure parts: metrics, the best evaluation, when to evaluate and stop, the
held-out split, the head plan and the pad token (exact values)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ortnb import data, evaluation, metrics, model_checks
from ortnb.config import RunConfig
from ortnb.data.checks import Labels
from ortnb.runner.worker import planned_steps


def test_classify_gives_accuracy_macro_f1_confusion_and_the_most_confidently_wrong_rows():
    logits = np.log(np.array([[0.9, 0.1, 0.0001], [0.2, 0.8, 0.0001], [0.6, 0.4, 0.0001], [0.1, 0.3, 0.6],
                              [0.05, 0.95, 0.0001]]))
    labels = [0, 1, 1, 2, 0]
    result = evaluation.classify(logits, labels, ["neg", "neu", "pos"], texts=["a", "b", "c", "d", "e"])
    assert result.accuracy == 3 / 5
    assert result.confusion == [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    # per class F1: neg 2*1/(2+2)=0.5, neu 0.5, pos 1.0 -> mean 2/3 (scikit-learn's f1_score(average="macro"))
    assert result.f1 == pytest.approx(2 / 3, abs=1e-12)
    assert [w["row"] for w in result.wrong] == [4, 2]  # 0.95 before 0.6
    assert result.wrong[0] == {"row": 4, "label": "neg", "predicted": "neu", "text": "e",
                               "confidence": pytest.approx(0.95 / 1.0001, abs=1e-9)}


def test_macro_f1_averages_only_classes_that_occur():
    # class 2 neither labelled nor predicted: left out, as scikit-learn does
    assert evaluation.macro_f1(np.array([[2, 0, 0], [1, 1, 0], [0, 0, 0]])) == pytest.approx((0.8 + 2 / 3) / 2)
    assert math.isnan(evaluation.macro_f1(np.zeros((2, 2))))


def test_eval_interval_and_planned_evaluations():
    assert evaluation.eval_interval(60, None) == 12
    assert evaluation.eval_interval(7, None) == 2
    assert evaluation.eval_interval(60, 25) == 25
    assert evaluation.planned_evaluations(60, 12) == [0, 12, 24, 36, 48, 60]
    assert evaluation.planned_evaluations(60, 25) == [0, 25, 50, 60]  # always the final weights
    # a run with a target skips the evaluation before step 1: untrained weights reach no target
    assert evaluation.planned_evaluations(60, 25, target=0.8) == [25, 50, 60]
    assert evaluation.planned_evaluations(10, 25, target=0.8) == [10]


def test_best_tracker_and_patience():
    tracker = evaluation.BestTracker("accuracy", patience=2)
    assert [tracker.update(step, value) for step, value in [(0, 0.5), (10, 0.7), (20, 0.7), (30, 0.65)]] == [
        True, True, False, False]
    assert (tracker.best_step, tracker.best_value, tracker.since_best, tracker.should_stop) == (10, 0.7, 2, True)
    loss = evaluation.BestTracker("loss")
    assert [loss.update(s, v) for s, v in [(0, 2.0), (1, float("nan")), (2, 1.5)]] == [True, False, True]
    assert not loss.should_stop  # no patience: never stops


def test_a_tie_on_the_metric_goes_to_the_lower_held_out_loss():
    # the reported case: accuracy 0.9 at steps 16-40 while the held-out loss fell; best/ must be step 40
    tracker = evaluation.BestTracker("accuracy", patience=3)
    seen = [(8, 0.767, 0.80), (16, 0.9, 0.744), (24, 0.9, 0.61), (32, 0.9, 0.52), (40, 0.9, 0.405), (48, 0.9, 0.43)]
    assert [tracker.update(step, value, loss) for step, value, loss in seen] == [True, True, True, True, True, False]
    assert (tracker.best_step, tracker.best_value, tracker.best_loss, tracker.since_best) == (40, 0.9, 0.405, 1)
    no_loss = evaluation.BestTracker("accuracy")  # without a loss a tie is no improvement
    assert [no_loss.update(s, 0.9, None) for s in (1, 2)] == [True, False] and no_loss.best_step == 1


def test_perplexity_and_metric_values():
    assert evaluation.perplexity(math.log(20.0)) == pytest.approx(20.0)
    assert evaluation.perplexity(None) is None and evaluation.perplexity(float("nan")) is None
    assert evaluation.metric_value({"eval_loss": 0.5, "accuracy": 0.8}, "loss") == 0.5
    assert evaluation.metric_value({"eval_loss": 0.5, "accuracy": 0.8}, "accuracy") == 0.8
    assert evaluation.default_metric("causal-lm") == "perplexity"


def test_stratified_split_holds_out_each_class_and_is_seeded():
    labels = [0] * 10 + [1] * 5 + [2]
    train, held = data.stratified_split(labels, 0.2, seed=0)
    assert sorted(train + held) == list(range(16))
    assert [labels[i] for i in held].count(0) == 2 and [labels[i] for i in held].count(1) == 1
    assert 15 in train  # a class with one row keeps it for training
    assert data.stratified_split(labels, 0.2, seed=0) == (train, held)
    assert data.stratified_split(labels, 0.2, seed=1) != (train, held)


def test_planned_steps_from_epochs_follow_the_ranks_share():
    cfg = RunConfig(batch_size=16, epochs=1.5)
    assert planned_steps(cfg, 1000, world=1) == 95  # ceil(1.5 * ceil(1000 / 16) = 63)
    assert planned_steps(cfg, 1000, world=2) == 48  # ceil(1.5 * ceil(500 / 16) = 32)
    assert planned_steps(RunConfig(max_steps=7), 1000, 1) == 7
    assert planned_steps(RunConfig(), 1000, 1) == 60


SAVED = {"architectures": ["BertForSequenceClassification"], "id2label": {"0": "neg", "1": "pos"}}


@pytest.mark.parametrize("saved, labels, new_head, names, note", [
    (None, Labels(3, ("a", "b", "c"), True), True, ("a", "b", "c"), None),
    ({"architectures": ["BertModel"]}, Labels(3), True, None, None),
    (SAVED, Labels(3, ("neg", "neu", "pos"), True), True, ("neg", "neu", "pos"),
     "new 3-class head; the saved 2-class head is not used"),
    (SAVED, Labels(2, ("neg", "pos"), True), False, ("neg", "pos"), None),
    (SAVED, Labels(2), False, ("neg", "pos"), None),  # ids 0/1: the saved names name them
    ({**SAVED, "id2label": {"0": "pos", "1": "neg"}}, Labels(2, ("neg", "pos"), True), False, ("pos", "neg"), None),
    (SAVED, Labels(2, ("fresh", "rotten"), True), True, ("fresh", "rotten"),
     "new 2-class head; the saved head's classes (neg, pos) are not the data's (fresh, rotten), so it is not used"),
    ({**SAVED, "id2label": {"0": "LABEL_0", "1": "LABEL_1"}}, Labels(2, ("fresh", "rotten"), True), False,
     ("fresh", "rotten"), None),
])
def test_head_plan(saved, labels, new_head, names, note):
    plan = model_checks.head_plan(saved, labels)
    assert (plan.new_head, plan.labels.names, plan.note) == (new_head, names, note)


def test_pad_choice():
    assert model_checks.pad_choice("[PAD]", "</s>", "<unk>") == ("[PAD]", None)
    assert model_checks.pad_choice(None, "</s>", "<unk>") == (
        "</s>", "the tokenizer has no pad token; ortnb pads batches with its end-of-sequence token '</s>'")
    assert model_checks.pad_choice(None, None, "<unk>")[0] == "<unk>"
    assert model_checks.pad_choice(None, None, None) == (None, None)


def test_evaluation_summary_names_the_best_and_when_it_was_reached():
    records = [{"kind": "event", "event": "started", "time": 100.0, "max_steps": 30},
               {"kind": "event", "event": "eval", "step": 0, "wall_time": 101.0, "metric": "accuracy",
                "accuracy": 0.5, "eval_loss": 0.7, "best": True},
               {"kind": "event", "event": "eval", "step": 10, "wall_time": 172.0, "metric": "accuracy",
                "accuracy": 0.81, "eval_loss": 0.45, "best": True},
               {"kind": "event", "event": "eval", "step": 20, "wall_time": 240.0, "metric": "accuracy",
                "accuracy": 0.80, "eval_loss": 0.44, "best": False,
                "early_stop": "no better accuracy in 1 evaluations since step 10"},
               {"kind": "event", "event": "completed", "time": 241.0, "early_stopped": True}]
    summary = metrics.evaluation_summary(records)
    assert summary == {"metric": "accuracy", "best_value": 0.81, "best_step": 10, "best_reached_s": 72.0,
                       "best_eval_loss": 0.45, "last_eval_step": 20,
                       "evaluations": 3, "eval_total_s": None, "eval_loss": 0.44, "accuracy": 0.80, "f1": None, "perplexity": None,
                       "early_stopped": True, "early_stop": "no better accuracy in 1 evaluations since step 10"}
    frame = metrics.evaluations_frame(records)
    assert frame["wall_s"].tolist() == [1.0, 72.0, 140.0] and frame["step"].tolist() == [0, 10, 20]
    assert metrics.planned_steps(records, None) == 30 and metrics.planned_steps([], None) == 60
    # a 4-epoch run before its worker counted the steps: unknown, not the 60 of a run without epochs
    assert metrics.planned_steps([], None, epochs=4) is None and metrics.planned_steps(records, None, epochs=4) == 30
    from ortnb.ui import present
    from ortnb.ui.state import DashboardState

    state = DashboardState()
    state.start("/runs/e", RunConfig(epochs=4), now=0.0)
    assert present.progress(state.latest, now=20.0).text == "starting processes… · 0:20 elapsed · step 0/?"
    assert metrics.evaluation_summary(records[:1]) == {}


def test_old_configs_read_as_they_were_meant():
    assert RunConfig.from_dict({"eval_samples": 0}).evaluate is False
    old = RunConfig.from_dict({"eval_samples": 200})
    assert (old.evaluate, old.eval_samples) == (True, 200)
