"""The learning rate a tuned winner trains with. tune() changes the global batch (batch_size x num_processes),
and a rate that suited one batch is wrong for another: the time-to-accuracy benchmark lost 1.5 points of
accuracy when the winner (batch 32) kept the base's rate (set for 16). The rule applied is square-root
scaling (Hoffer et al. 2017; Malladi et al. 2022 derive it for Adam): the rate grows with the square root of
the global batch, starting from the rate the user chose for their own batch. Pure."""

from __future__ import annotations

import math

def global_batch(config) -> int:
    """Samples per optimizer step across all processes."""
    return int(config.batch_size) * max(1, int(config.num_processes or 1))


def scaled(learning_rate: float, from_batch: int, to_batch: int) -> float:
    """The rate for ``to_batch``, to three significant figures: what the sentence says is what the form holds and
    the run uses (0.0001414213562373095 in the form's field read as noise, not a choice)."""
    return float(f"{learning_rate * math.sqrt(to_batch / from_batch):.3g}")


def follow_batch(source, target):
    """``target`` with ``source``'s learning rate scaled to ``target``'s global batch, and the sentence that
    says so (None where the global batch is the same and the rate stays)."""
    before, after = global_batch(source), global_batch(target)
    if before == after:
        return target.replace(learning_rate=source.learning_rate), None
    rate = scaled(source.learning_rate, before, after)
    return target.replace(learning_rate=rate), describe(source.learning_rate, rate, before, after)


def describe(before_rate: float, after_rate: float, before_batch: int, after_batch: int) -> str:
    return (f"learning rate {before_rate:.3g} -> {after_rate:.3g}: the global batch went from {before_batch} to "
            f"{after_batch}, and the rate follows its square root")
