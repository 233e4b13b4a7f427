"""The screen of a run with a target (runner/screen.py, the pure rules in evaluation.py): a fixed subset of the
held-out rows scored twice every eval_every steps in place of the whole split, which is evaluated when the screen
comes near the target and after the last step; a target is declared on the whole split only; a WSD run's decay starts on either; the screens' count and
seconds are reported apart from the evaluations'."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ortnb import evaluation, metrics, validate
from ortnb.config import RunConfig
from ortnb.ui.present import evaluating_text


def test_only_a_run_with_a_target_and_a_split_four_times_the_screen_is_screened():
    assert evaluation.screen_size(1000, None, 0.8) == 200
    assert evaluation.screen_size(800, None, 0.8) == 200
    assert evaluation.screen_size(799, None, 0.8) == 0  # a small split costs little whole
    assert evaluation.screen_size(1000, None, None) == 0  # no target: nothing to screen for
    assert evaluation.screen_size(1000, 0, 0.8) == 0
    assert evaluation.screen_size(1000, 64, 0.8) == 64
    assert evaluation.screen_size(64, 64, 0.8) == 0  # a screen as large as the split is the split
    assert [evaluation.screen_interval(n) for n in (64, 12, 9, 6, 3, 2, 1)] == [32, 6, 3, 3, 1, 1, 1]  # divisors


def test_the_screen_takes_the_same_random_rows_every_time_in_row_order():
    rows = evaluation.screen_rows(1000, 200, seed=0)
    assert len(set(rows.tolist())) == 200 and rows.tolist() == sorted(rows.tolist())
    assert np.array_equal(rows, evaluation.screen_rows(1000, 200, seed=0))
    assert not np.array_equal(rows, evaluation.screen_rows(1000, 200, seed=1))
    assert rows.max() > 800 and rows.min() < 200  # spread over the split, not its first rows


def test_the_whole_split_runs_at_the_end_and_when_the_screen_comes_near():
    due = evaluation.full_evaluation_due
    plan = dict(interval=64, max_steps=600, metric="accuracy", target=0.80)
    assert due(32, last_full=0, screened=0.70, **plan) is None
    assert due(64, last_full=0, screened=0.785, **plan) is None  # far: the screen said "not yet" for a fifth of it
    assert due(16, last_full=0, screened=0.795, **plan) is None  # near, but too soon after the last full one
    assert due(32, last_full=0, screened=0.79, **plan) == "the screen came within 0.01 of the target"
    assert due(32, last_full=0, screened=0.7899, **plan) is None
    assert due(48, last_full=32, screened=0.85, **plan) is None  # half an interval between full evaluations
    assert due(64, last_full=32, screened=0.85, **plan) == "the screen came within 0.01 of the target"
    assert due(600, last_full=592, **plan) == "the last step"
    falling = dict(plan, metric="loss", target=0.40)
    assert due(32, last_full=0, screened=0.41, **falling) is not None
    assert due(32, last_full=0, screened=0.42, **falling) is None


def test_a_screen_is_read_as_the_whole_split_read_beside_it_last():
    assert evaluation.calibrated(0.81, None) == 0.81  # no whole evaluation beside a screen yet
    assert evaluation.calibrated(0.81, -0.03) == pytest.approx(0.78)
    assert evaluation.calibrated(None, -0.03) is None


def test_a_screens_figure_is_read_with_its_prefix_and_perplexity_from_its_loss():
    figures = {"screen_loss": 2.0, "screen_accuracy": 0.75, "eval_accuracy": 0.5}
    assert evaluation.trainer_value(figures, "accuracy", "screen") == 0.75
    assert evaluation.trainer_value(figures, "accuracy") == 0.5
    assert evaluation.trainer_value(figures, "perplexity", "screen") == pytest.approx(np.exp(2.0))
    assert evaluation.trainer_value(figures, "f1", "screen") is None


class FakeTrainer:
    """Trainer's evaluate as the screen sees it: each call recorded, figures from a table by step."""

    def __init__(self, screens: dict, fulls: dict):
        self.state = SimpleNamespace(global_step=0)
        self.compute_metrics = "the run's own"
        self.calls, self.screens, self.fulls = [], screens, fulls

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval"):
        step = self.state.global_step
        self.calls.append((step, metric_key_prefix, self.compute_metrics))
        table = self.screens if metric_key_prefix == "screen" else self.fulls
        return {f"{metric_key_prefix}_accuracy": table.get(step, 0.5)}


