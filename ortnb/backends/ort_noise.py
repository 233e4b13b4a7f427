"""What ONNX Runtime training prints that tells a user nothing, silenced where it starts.

Only these, each for a stated reason; every other warning and log line still shows:
- "Fallback to PyTorch due to exception ..." with ORT's whole traceback (60 lines for a failed export)
  when ``ort_fallback="allow"``: the engine logs one line instead and keeps the full text in the engine
  report's ``fallback_detail``.
- "User Module's attribute name train/eval/to/... collides with ORTModule's attribute name": ORTModule
  lists every method a transformers model overrides that ORTModule also defines. ortnb keeps the user's
  model object and calls those methods on it, never on ORTModule, so the collision cannot bite.
- ORTModule's 20-line "is accelerating your model" banner at the default log level: ortnb's engine
  report carries the same facts (engine, providers, initialisation time per phase). With
  ``onnx_log_level="INFO"`` or lower it shows as before.
- "DeepSpeed import error ..." from ORT's ZeRO-3 offload hook: it is used for ZeRO-3 only, which ortnb
  refuses with the ORT backend.
- transformers' FutureWarning about ``is_gradient_checkpointing``, raised because ORTModule reads every
  attribute of the model while it wraps it, not because of anything the user wrote.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

COLLISION = "collides with ORTModule's attribute name"
BANNER = "is accelerating your model"
FALLBACK = "Fallback to PyTorch due to exception"


class DropOrtNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        if COLLISION in text or text.startswith(FALLBACK):
            return False
        if BANNER in text:
            return logging.getLogger(record.name).getEffectiveLevel() < logging.WARNING
        return True


_FILTER = DropOrtNoise()


def quiet_ortmodule_logger(name: str | None = None) -> None:
    """Put the filter on ORTModule's logger before ORTModule creates and uses it (it can fall back while it
    initialises). ORT names its logger ``orttraining`` or ``orttraining.rank-N``; filters on a logger do
    not reach its children, so the exact name is needed; ``name`` adds one ORTModule reports itself."""
    from onnxruntime.training.ortmodule._utils import get_rank, get_world_size

    names = ["orttraining" if get_world_size() <= 1 else f"orttraining.rank-{get_rank()}"] + ([name] if name else [])
    for logger_name in names:
        logger = logging.getLogger(logger_name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def ignore_deepspeed_hook_warning() -> None:
    warnings.filterwarnings("ignore", message="DeepSpeed import error", category=UserWarning,
                            module=r"onnxruntime\.training\.utils\.hooks\._zero_offload_subscriber")


@contextlib.contextmanager
def wrapping_the_model():
    """Around ``ORTModule(model)``: its attribute scan trips transformers' deprecation warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        yield
