"""Trainer runs in worker processes: launching and supervising them. The run folder they write and every reader
of it (layout, stream, status, liveness, stop) is ``ortnb.runs``, below this package; ``ortnb.attach``
(attach_run.py) opens a run folder of any kind."""

from ..runs.run import Run
from .launch import launch

__all__ = ["Run", "launch"]
