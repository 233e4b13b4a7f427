"""lr_schedule='wsd': warmup-stable-decay with the decay started near the target (training/schedule.py), on exact
values, on a real LambdaLR, and in a real run's recorded learning rates."""

from __future__ import annotations

import pytest

from ortnb.config import RunConfig
from ortnb.training import schedule
from ortnb.training.schedule import WsdSchedule, rate_factor
from ortnb.validation import validate

from .._helpers import tiny


def test_the_rate_rises_holds_and_decays_to_a_tenth_over_the_last_fifth():
    assert [rate_factor(step, warmup=2, decay_from=6, decay=4) for step in range(11)] == pytest.approx(
        [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 0.775, 0.55, 0.325, 0.1, 0.1])
    plan = WsdSchedule(total=50)
    assert (plan.decay, plan.decay_from) == (10, 40)
    assert [plan(step) for step in (0, 39, 40, 44, 49, 60)] == pytest.approx([1.0, 1.0, 0.91, 0.55, 0.1, 0.1])
    assert "from step 40 or from the first evaluation within 0.02 of the target" in plan.rule()


def test_an_evaluation_near_the_target_starts_the_decay_once():
    plan = WsdSchedule(total=100)
    assert plan.start_decay(30) and plan.decay_from == 30 and plan.started_early_at == 30
    assert not plan.start_decay(35) and plan.decay_from == 30  # once
    assert plan(30 + 19) == pytest.approx(0.1) and plan(29) == 1.0 and plan(30) == pytest.approx(0.955)
    late = WsdSchedule(total=100)
    assert not late.start_decay(90) and late.decay_from == 80  # already decaying: nothing moves
    assert schedule.near_target(0.785, 0.80) and not schedule.near_target(0.775, 0.80)
    assert schedule.near_target(3.01, 3.0, rising=False) and not schedule.near_target(3.05, 3.0, rising=False)
    assert not schedule.near_target(None, 0.8) and not schedule.near_target(0.9, None)


def test_trainers_lambdalr_follows_the_schedule_through_accelerates_wrapper():
    import torch
    from accelerate.scheduler import AcceleratedScheduler
    from transformers import get_scheduler

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    linear = get_scheduler("linear", optimizer, num_warmup_steps=0, num_training_steps=10)
    schedule.install(AcceleratedScheduler(linear, optimizer, step_with_optimizer=False), WsdSchedule(total=10))
    rates = []
    for _ in range(10):
        optimizer.step()
        linear.step()
        rates.append(optimizer.param_groups[0]["lr"])
    assert rates == pytest.approx([1.0] * 7 + [0.55, 0.1, 0.1])  # linear would be 0.9, 0.8, ... 0.0
    with pytest.raises(TypeError, match="needs Trainer's LambdaLR"):
        schedule.install(object(), WsdSchedule(total=10))


def test_the_schedule_is_a_checked_setting_in_the_label():
    assert RunConfig(backend="eager", lr_schedule="wsd").label == "eager + AdamW + WSD"
    assert RunConfig(backend="eager").label == "eager + AdamW"
    [problem] = [p for p in validate(RunConfig(lr_schedule="cosine")) if p.field == "lr_schedule"]
    assert "unknown schedule 'cosine'. Choose linear" in problem.message
    assert RunConfig.from_json(RunConfig(lr_schedule="wsd").to_json()).lr_schedule == "wsd"


@pytest.mark.slow
def test_a_wsd_run_records_the_rate_it_trained_with(tmp_path):
    import ortnb

    run = ortnb.launch(tiny(tmp_path, backend="eager", max_steps=10, lr_schedule="wsd", learning_rate=1e-4,
                            evaluate=False))
    assert run.wait(timeout=300) == "completed", run.error
    rates = run.metrics["learning_rate"].tolist()
    # Trainer logs the rate a step used: 8 steps at the peak, then the decay over the last 2
    assert rates == pytest.approx([1e-4 * WsdSchedule(10)(step) for step in range(10)], rel=1e-6)
    # The stream says where the decay began and why; the Live tab's learning-rate panel marks it there
    from ortnb import charts

    assert charts.schedule_decay(run.records()) == (9, "planned, the last 20% of the run")
    assert rates[8] < rates[7] == 1e-4  # step 9 is the first at a lower rate


def test_an_evaluation_near_the_target_announces_the_earlier_decay_on_the_stream():
    from types import SimpleNamespace

    heard = []
    writer = SimpleNamespace(event=lambda name, **data: heard.append((name, data)))
    plan = WsdSchedule(total=100)
    callback = schedule.decay_near_target(plan, "accuracy", 0.80, writer=writer)
    callback.on_evaluate(None, SimpleNamespace(global_step=30), None, metrics={"eval_accuracy": 0.70})
    assert heard == []  # not near: nothing moves, nothing said
    callback.on_evaluate(None, SimpleNamespace(global_step=40), None, metrics={"eval_accuracy": 0.79})
    callback.on_evaluate(None, SimpleNamespace(global_step=50), None, metrics={"eval_accuracy": 0.81})  # once
    assert heard == [("schedule", {"rule": plan.rule(), "decay_step": 41,
                                   "reason": "an evaluation within 0.02 of the target"})]


def test_the_live_grid_draws_the_rate_each_step_trained_at_and_marks_where_the_decay_began():
    from ortnb import charts

    records = [{"kind": "step", "step": n, "samples_per_s": 10.0, "loss": 1.0, "learning_rate": rate}
               for n, rate in ((1, 1e-4), (2, 1e-4), (3, 5.5e-5))]
    records.insert(0, {"kind": "event", "event": "schedule", "decay_step": 5, "reason": "planned, the last 20% "
                                                                                         "of the run"})
    records.append({"kind": "event", "event": "schedule", "decay_step": 3, "reason": "an evaluation within 0.02 "
                                                                                     "of the target"})
    assert charts.step_series(records)["learning_rate"] == ([1, 2, 3], [1e-4, 1e-4, 5.5e-5])
    assert charts.schedule_decay(records) == (3, "an evaluation within 0.02 of the target")  # the latest
    assert charts.schedule_decay(records[1:-1]) is None  # linear: no schedule event
    layout = charts.live_layout(empty=False, decay=charts.schedule_decay(records))
    [line] = [s for s in layout["shapes"] if s["name"] == "decay"]
    [label] = [a for a in layout["annotations"] if a["name"] == "decay"]
    assert (line["xref"], line["x0"], line["x1"]) == ("x6", 2.5, 2.5)
    assert label["text"] == "decay from step 3: an evaluation within 0.02 of the target"
    assert not [s for s in charts.live_layout(empty=True, decay=(3, "x"))["shapes"] if s["name"] == "decay"]
    figure = charts.live_figure()
    titles = [a.text for a in charts.subplot_titles(figure)]
    assert titles[-1] == "learning rate" and figure.layout.yaxis6.tickformat == ".1e"
    chart = charts.LiveChart()
    chart.add_run("a", "eager + AdamW + WSD")
    new, _ = chart.updates("a", records, "pytorch")
    [rate] = [t for t in new if (t["row"], t["col"]) == (3, 2)]
    assert rate["y"] == [1e-4, 1e-4, 5.5e-5]
