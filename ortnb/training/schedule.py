"""A learning-rate schedule sized to the run, not to the epoch: warmup-stable-decay with the decay started when an
evaluation comes near the target.

Trainer's default decays the rate linearly over every planned step, so a run that reaches its target early crosses
it at 50-65% of the peak rate, never having had the low-rate steps that settle a model. Warmup-stable-decay (WSD;
transformers' ``warmup_stable_decay``) holds the peak and decays only at the end; here the end is moved forward when
the run is near its goal:

- warmup: the rate rises linearly to its peak over ``warmup`` steps;
- stable: it stays at the peak;
- decay: it falls linearly to ``MIN_RATIO`` of the peak over ``decay`` steps, starting ``decay`` steps before the
  planned end, or at the first evaluation (or screen: runner/screen.py) within ``NEAR`` of the target (for a metric
  that rises: at or above target - NEAR), whichever comes first.

``rate_factor`` is pure; ``WsdSchedule`` holds the one thing that changes (where the decay starts) for a LambdaLR,
and ``DecayNearTarget`` is the TrainerCallback that moves it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..evaluation import NEAR, within  # NEAR: how close to the target an evaluation starts the decay

MIN_RATIO = 0.1  # the rate at the end of the decay, as a share of the peak
DECAY_SHARE = 0.2  # the decay's length, as a share of the planned steps


def rate_factor(step: int, warmup: int, decay_from: int, decay: int) -> float:
    """The share of the peak rate at optimizer step ``step`` (0-based, as LambdaLR counts) (pure)."""
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    if step < decay_from:
        return 1.0
    done = min(1.0, (step - decay_from + 1) / max(1, decay))  # the decay's last step trains at MIN_RATIO
    return 1.0 - (1.0 - MIN_RATIO) * done


def near_target(value: float | None, target: float | None, rising: bool = True) -> bool:
    """Whether an evaluation's metric is within NEAR of the target (pure); a falling metric (loss, perplexity)
    is near at or below target + NEAR."""
    return within(value, target, rising, NEAR)


@dataclass
class WsdSchedule:
    """The rate's shape for one run of ``total`` planned steps; ``decay_from`` moves when the target is near."""

    total: int
    warmup: int = 0

    def __post_init__(self):
        self.decay = max(1, round(self.total * DECAY_SHARE))
        self.decay_from = max(self.warmup, self.total - self.decay)
        self.started_early_at: int | None = None

    def __call__(self, step: int) -> float:
        return rate_factor(step, self.warmup, self.decay_from, self.decay)

    def start_decay(self, step: int) -> bool:
        """Begin the decay at ``step`` if it has not begun; returns whether it moved."""
        if step >= self.decay_from or self.started_early_at is not None:
            return False
        self.decay_from, self.started_early_at = max(step, self.warmup), step
        return True

    def rule(self) -> str:
        """The rule, in words, for the engine report and the Live tab."""
        return (f"warmup-stable-decay: peak after {self.warmup} steps, held, then down to {MIN_RATIO:g}x over "
                f"{self.decay} steps from step {self.total - self.decay} or from the first evaluation within {NEAR:g} "
                "of the target")


def install(lr_scheduler, schedule: WsdSchedule) -> None:
    """Make Trainer's LambdaLR follow ``schedule`` (its lambdas replaced: the optimizer and its state are Trainer's;
    accelerate's AcceleratedScheduler is looked through)."""
    inner = lr_scheduler
    while not hasattr(inner, "lr_lambdas") and hasattr(inner, "scheduler"):
        inner = inner.scheduler
    if not hasattr(inner, "lr_lambdas"):
        raise TypeError(f"lr_schedule='wsd' needs Trainer's LambdaLR, got {type(inner).__name__}")
    inner.lr_lambdas = [schedule for _ in inner.lr_lambdas]


PLANNED = f"planned, the last {DECAY_SHARE:.0%} of the run"
NEAR_TARGET = f"an evaluation within {NEAR:g} of the target"
NEAR_SCREEN = f"a screen of held-out rows within {NEAR:g} of the target"


def decay_near_target(schedule: WsdSchedule, metric: str, target: float | None, rising: bool = True, writer=None,
                      screen=None):
    """A TrainerCallback that installs ``schedule`` when training begins and starts its decay at the first
    evaluation near the target. ``writer`` (the run's stream) hears where the decay begins and why, as a
    ``schedule`` event with ``decay_step``, the first step trained at a lower rate (LambdaLR's step s is the
    rate of training step s + 1): the Live tab marks it on the learning-rate panel. ``screen`` (runner/screen.py's
    Screen of the run) corrects a screen's figure by how far it last read from the whole split."""
    from transformers import TrainerCallback

    from ..evaluation import SCREEN, calibrated, is_screen, trainer_value

    def announce(reason: str) -> None:
        if writer is not None:
            writer.event("schedule", rule=schedule.rule(), decay_step=schedule.decay_from + 1, reason=reason)

    class DecayNearTarget(TrainerCallback):
        def on_train_begin(self, args, state, control, lr_scheduler=None, **kwargs):
            if lr_scheduler is not None:
                install(lr_scheduler, schedule)
                announce(PLANNED)

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            metrics = metrics or {}
            screened = is_screen(metrics)  # runner/screen.py: a subset's figures
            value = trainer_value(metrics, metric, SCREEN if screened else "eval")
            if screened and screen is not None:  # a screen reads as the whole split would (evaluation.calibrated)
                value = calibrated(value, screen.offset)
            if near_target(value, target, rising) and schedule.start_decay(state.global_step):
                announce(NEAR_SCREEN if screened else NEAR_TARGET)

    return DecayNearTarget()
