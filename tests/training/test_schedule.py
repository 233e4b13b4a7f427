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
