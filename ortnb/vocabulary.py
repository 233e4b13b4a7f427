"""The closed vocabularies of ortnb's settings, defined once: what a task, a backend, an optimizer, a precision and
a padding may be, and how a yes/no setting is written as text. Standard library only, and no ortnb import: every
layer may read them (data/, models/ and the run-folder protocol included).

Each vocabulary is a ``Choice``: a str enum whose members are their text everywhere a string was (equal to it,
hashed as it, and printed, formatted, repr'd and written to JSON as it), so ``RunConfig(task="causal-lm").task``
is ``Task.CAUSAL_LM`` and still reads ``causal-lm`` in config.json, messages and tables.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, get_args


class Choice(str, Enum):
    """A closed vocabulary of text values. A member is its text everywhere a string was: it equals and hashes as
    its value, and str(), format(), repr() and JSON give the value (repr too, so a RunConfig prints as it did)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(member.value for member in cls)


class Task(Choice):
    SEQUENCE_CLASSIFICATION = "sequence-classification"
    CAUSAL_LM = "causal-lm"


class Backend(Choice):
    EAGER = "eager"
    ORT = "ort"
    COMPILE = "compile"


class Optimizer(Choice):
    ADAMW_TORCH = "adamw_torch"
    ADAMW_TORCH_FUSED = "adamw_torch_fused"
    ADAMW_ORT_FUSED = "adamw_ort_fused"


class Precision(Choice):
    NO = "no"
    BF16 = "bf16"
    FP16 = "fp16"


class Schedule(Choice):
    """How the learning rate moves over a run (training/schedule.py)."""

    LINEAR = "linear"  # Trainer's: down from the peak over every planned step
    WSD = "wsd"  # warmup-stable-decay, the decay started near the target


Padding = Literal["longest", "max_length"]
# What an evaluation is judged by: accuracy and macro-F1 (classification), perplexity (a causal LM), the eval loss
# (either); evaluation.py says which task reads which, and how each compares
Metric = Literal["accuracy", "f1", "perplexity", "loss"]
METRICS = get_args(Metric)

TRUE, FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")  # a yes/no setting's values as text
