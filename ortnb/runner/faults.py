"""Deliberate faults for testing how runs fail (set ORTNB_FAULT in the worker's environment).

    raise:3      an exception at the end of step 3
    nan:3        a weight set to NaN after step 3, so the next loss is NaN
    slow:0.5     every step takes at least 0.5 s longer (to stop a run mid-way in tests)
Several faults are separated by commas. Read only at the worker's entry point.
"""

from __future__ import annotations

import time

import torch
from transformers import TrainerCallback


class InjectedFault(RuntimeError):
    pass


class FaultCallback(TrainerCallback):
    def __init__(self, spec: str):
        self.faults = [(kind, float(value)) for kind, _, value in (item.partition(":") for item in spec.split(","))]

    def on_step_end(self, args, state, control, model=None, **kwargs):
        for kind, value in self.faults:
            if kind == "slow":
                time.sleep(value)
            elif kind == "raise" and state.global_step == int(value):
                raise InjectedFault(f"injected fault at step {state.global_step}")
            elif kind == "nan" and state.global_step == int(value):
                with torch.no_grad():
                    next(model.parameters()).fill_(float("nan"))