def test_the_screen_decides_which_evaluation_runs_and_restores_the_runs_metrics():
    from ortnb.runner.screen import Screen

    # the screen reads 0.03 above the whole split: once a whole evaluation stood beside it, it is read 0.03 lower
    trainer = FakeTrainer(screens={4: 0.80, 6: 0.82, 8: 0.81, 10: 0.83}, fulls={4: 0.77, 10: 0.80})
    screen = Screen(rows="200 rows", interval=8, max_steps=12, metric="accuracy", target=0.80,
                    scores="the screen's")
    screen.install(trainer)
    for step in (2, 4, 6, 8, 10, 12):
        trainer.state.global_step = step
        trainer.evaluate()
    assert [(step, prefix) for step, prefix, _ in trainer.calls] == [
        (2, "screen"), (4, "screen"), (4, "eval"),  # near at 4: the whole split, 0.03 below the screen
        (6, "screen"),  # 0.82 reads 0.79, near, but 2 steps after the last whole one
        (8, "screen"),  # 0.81 reads 0.78: not near (uncalibrated it would have asked for the whole split)
        (10, "screen"), (10, "eval"),  # 0.83 reads 0.80
        (12, "eval")]  # the last step: always
    assert screen.offset == pytest.approx(0.80 - 0.83)
    assert {metrics for _, prefix, metrics in trainer.calls if prefix == "screen"} == {"the screen's"}
def _eval_callback(tmp_path, heard, screen=None):
    from ortnb.runner.evaluation import EvalCallback

    writer = SimpleNamespace(write=heard.append)
    return EvalCallback(tmp_path, writer, metric="accuracy", patience=None, interval=8, samples=1000, target=0.80,
                        screen=screen, metrics=SimpleNamespace(details={}))


def test_a_screen_at_the_target_is_a_screen_event_and_never_declares_the_target(tmp_path):
    heard = []
    callback = _eval_callback(tmp_path, heard, screen=SimpleNamespace(rows=[0] * 200, reason=None, offset=None))
    control = SimpleNamespace(should_training_stop=False)
    state = SimpleNamespace(global_step=4, epoch=0.1, max_steps=100)
    callback.on_evaluate(None, state, control, metrics={"screen_accuracy": 0.9, "screen_loss": 0.3,
                                                       "screen_runtime": 0.6})
    assert callback.reached is None and not control.should_training_stop
    [event] = heard
    assert (event["event"], event["step"], event["value"], event["samples"], event["near"]) == (
        "screen", 4, 0.9, 200, True)
    assert (event["calibrated"], event["offset"]) == (0.9, None)
    assert event["eval_time_s"] == 0.6
    callback.screen.reason = "the screen came within 0.01 of the target"
    callback.on_evaluate(None, state, control, metrics={"eval_accuracy": 0.8, "eval_loss": 0.4,
                                                       "eval_runtime": 3.0})
    assert callback.reached["step"] == 4 and control.should_training_stop
    assert (heard[1]["event"], heard[1]["reached_target"], heard[1]["reason"]) == (
        "eval", True, "the screen came within 0.01 of the target")


def test_the_wsd_decay_starts_when_the_calibrated_screen_comes_near():
    from ortnb.training import schedule

    heard = []
    writer = SimpleNamespace(event=lambda name, **data: heard.append((name, data)))
    plan = schedule.WsdSchedule(total=100)
    screen = SimpleNamespace(offset=-0.03)  # the whole split read 0.03 below the screen
    callback = schedule.decay_near_target(plan, "accuracy", 0.80, writer=writer, screen=screen)
    callback.on_evaluate(None, SimpleNamespace(global_step=12), None, metrics={"screen_accuracy": 0.80})
    assert plan.started_early_at is None  # reads 0.77
    callback.on_evaluate(None, SimpleNamespace(global_step=16), None, metrics={"screen_accuracy": 0.815})
    assert plan.started_early_at == 16  # reads 0.785
    assert heard == [("schedule", {"rule": plan.rule(), "decay_step": 17,
                                   "reason": "a screen of held-out rows within 0.02 of the target"})]


def test_a_causal_lms_decay_reads_perplexity_from_the_loss():
    from ortnb.training import schedule

    plan = schedule.WsdSchedule(total=100)
    callback = schedule.decay_near_target(plan, "perplexity", 20.0, rising=False)
    callback.on_evaluate(None, SimpleNamespace(global_step=30), None, metrics={"eval_loss": float(np.log(25.0))})
    assert plan.started_early_at is None
    callback.on_evaluate(None, SimpleNamespace(global_step=40), None, metrics={"eval_loss": float(np.log(20.01))})
    assert plan.started_early_at == 40


