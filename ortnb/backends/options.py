"""The ORT engine's options and their checks: one definition for ORTTrainingArguments and ``ort_model``.

The two entry points spell the options differently (``ort_fallback=`` on the arguments, ``fallback=`` on
``ort_model``), so every check takes the names to use in its messages.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Callable

import torch


class OrtFallback(str, Enum):
    ERROR = "error"  # ORT cannot run the model: raise
    ALLOW = "allow"  # ORT cannot run the model: run PyTorch and record why in the engine report


ORT_LOG_LEVELS = ("VERBOSE", "INFO", "WARNING", "ERROR", "FATAL")
ORT_OPSETS = range(14, 18)  # ORTModule 1.19.2 exports opset 17 by default and supports back to 14
MEMORY_OPTIMIZER_LEVELS = (0, 1, 2)

# What a user can do when ORT cannot train the model and fallback="error" forbids PyTorch: said in each
# entry point's own words.
TRAINER_WAY_OUT = ("ort_fallback='error' forbids running PyTorch instead. Use backend='eager', or "
                   "ort_fallback='allow' to run PyTorch and record it in the engine report.")
ORT_MODEL_WAY_OUT = ("fallback='error' forbids running PyTorch instead. Train this model without ort_model, or pass "
                     "fallback='allow' to run PyTorch and record it in ortnb.engine_report(model).")


@dataclass
class OrtOptions:
    fallback: str = "error"
    """error: fail loudly if ONNX Runtime cannot run the model; allow: run PyTorch instead and record it."""
    log_level: str = "WARNING"
    """ORTModule's log level: VERBOSE, INFO, WARNING, ERROR or FATAL."""
    save_onnx_dir: str | None = None
    """Dump ORTModule's ONNX graphs (exported, pre-gradient, optimized, training) into this folder."""
    onnx_prefix: str | None = None
    """File name prefix of the dumped graphs; defaults to the model class name."""
    memory_optimizer_level: int = 0
    """ORT memory optimizer: 0 off, 1 recompute whole layers, 2 also recompute compromised subgraphs."""
    opset: int = 17
    """ONNX opset of ORTModule's export (14 to 17)."""
    loss_fn: Callable[[Any, dict], torch.Tensor] | None = None
    """Puts the loss inside the ONNX graph (use_module_with_loss): called with the outputs and the inputs."""
    way_out: str = TRAINER_WAY_OUT
    """The end of the error when ORT cannot train the model and fallback is error."""

    def same_engine_as(self, other: "OrtOptions") -> bool:
        """Whether ``other`` would build the same ORT engine (the way out is only words)."""
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.name != "way_out")


# Field names as ORTTrainingArguments spells them; ort_model uses the option names themselves.
TRAINER_NAMES = {"fallback": "ort_fallback", "log_level": "onnx_log_level",
                 "memory_optimizer_level": "ort_memory_optimizer_level", "opset": "onnx_opset"}


def option_problems(fallback, log_level, memory_optimizer_level, opset, names: dict[str, str] | None = None
                    ) -> list[str]:
    """Every problem with these option values, each naming the option (as ``names`` spells it) and the choices."""
    name = {key: key for key in TRAINER_NAMES} | (names or {})
    problems = []
    if getattr(fallback, "value", fallback) not in {member.value for member in OrtFallback}:
        problems.append(f"Unknown {name['fallback']}: {fallback!r}. Choose between "
                        f"{', '.join(member.value for member in OrtFallback)}.")
    if log_level not in ORT_LOG_LEVELS:
        problems.append(f"{name['log_level']}={log_level!r} is unknown. Choose between {', '.join(ORT_LOG_LEVELS)}.")
    if memory_optimizer_level not in MEMORY_OPTIMIZER_LEVELS:
        problems.append(f"{name['memory_optimizer_level']}={memory_optimizer_level!r} is unknown. "
                        "Choose 0 (off), 1 (layer-wise recompute) or 2 (layer-wise recompute with compromise).")
    if opset not in ORT_OPSETS:
        problems.append(f"{name['opset']}={opset!r} is outside what ORTModule supports. Choose 14 to 17.")
    return problems