def test_the_summary_and_the_card_count_screens_apart_from_evaluations():
    records = [{"kind": "event", "event": "started", "time": 100.0},
               *({"kind": "event", "event": "screen", "time": 101.0 + n, "step": 4 * n, "eval_time_s": 0.5,
                  "samples": 200} for n in (1, 2, 3)),
               {"kind": "event", "event": "eval", "time": 110.0, "step": 12, "metric": "accuracy",
                "accuracy": 0.81, "eval_loss": 0.4, "eval_time_s": 2.75, "best": True}]
    summary = metrics.evaluation_summary(records)
    assert (summary["evaluations"], summary["eval_total_s"]) == (1, 2.75)
    assert (summary["screens"], summary["screen_total_s"], summary["screen_samples"]) == (3, 1.5, 200)
    shown = {"eval_evaluations": 1, "eval_total_s": 2.75, "screens": 3, "screen_total_s": 1.5, "screen_samples": 200}
    assert evaluating_text(shown) == "1 evaluation in 2.8 s; 3 screens of 200 rows in 1.5 s"
    assert evaluating_text({"eval_evaluations": 2, "eval_total_s": 6.0}) == "2 evaluations in 6.0 s"
    assert "screens" not in metrics.evaluation_summary(records[:1] + records[-1:])
    # stopped before the screen came near: screens, no whole evaluation, and the card says so
    assert metrics.evaluation_summary(records[:-1]) == {"screens": 3, "screen_total_s": 1.5, "screen_samples": 200}
    assert evaluating_text({"screens": 3, "screen_total_s": 1.5, "screen_samples": 200}) == "3 screens of 200 rows in 1.5 s"
    from ortnb.ui.present import quality_items

    assert quality_items({"screens": 1, "screen_total_s": 0.25, "screen_samples": 4}) == [
        ("evaluating", "1 screen of 4 rows in 0.2 s")]
    assert quality_items({}) == []


@pytest.mark.parametrize("value, message", [
    (-1, "whole number of held-out rows >= 0"), (2.5, "whole number"), (True, "whole number"),
    (64, "this run has no target: set target too, or leave eval_screen blank")])
def test_a_bad_screen_is_refused_naming_the_field(value, message):
    problems = validate(RunConfig(model="tiny-bert", eval_screen=value))
    assert [p.field for p in problems] == ["eval_screen"] and message in problems[0].message
    assert validate(RunConfig(model="tiny-bert", eval_screen=64, target=0.8)) == []
    assert validate(RunConfig(model="tiny-bert", eval_screen=0)) == []


@pytest.mark.ort  # trains tiny BERT with ORTTrainer in this process
@pytest.mark.parametrize("target, expected, steps", [
    (0.99, [(2, "screen"), (4, "screen"), (6, "screen"), (8, "eval")], 8),  # never near: the whole split at the end
    (0.30, [(2, "screen"), (2, "eval")], 2)])  # near at once: the whole split at 2 reaches it; the run ends there
def test_a_real_run_screens_200_of_its_1000_held_out_rows_in_place_of_whole_evaluations(tmp_path, monkeypatch, target,
                                                                                     expected, steps):
    from ortnb.runner import worker
    from ortnb.runs import layout

    from .._helpers import tiny

    evaluated, trained = [], []

    class Recording(worker.EvalCallback):
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            prefix = "screen" if "screen_accuracy" in metrics else "eval"
            evaluated.append((state.global_step, prefix, len(self.screen.rows)))
            return super().on_evaluate(args, state, control, metrics=metrics, **kwargs)

        def on_train_end(self, args, state, control, **kwargs):
            trained.append(state.global_step)

    monkeypatch.setattr(worker, "EvalCallback", Recording)
    config = tiny(tmp_path, backend="eager", max_steps=8, eval_every=4, target=target)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config.to_json(run_dir / layout.CONFIG)
    assert worker.run(run_dir, rank=0, world=1) == "completed"
    assert [(step, prefix) for step, prefix, _ in evaluated] == expected
    assert {rows for _, _, rows in evaluated} == {200}
    assert trained == [steps]


def test_the_live_held_out_panel_draws_the_screens_as_open_points_apart_from_the_whole_split():
    from ortnb import charts

    records = [{"kind": "event", "event": "screen", "step": 8, "metric": "accuracy", "value": 0.62},
               {"kind": "event", "event": "screen", "step": 16, "metric": "accuracy", "value": 0.785},
               {"kind": "event", "event": "eval", "step": 16, "metric": "accuracy", "accuracy": 0.791,
                "eval_loss": 0.45}]
    series = charts.eval_series(records)
    assert series["eval_metric:screen"] == ([8, 16], [pytest.approx(62.0), pytest.approx(78.5)])
    assert series["eval_metric"] == ([16], [pytest.approx(79.1)])
    assert charts.eval_series(records[:1])["eval_metric"] == ([], [])  # screens before any whole evaluation
    assert charts.eval_metric_of(records[:1]) == "accuracy"
    chart = charts.LiveChart()
    chart.add_run("r", "tiny-bert")
    new, _ = chart.updates("r", records, engine="pytorch")
    [screen] = [t for t in new if t["name"].endswith(" screen")]
    assert (screen["mode"], screen["marker"]["symbol"], (screen["row"], screen["col"])) == (
        "markers", "circle-open", charts.EVAL_PANEL[2:])
    figure = charts.live_figure()  # the figure takes it (a trace's own mode and marker over the defaults)
    charts.apply_updates(figure, new, [])
    [drawn] = [t for t in figure.data if t.name.endswith(" screen")]
    assert (drawn.mode, drawn.marker.symbol, list(drawn.x), (drawn.xaxis, drawn.yaxis)) == (
        "markers", "circle-open", [8, 16], ("x5", "y5"))
